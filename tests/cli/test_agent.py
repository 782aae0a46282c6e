"""`pinnace agent`'s refusals before it starts anything."""

from __future__ import annotations

import pytest

from pinnace.cli.main import main


def test_a_name_prefix_that_makes_no_node_name_is_refused_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Not left to the API server, which would refuse the Node at every registration attempt.
    assert main(["agent", "--nodes", "1", "--name-prefix", "Bad_Name"]) == 1
    assert capsys.readouterr().err == (
        "pinnace agent: --name-prefix 'Bad_Name': node name 'Bad_Name-1': a lowercase RFC "
        "1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'example.com', regex used "
        "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n"
    )
    assert main(["agent", "--nodes", "1", "--name-prefix", "a" * 64]) == 1
    assert capsys.readouterr().err == (
        f"pinnace agent: --name-prefix '{'a' * 64}': not a label value (pinnace.dev/agent): "
        "must be no more than 63 characters\n"
    )


def test_an_unknown_flag_is_refused_with_the_commands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["agent", "--name-prefix", "east", "--nodes", "1", "--bogus", "x"])
    assert exit.value.code == 2
    error = capsys.readouterr().err.splitlines()
    assert error[0].startswith("usage: pinnace agent [-h] ")
    assert error[-1] == "pinnace agent: error: unrecognized arguments: --bogus x"
