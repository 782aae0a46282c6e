"""`pinnace apiserver`: the API server's flags, `pinnace up`'s, and none of the components it
leaves to processes of their own (its serving is tested with them, in
tests/http/test_component_processes.py and tests/http/test_up_etcd.py)."""

from __future__ import annotations

import pytest

from pinnace.cli.main import main


def test_help_lists_the_api_servers_flags_and_not_the_components(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["apiserver", "--help"])
    assert exit.value.code == 0
    usage = capsys.readouterr().out
    assert usage.startswith("usage: pinnace apiserver ")
    for flag in (
        "--etcd-servers",
        "--data-dir",
        "--in-memory",
        "--tls",
        "--authorization-mode",
        "--service-account-issuer",
        "--service-cluster-ip-range",
        "--compaction-interval",
        "--event-ttl",
        "--port",
    ):
        assert f"{flag} " in usage
    for flag in ("--nodes", "--no-scheduler", "--no-controllers", "--node-monitor-period"):
        assert flag not in usage


def test_a_flag_of_pinnace_up_only_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["apiserver", "--in-memory", "--nodes", "3"])
    assert exit.value.code == 2
    error = capsys.readouterr().err.splitlines()
    assert error[-1] == "pinnace apiserver: error: unrecognized arguments: --nodes 3"
    assert error[0].startswith("usage: pinnace apiserver [-h] ")


def test_a_bad_value_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["apiserver", "--port", "https"])
    assert exit.value.code == 2
    error = capsys.readouterr().err.splitlines()
    assert error[-1] == "pinnace apiserver: error: argument --port: invalid int value: 'https'"


def test_a_start_that_cannot_work_says_so_as_pinnace_apiserver(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["apiserver", "--in-memory", "--etcd-servers", "http://127.0.0.1:1"]) == 1
    assert capsys.readouterr().err == (
        "pinnace apiserver: --etcd-servers and --in-memory exclude each other\n"
    )
