"""`pinnace up`'s VPA storage flags, as upstream's recommender names them (--storage,
--history-length, --history-resolution) with the `--vpa-` prefix."""

from __future__ import annotations

import pytest

from pinnace.cli import vpa
from pinnace.cli.main import build_parser


def test_the_storage_flags_set_the_recommenders_options() -> None:
    args = build_parser().parse_args(
        ["up", "--vpa-storage=prometheus", "--vpa-history-length=2h", "--vpa-history-resolution=1m"]
    )
    options = vpa.options(args)
    assert options is not None
    assert (options.storage, options.history_length, options.history_resolution) == (
        "prometheus",
        7200.0,
        60.0,
    )
    defaults = vpa.options(build_parser().parse_args(["up"]))
    assert defaults is not None
    assert (defaults.storage, defaults.history_length, defaults.history_resolution) == (
        "checkpoint",
        8 * 24 * 3600.0,
        3600.0,
    )


def test_an_unknown_storage_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--vpa-storage=etcd"])
    assert "argument --vpa-storage: invalid choice: 'etcd'" in capsys.readouterr().err
