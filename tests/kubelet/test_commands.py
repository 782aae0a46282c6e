"""Well-known commands behave as they would: how long they run, how they exit, what they
print."""

from __future__ import annotations

import math

import pytest
from tests.kubelet.conftest import Node, pod

from pinnace.kubelet.shell import command_run


@pytest.mark.parametrize(
    ("argv", "seconds", "exit_code", "output"),
    [
        (["sleep", "30"], 30, 0, []),
        (["sleep", "1m", "30"], 90, 0, []),
        (["sleep", "infinity"], math.inf, 0, []),
        (["sh", "-c", "exit 1"], 0, 1, []),
        (["/bin/sh", "-c", "echo hello; sleep 5"], 5, 0, ["hello"]),
        (["bash", "-c", "sleep 2 && exit 3"], 2, 3, []),
        (["sh", "-c", "false && sleep 9"], 0, 1, []),
        (["sh", "-c", "false || echo recovered"], 0, 0, ["recovered"]),
        (["echo", "hi", "there"], 0, 0, ["hi there"]),
        (["true"], 0, 0, []),
        (["false"], 0, 1, []),
    ],
)
def test_commands_it_understands(
    argv: list[str], seconds: float, exit_code: int, output: list[str]
) -> None:
    run = command_run(argv)
    assert run is not None
    assert (run.seconds, run.exit_code, run.output) == (seconds, exit_code, output)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["python3", "worker.py"],
        ["sh", "-c", "echo a | grep a"],
        ["sleep", "soon"],
        ["sh", "-c", "echo 'unterminated"],
    ],
)
def test_anything_else_is_not_understood(argv: list[str]) -> None:
    assert command_run(argv) is None


def test_a_pod_running_sh_exit_1_crash_loops(node: Node) -> None:
    body = pod("failing", node="node-1")
    body["spec"]["containers"][0]["command"] = ["sh", "-c", "echo starting; exit 1"]
    node.create_pod(body)
    node.settle(2)
    status = node.get_pod("failing")["status"]["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["exitCode"] == 1


def test_a_pod_running_sleep_completes_when_the_sleep_ends(node: Node) -> None:
    body = pod("nap", node="node-1", restart_policy="Never")
    body["spec"]["containers"][0]["command"] = ["sleep"]
    body["spec"]["containers"][0]["args"] = ["30"]
    node.create_pod(body)
    node.settle(29)
    assert node.get_pod("nap")["status"]["phase"] == "Running"
    node.settle(2)
    assert node.get_pod("nap")["status"]["phase"] == "Succeeded"
