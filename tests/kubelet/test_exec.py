"""Commands exec'd in a simulated container (`kubectl exec`), on the virtual clock: what they
print and when, their exit status, and an interactive shell on stdin with or without a tty."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator, Sequence

import pytest

from pinnace.api.streams import STDERR, STDOUT
from pinnace.clock import Clock, VirtualClock
from pinnace.kubelet.exec import Attached, run_attach, run_exec
from pinnace.kubelet.runtime import ContainerStatus, Ended
from pinnace.kubelet.shell import ShellContext
from pinnace.kubelet.volumes import Filesystem


class Terminal:
    """A session's streams: stdin given up front, what is written kept with the time."""

    def __init__(self, clock: Clock, stdin: Sequence[bytes] = ()) -> None:
        self.clock = clock
        self.stdin = list(stdin)
        self.written: list[tuple[float, int, bytes]] = []
        self.start = clock.now()

    async def read(self) -> bytes:
        return self.stdin.pop(0) if self.stdin else b""

    async def write(self, stream: int, data: bytes) -> None:
        self.written.append((self.clock.now() - self.start, stream, data))

    def text(self, stream: int = STDOUT) -> str:
        return b"".join(d for _, s, d in self.written if s == stream).decode()


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with VirtualClock() as clock:
        yield clock


def context() -> ShellContext:
    return ShellContext({"GREETING": "hello"}, Filesystem(), hostname="web-0")


def run(
    clock: VirtualClock, argv: list[str], stdin: Sequence[bytes] = (), tty: bool = False
) -> tuple[int, Terminal]:
    terminal = Terminal(clock, stdin)
    code = clock.run(run_exec(argv, context(), tty, terminal, clock))
    return code, terminal


def test_a_program_prints_on_stdout_and_exits_with_its_status(clock: VirtualClock) -> None:
    assert run(clock, ["printenv", "HOSTNAME"])[1].text() == "web-0\n"
    assert run(clock, ["false"])[0] == 1
    code, out = run(clock, ["sh", "-c", "echo $GREETING; exit 3"])
    assert (code, out.text()) == (3, "hello\n")


def test_an_unknown_program_is_not_found_as_busybox_sh_says(clock: VirtualClock) -> None:
    code, out = run(clock, ["sh", "-c", "frobnicate --now; echo after $?"])
    assert code == 0
    assert out.text(STDERR) == "sh: frobnicate: not found\n"
    assert out.text() == "after 127\n"
    assert run(clock, ["frobnicate"])[0] == 127


def test_output_comes_when_the_clock_says_it_is_printed(clock: VirtualClock) -> None:
    code, out = run(clock, ["sh", "-c", "echo a; sleep 2; echo b; sleep 1"])
    assert code == 0
    assert [(t, d) for t, _, d in out.written] == [(0, b"a\n"), (2, b"b\n")]
    assert clock.now() - out.start == 3


def test_an_endless_loop_prints_round_after_round_until_the_client_goes(
    clock: VirtualClock,
) -> None:
    terminal = Terminal(clock)
    loop = ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i; sleep 1; done"]
    with pytest.raises(TimeoutError):
        clock.run(asyncio.wait_for(run_exec(loop, context(), False, terminal, clock), 3.5))
    assert [(t, d) for t, _, d in terminal.written] == [
        (0, b"1\n"),
        (1, b"2\n"),
        (2, b"3\n"),
        (3, b"4\n"),
    ]


def test_sh_reads_its_commands_from_stdin_until_exit(clock: VirtualClock) -> None:
    code, out = run(clock, ["sh"], [b"X=1\necho $X $HOSTNAME\n", b"exit 4\necho never\n"])
    assert (code, out.text()) == (4, "1 web-0\n")
    # Without stdin, sh reads nothing and ends at once.
    code, out = run(clock, ["sh"])
    assert (code, out.written) == (0, [])


def test_cat_copies_stdin_to_stdout_until_it_ends(clock: VirtualClock) -> None:
    for argv in (["cat"], ["/bin/sh", "-c", "cat"], ["cat", "-"]):
        code, out = run(clock, argv, [b"one\n", b"two"])
        assert (code, out.text()) == (0, "one\ntwo")


def test_with_a_tty_a_script_does_not_wait_for_a_stdin_that_never_ends(
    clock: VirtualClock,
) -> None:
    # Without a tty it would read stdin to its end; a terminal's ends only when the user goes.
    code, out = run(clock, ["sh", "-c", "wc -l; echo done"], [b"typed\n"], tty=True)
    assert (code, out.text(), out.stdin) == (0, "0\r\ndone\r\n", [b"typed\n"])
    code, out = run(clock, ["sh", "-c", "wc -l; echo done"], [b"typed\n"])
    assert (code, out.text(), out.stdin) == (0, "1\ndone\n", [])


def test_output_redirected_to_stderr_comes_on_the_exec_stderr(clock: VirtualClock) -> None:
    code, out = run(clock, ["sh"], [b"echo one\necho two >&2\necho three 1>&2 2>/dev/null\n"])
    assert (code, out.text(), out.text(STDERR)) == (0, "one\n", "two\nthree\n")
    quiet = run(clock, ["sh", "-c", "echo gone 2>/dev/null >&2; echo kept 2>&1 >&2"])[1]
    assert (quiet.text(), quiet.text(STDERR)) == ("kept\n", "")


def test_uptime_prints_busybox_s_line_counting_from_the_nodes_start(
    clock: VirtualClock,
) -> None:
    now = 1_700_000_000.0  # 22:13:20 UTC
    ups = {now - 59: "0 min", now - 3 * 3600 - 300: " 3:05", now - 2 * 86400 - 60: "2 days, 1 min"}
    for booted, up in ups.items():
        shell = ShellContext(now=lambda: now, booted=booted)
        terminal = Terminal(clock)
        assert clock.run(run_exec(["uptime"], shell, False, terminal, clock)) == 0
        load = "0 users,  load average: 0.00, 0.00, 0.00"
        assert terminal.text() == f" 22:13:20 up {up},  {load}\n"


def test_gzip_compresses_stdin_to_binary_stdout_and_gunzip_undoes_it(clock: VirtualClock) -> None:
    code, out = run(clock, ["sh", "-c", 'echo -n "This is a test string" | gzip'])
    data = b"".join(d for _, s, d in out.written if s == STDOUT)
    assert code == 0 and gzip.decompress(data) == b"This is a test string"
    assert run(clock, ["sh", "-c", "echo hi | gzip | gunzip"])[1].text() == "hi\n"
    code, out = run(clock, ["sh", "-c", "echo hi | gunzip"])
    assert (code, out.text(STDERR)) == (1, "gzip: invalid magic\n")


def test_a_tty_echoes_what_is_typed_with_a_prompt_and_crlf(clock: VirtualClock) -> None:
    keys = [b"echo hx\x7fi\x1b[A\r", b"cat /nope\r", b"ab\x03", b"exit 2\r"]
    code, out = run(clock, ["sh"], keys, tty=True)
    assert code == 2
    assert out.text() == (
        "/ # echo hx\b \bi\r\nhi\r\n"
        "/ # cat /nope\r\ncat: can't open '/nope': No such file or directory\r\n"
        "/ # ab^C\r\n"
        "/ # exit 2\r\n"
    )
    assert out.text(STDERR) == ""  # one terminal


def test_attach_streams_the_lines_printed_from_then_on_until_the_container_exits(
    clock: VirtualClock,
) -> None:
    run = ContainerStatus(0, "app", "busybox", "", clock.now(), log=[(clock.now(), "before")])

    def later(line: str) -> None:
        run.print([(clock.now(), line)])

    clock.call_later(1.5, later, "one")
    clock.call_later(3.5, later, "two")
    clock.call_later(3.6, lambda: setattr(run, "ended", Ended(clock.now(), 0, "Completed")))
    terminal = Terminal(clock)
    attached = Attached(run, ["sh", "-c", "..."], context())
    assert clock.run(run_attach(attached, False, False, terminal, clock)) == 0
    assert [(t, d) for t, _, d in terminal.written] == [(2, b"one\n"), (4, b"two\n")]


def test_attach_with_stdin_to_a_bare_shell_runs_what_is_typed(clock: VirtualClock) -> None:
    run = ContainerStatus(0, "app", "busybox", "", clock.now())
    terminal = Terminal(clock, [b"\r", b"echo $HOSTNAME\r", b"exit\r"])
    attached = Attached(run, ["sh"], context())
    assert clock.run(run_attach(attached, True, True, terminal, clock)) == 0
    assert terminal.text() == "\r\n/ # echo $HOSTNAME\r\nweb-0\r\n/ # exit\r\n"
