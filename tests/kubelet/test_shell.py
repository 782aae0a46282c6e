"""The sh -c language of simulated containers: what scripts print, with which exit code and
when, including the endless counter loop of the logging documentation."""

from __future__ import annotations

import calendar
import dataclasses
import itertools
import math
import time

import pytest
from tests.kubelet.conftest import Node, pod

from pinnace.api import catalog
from pinnace.kubelet.commands import CommandRun
from pinnace.kubelet.shell import ShellContext, command_run, script_run
from pinnace.kubelet.volumes import Filesystem, WritableFiles

FILES = Filesystem(
    [("/", WritableFiles()), ("/etc/config", {"SPECIAL_LEVEL": "very", "keys": "a=1\nb=2\n"})]
)
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
        ("ls; pwd", ["etc", "/"], 0),
        (
            "ls -1 /etc/config /etc/config/keys /nowhere /etc",
            [
                "ls: /nowhere: No such file or directory",
                "/etc/config/keys",
                "",
                "/etc:",
                "config",
                "",
                "/etc/config:",
                "SPECIAL_LEVEL",
                "keys",
            ],
            1,
        ),
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
        "case x in x) echo;; esac",
        "echo a > /etc/config/keys &",
        "while true; do echo busy; done",
        "while true; do date; sleep 0.0000001; done",  # no time at all on the clock
        "python3 worker.py",
    ],
)
def test_anything_else_is_not_understood(script: str) -> None:
    assert script_run(["sh", "-c", script], CONTEXT) is None


@pytest.mark.parametrize(
    ("script", "lines", "code"),
    [
        (
            'arr=(a "b c" d); echo ${#arr[@]} ${arr[1]} ${arr[-1]}; for x in "${arr[@]}"; '
            "do echo [$x]; done",
            ["3 b c d", "[a]", "[b c]", "[d]"],
            0,
        ),
        ("items=(foo bar baz); i=2; echo ${items[$i]} ${items[i-1]} ${#NAME}", ["baz bar 5"], 0),
        (
            "for n in 1 2 3; do if [ $n -eq 1 ]; then echo one; elif test $n = 2; then echo two;"
            " else echo many; fi; done",
            ["one", "two", "many"],
            0,
        ),
        (
            "[ -f /etc/config/keys ] && [ -d /etc/config ] && [ ! -e /nope ] && echo files",
            ["files"],
            0,
        ),
        ('[ -z "" ] && [ -n "$NAME" ]; echo $?; [ 2 -gt 3 ]', ["0"], 1),
        ("echo hello | rev; seq 3 | wc -l; seq 2 2 6", ["olleh", "3", "2", "4", "6"], 0),
        ("cat /etc/config/keys | head -n 1 | rev", ["1=a"], 0),
        ("expr 6 \\* 7; expr 3 - 3", ["42", "0"], 1),
        (
            "echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f; wc -l < /tmp/f",
            ["one", "two", "2"],
            0,
        ),
        ("tail -n 1 /etc/config/keys; tail -n+2 /etc/config/keys", ["b=2", "b=2"], 0),
        ("cat /nope 2>/dev/null || echo gone; cat /nope 2>&1 | wc -l", ["gone", "1"], 0),
        (
            "echo x > /etc/config/new",
            ["sh: can't create /etc/config/new: Read-only file system"],
            1,
        ),
        ("! false && hostname; printenv NAME | rev", ["demo", "dlrow"], 0),
        ("echo out > /dev/stdout; echo err >> /proc/1/fd/2 | wc -l", ["out", "err", "0"], 0),
        ("sh; echo after; sh -c 'echo inner; exit 4'; echo $?", ["after", "inner", "4"], 0),
        (
            "touch /tmp/healthy; cat /tmp/healthy && echo empty; rm /tmp/healthy; cat /tmp/healthy",
            ["empty", "cat: can't open '/tmp/healthy': No such file or directory"],
            1,
        ),
        (
            "rm /tmp/none; rm -f /tmp/none; echo $?",
            ["rm: can't remove '/tmp/none': No such file or directory", "0"],
            0,
        ),
        (
            "mkdir -p /data/x && echo made > /data/x/f; ls /data; mkdir /data; rm /data; "
            "rm -rf /data; ls /data",
            [
                "x",
                "mkdir: can't create directory '/data': File exists",
                "rm: '/data' is a directory",
                "ls: /data: No such file or directory",
            ],
            1,
        ),
        (
            "touch /etc/config/keys; rm /etc/config/keys",
            [
                "touch: /etc/config/keys: Read-only file system",
                "rm: can't remove '/etc/config/keys': Read-only file system",
            ],
            1,
        ),
    ],
)
def test_the_documentations_shell_idioms(script: str, lines: list[str], code: int) -> None:
    files = Filesystem([*FILES.mounts])
    context = ShellContext(CONTEXT.environment, files, lambda: 0.0, "demo")
    run = script_run(["/bin/sh", "-c", script], context)
    assert run is not None
    assert ([line for _, line in run.lines], run.run.exit_code) == (lines, code)


def test_a_loop_on_sleep_is_endless_like_the_hpa_load_generator() -> None:
    def web(url: str) -> tuple[str, str]:
        return ("OK!", "") if url == "http://php-apache" else ("", "bad address")

    context = dataclasses.replace(CONTEXT, web=web)
    script = "while sleep 0.01; do wget -q -O- http://php-apache; done"
    run = script_run(["/bin/sh", "-c", script], context)
    assert run is not None and run.run.seconds == math.inf
    stream = run.stream()
    assert stream is not None
    assert [stream.next_lines() for _ in range(2)] == [(0.01, ["OK!"]), (0.01, ["OK!"])]


def test_the_pi_job_prints_pi_after_a_few_seconds() -> None:
    run = script_run(["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"], CONTEXT)
    assert run is not None and run.run.exit_code == 0 and 1 <= run.run.seconds <= 10
    [(when, digits)] = run.lines
    assert when == 0 and digits.startswith("3.14159265358979") and len(digits) == 2001


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


def test_the_liveness_examples_file_is_there_until_the_script_removes_it() -> None:
    """The documentation's liveness-exec container: its file is created at the start, and its
    removal is due when the script gets past its sleep (the runtime applies it then)."""
    files = Filesystem([("/", WritableFiles())])
    context = ShellContext({}, files, lambda: 0.0, "liveness-exec")
    script = "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"
    run = script_run(["/bin/sh", "-c", script], context)
    assert run is not None and run.run.seconds == 630 and run.run.exit_code == 0
    assert files.read("/tmp/healthy") == ""
    [(at, remove)] = run.lines
    assert at == 30 and callable(remove)
    remove()
    assert files.read("/tmp/healthy") is None


SERVICES = catalog.kind("", "services")
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


COUNTER_TO_FILES = (
    'i=0; while true; do echo "$i: $(date)" >> /var/log/1.log; '
    'echo "$(date) INFO $i" >> /var/log/2.log; i=$((i+1)); sleep 1; done'
)


def test_sidecars_tail_the_files_a_container_appends_to_on_an_empty_dir(node: Node) -> None:
    body = pod("counter", node="node-1")
    mounts = [{"name": "varlog", "mountPath": "/var/log"}]
    body["spec"]["containers"] = [
        {
            "name": name,
            "image": "busybox:1.28",
            "args": ["/bin/sh", "-c", script],
            "volumeMounts": mounts,
        }
        for name, script in (
            ("count", COUNTER_TO_FILES),
            ("count-log-1", "tail -n+1 -F /var/log/1.log"),
            ("count-log-2", "tail -n+1 -F /var/log/2.log"),
        )
    ]
    body["spec"]["volumes"] = [{"name": "varlog", "emptyDir": {}}]
    node.create_pod(body)
    node.settle(6)
    worker = node.agent.workers[node.get_pod("counter")["metadata"]["uid"]]
    count, first, second = (
        worker.container_log(c, previous=False) for c in ("count", "count-log-1", "count-log-2")
    )
    assert count is not None and first is not None and second is not None
    assert count.log == []
    numbers = [line.split(":", 1)[0] for _, line in first.log]
    assert numbers[:5] == ["0", "1", "2", "3", "4"]
    for t, line in first.log:  # each line within tail's second of being written
        stamp = time.strptime(line.split(": ", 1)[1], "%a %b %d %H:%M:%S UTC %Y")
        assert 0 <= t - calendar.timegm(stamp) <= 1
    assert [line.rsplit(" ", 1)[1] for _, line in second.log][:5] == ["0", "1", "2", "3", "4"]
    assert " INFO " in second.log[0][1]


def test_wget_gets_the_page_of_a_ready_pod_behind_a_service(node: Node) -> None:
    web = pod("web", node="node-1")
    web["metadata"]["labels"] = {"app": "web"}
    node.create_pod(web)
    service = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    node.run(node.client.create(SERVICES, "default", service))
    node.settle(3)
    client = pod("client", node="node-1", restart_policy="Never")
    script = "wget -qO- web.default.svc.cluster.local | head -n 4 | tail -n 1; wget -qO- nowhere"
    client["spec"]["containers"][0].update(image="busybox", command=["sh", "-c", script])
    node.create_pod(client)
    node.settle(3)
    run = node.agent.workers[node.get_pod("client")["metadata"]["uid"]].container_log(
        "app", previous=False
    )
    assert run is not None
    assert [line for _, line in run.log] == [
        "<title>Welcome to nginx!</title>",
        "wget: bad address 'nowhere'",
    ]
    assert run.exit_code == 1
