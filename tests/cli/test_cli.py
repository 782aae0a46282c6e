"""The `pinnace` command as a user runs it."""

import subprocess
import sys

import pinnace


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_help_lists_the_subcommands() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "usage: pinnace" in result.stdout
    assert "version" in result.stdout


def test_no_arguments_prints_help() -> None:
    result = run()
    assert result.returncode == 0
    assert "usage: pinnace" in result.stdout


def test_version_names_pinnace_and_the_kubernetes_reference() -> None:
    result = run("version")
    assert result.returncode == 0
    assert f"Pinnace {pinnace.__version__}" in result.stdout
    assert "Kubernetes reference: v1.32" in result.stdout


def test_unknown_subcommand_is_a_clear_error_without_traceback() -> None:
    result = run("frobnicate")
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
    assert "Traceback" not in result.stderr
