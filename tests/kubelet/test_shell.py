"""The sh -c language of simulated containers: what scripts print, with which exit code and
when, including the endless counter loop of the logging documentation."""

from __future__ import annotations

import itertools
import math
import time

import pytest
from tests.kubelet.conftest import Node, pod

from pinnace.kubelet.commands import CommandRun
from pinnace.kubelet.shell import ShellContext, command_run, script_run
from pinnace.kubelet.volumes import Filesystem

FILES = Filesystem([("/etc/config", {"SPECIAL_LEVEL": "very", "keys": "a=1\nb=2\n"})])
CONTEXT = ShellContext({"NAME": "world", "SPACED": "a   b"}, FILES, lambda: 0.0, "demo")


def sh(script: str) -> tuple[list[str], int]:
    run = script_run(["/bin/sh", "-c", script], CONTEXT)
    assert run is not None
    return [line for _, line in run.lines], run.run.exit_code


@pytest.mark.parametrize(
    ("script", "lines", "code"),
    [
        ("echo \"hello $NAME\" ${NAME}! '$NAME'", ["hello world world! $NAME"], 0),
        ('echo $SPACED; echo "$SPACED"', ["a b", "a   b"], 0),
        ("echo -n one; echo two", ["onetwo"], 0),
        ("printenv NAME; printenv MISSING", ["world"], 1),
        ("cat /etc/config/keys /etc/config/SPECIAL_LEVEL", ["a=1", "b=2", "very"], 0),
        (
            "cat /etc/config/nope",
            ["cat: can't open '/etc/config/nope': No such file or directory"],
            1,
        ),
        ("ls /etc/config/", ["SPECIAL_LEVEL", "keys"], 0),
        ("ls /nowhere", ["ls: /nowhere: No such file or directory"], 1),
        (
            "echo /etc/config/* '/etc/config/*' /etc/nowhere/*",
            ["/etc/config/SPECIAL_LEVEL /etc/config/keys /etc/config/* /etc/nowhere/*"],
            0,
        ),
        ("false || echo $?; true && echo yes", ["1", "yes"], 0),
        ("i=1; i=$((i+1)); echo $((i * 10 / 3)) $((-7 % 3))", ["6 -1"], 0),
        ("for n in 1 2; do echo n=$n; done", ["n=1", "n=2"], 0),
        ('level=$(cat /etc/config/SPECIAL_LEVEL); echo "level: $level"', ["level: very"], 0),
        (
            "export GREETING=hi; env",
            [
                "HOSTNAME=demo",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "NAME=world",
                "SPACED=a   b",
                "HOME=/root",
                "GREETING=hi",
            ],
            0,
        ),
        ("echo bye; exit 3; echo never", ["bye"], 3),
        ("date; date +%s", ["Thu Jan  1 00:00:00 UTC 1970", "0"], 0),
    ],
)
def test_scripts_print_what_busybox_would(script: str, lines: list[str], code: int) -> None:
    assert sh(script) == (lines, code)


@pytest.mark.parametrize(
    "script",
    [
        "echo a | grep a",
        "if true; then echo; fi",
        "while true; do echo busy; done",
        "while true; do date; sleep 0.0000001; done",  # no time at all on the clock
        "nginx",
    ],
)
def test_anything_else_is_not_understood(script: str) -> None:
    assert script_run(["sh", "-c", script], CONTEXT) is None


def test_probes_and_hooks_do_not_guess_the_containers_files_or_environment() -> None:
    assert command_run(["cat", "/tmp/healthy"]) is None
    assert command_run(["sh", "-c", "printenv HOME"]) is None
    assert command_run(["sh", "-c", "echo ready; exit 2"]) == CommandRun(
        exit_code=2, output=["ready"]
    )


def test_lines_after_a_sleep_come_later_and_a_sleeping_loop_runs_silently() -> None:
    run = script_run(["sh", "-c", "echo hello; sleep 5; echo bye"], CONTEXT)
    assert run is not None and run.lines == [(0.0, "hello"), (5.0, "bye")]
    assert run.run.seconds == 5
    quiet = script_run(["sh", "-c", "while true; do sleep 5; done"], CONTEXT)
    assert quiet is not None and quiet.run.seconds == math.inf and quiet.stream() is None


COUNTER = 'i=0; while true; do echo "$i: $(date)"; i=$((i+1)); sleep 1; done'


def test_the_counter_example_prints_a_line_every_second(node: Node) -> None:
    body = pod("counter", node="node-1")
    body["spec"]["containers"][0].update(image="busybox:1.28", args=["/bin/sh", "-c", COUNTER])
    node.create_pod(body)
    node.settle(0.5)
    uid = node.get_pod("counter")["metadata"]["uid"]
    run = node.agent.workers[uid].container_log("app", previous=False)
    assert run is not None
    node.settle(4)
    lines = run.log[:5]
    assert [line.split(":", 1)[0] for _, line in lines] == ["0", "1", "2", "3", "4"]
    for t, line in lines:
        assert line.split(": ", 1)[1] == time.strftime("%a %b %e %H:%M:%S UTC %Y", time.gmtime(t))
    assert [round(b[0] - a[0], 6) for a, b in itertools.pairwise(lines)] == [1.0] * 4


def test_the_last_line_of_a_script_is_printed_before_it_exits(node: Node) -> None:
    body = pod("greeter", node="node-1", restart_policy="Never")
    body["spec"]["containers"][0]["command"] = ["sh", "-c", "echo hello; sleep 5; echo bye"]
    node.create_pod(body)
    node.settle(6)
    uid = node.get_pod("greeter")["metadata"]["uid"]
    run = node.agent.workers[uid].container_log("app", previous=False)
    assert run is not None and [line for _, line in run.log] == ["hello", "bye"]
    assert run.log[1][0] - run.log[0][0] == 5
    assert node.get_pod("greeter")["status"]["phase"] == "Succeeded"
