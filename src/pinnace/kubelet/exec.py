"""A command exec'd in a running simulated container (CRI's Exec, as the kubelet's streaming
server runs it for pods/exec), through the container's shell model (`pinnace.kubelet.shell`)
with its environment and files.

- `sh -c SCRIPT`, or any program with its arguments, runs the shell model's way; what it
  prints reaches the client when the clock says it was printed (`echo a; sleep 2; echo b`
  sends b two seconds later), an endless loop keeps printing round after round, and a wait
  for ever (`sleep infinity`) lasts until the client goes away.
- `cat` with no file copies stdin to stdout until stdin ends (v5's close signal, or the
  connection's end).
- A script that reads its input (`sh -c 'cat > FILE'`, `wc -l`; `shell.reads_stdin`) is given
  all of stdin once it has ended; any other runs at once.
- `tar cf - PATH` (`kubectl cp` from the pod) archives the container's files, and
  `tar xf - -C DIR` (`kubectl cp` into it) unpacks the archive on stdin into them
  (`pinnace.kubelet.tar`).
- `sh` (bash, ash...) without `-c` reads command lines from stdin, one at a time, keeping
  its variables, until `exit` or the end of stdin. With a tty it is interactive as a
  terminal makes it: a prompt (`/ # `), what is typed echoed back, backspace, Ctrl-C
  (abandons the line) and Ctrl-D (ends the shell on an empty line), and output lines ending
  in CR LF; other keys' escape sequences (arrows) are dropped.

Attaching (CRI's Attach, for pods/attach and `kubectl run -i`) streams what the container
prints from then on, its log lines as they come, until it exits. A container whose command
is a bare shell (`kubectl run -it --image=busybox box -- sh`) reads what is typed when the
session has stdin: the shell model runs it as above, in the container's environment. One
with stdin open whose command reads its input waits on it: an attach without a tty gives it
all of its stdin, and with stdinOnce the command then ends with its status.
"""

from __future__ import annotations

import asyncio
import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pinnace.api.streams import STDERR, STDOUT, ExecFailed, StreamIO
from pinnace.clock import Clock
from pinnace.kubelet.commands import SHELLS
from pinnace.kubelet.image_files import exec_error
from pinnace.kubelet.logs import FOLLOW_POLL_SECONDS
from pinnace.kubelet.runtime import ContainerStatus
from pinnace.kubelet.shell import ExecShell, ShellContext, reads_stdin
from pinnace.kubelet.tar import parse_tar

PROMPT = "/ # "
"""busybox sh's prompt for root (PS1 `\\w \\$ ` in /)."""
_CTRL_C, _CTRL_D, _BACKSPACES = "\x03", "\x04", ("\x7f", "\x08")
_ESCAPES = re.compile(r"\x1b(\[[0-9;]*[@-~]|.)")


class _Output:
    """The shell's output, sent when the clock reaches the time it was printed at."""

    def __init__(self, io: StreamIO, clock: Clock, tty: bool) -> None:
        self.io, self.clock, self.tty = io, clock, tty
        self.pending: list[tuple[float, int, str]] = []
        self.sent_at = 0.0
        """The shell's seconds up to which output has been sent."""

    def sink(self, seconds: float, stream: int, text: str) -> None:
        self.pending.append((seconds, stream, text))

    async def send(self, until: float | None = None) -> None:
        """Send what is pending, then wait until the shell's `until` seconds (its run time
        so far); for ever when that is infinite."""
        pending, self.pending = self.pending, []
        for seconds, stream, text in pending:
            await self._wait(seconds)
            await self.write(stream, text)
        if until is not None:
            await self._wait(until)

    async def write(self, stream: int, text: str) -> None:
        if self.tty:  # one terminal: stderr is stdout, and it ends lines with CR LF
            stream, text = STDOUT, text.replace("\n", "\r\n")
        await self.io.write(stream, text.encode(errors="surrogateescape"))  # bytes tar wrote

    async def _wait(self, seconds: float) -> None:
        if math.isinf(seconds):
            await asyncio.get_running_loop().create_future()  # until cancelled
        if seconds > self.sent_at:
            await self.clock.sleep(seconds - self.sent_at)
            self.sent_at = seconds


@dataclass(frozen=True)
class Attached:
    """A running container as an attach session finds it."""

    run: ContainerStatus
    argv: Sequence[str]
    """Its command and args."""
    context: ShellContext
    stdin_once: bool = False
    """Its stdin closes when the first attach that gave it input ends (`stdinOnce`)."""
    end: Callable[[int], None] = lambda exit_code: None
    """Ends the container's command with that exit code."""
    hold: Callable[[], None] = lambda: None
    """Stops the container's own planned printing (`ContainerRuntime.hold_output`)."""


async def run_exec(
    argv: Sequence[str], context: ShellContext, tty: bool, io: StreamIO, clock: Clock
) -> int:
    """Run `argv` in the container; its exit status. ExecFailed when the container's image
    lacks its program."""
    if (failed := exec_error(context.image, argv)) is not None:
        raise ExecFailed(failed)
    output = _Output(io, clock, tty)
    if _bare_shell(argv):
        return (await _interactive(ExecShell(context, output.sink), output, io, tty))[0]
    if _cat_of_stdin(argv):
        while data := await io.read():
            await io.write(STDOUT, data)
        return 0
    tar = parse_tar(argv[1:]) if _program(argv) == "tar" else None
    if tar is not None:  # `kubectl cp`: an archive, binary, on stdin or stdout
        done = tar.run(context.files, clock.now(), await _read_all(io) if tar.extract else b"")
        # busybox tells of a missing path before it ends the archive: kubectl cp, which stops
        # reading at the archive's end, prints it (a cp of nothing is not a silent success)
        await output.write(STDERR, done.stderr)
        if done.stdout:
            await io.write(STDOUT, done.stdout)
        return done.status
    script = _script(argv)
    # A script that reads its input has all of stdin, once that has ended; a terminal's
    # never ends (what a tty's Ctrl-D means is not modelled): there it reads none.
    stdin = None
    if not tty and reads_stdin(script):
        stdin = (await _read_all(io)).decode(errors="surrogateescape")
    return await _command(ExecShell(context, output.sink, stdin), output, script)


async def _command(shell: ExecShell, output: _Output, script: str) -> int:
    """A script (`sh -c`'s, or a program with its arguments), then the rounds of the endless
    loop it ends in."""
    running = shell.run_script(script)
    await output.send(shell.seconds)
    if not running:
        while shell.looping and shell.next_round():
            await output.send(shell.seconds)
    return shell.status


async def run_attach(attached: Attached, stdin: bool, tty: bool, io: StreamIO, clock: Clock) -> int:
    """Attach to the container until it exits (or, for a shell given stdin, until that
    ends); 0, as the kubelet reports any attach that ended (the container's exit is its own)."""
    output = _Output(io, clock, tty)
    if stdin and _bare_shell(attached.argv):
        # What the shell prints is the container's: its log has it too.
        log = _Log(attached.run, clock, 0)
        output = _Output(_Tee(io, log), clock, tty)
        # Its prompt went out before the client came: kubectl asks the user to press enter.
        shell = ExecShell(attached.context, output.sink)
        status, exited = await _interactive(shell, output, io, tty, False)
        log.flush()
        if exited or attached.stdin_once:  # `exit`, or its stdin closed with the attach
            attached.end(status)
        return 0
    run, sent = attached.run, len(attached.run.log)
    feeding = None
    script = _script(attached.argv)
    if stdin and not tty and attached.context.stdin_open and reads_stdin(script):
        feeding = asyncio.ensure_future(_feed(attached, script, io, clock))
    try:
        while True:
            ended = run.ended is not None
            lines, sent = run.log[sent:], len(run.log)
            if lines:
                await output.write(STDOUT, "".join(line + "\n" for _, line in lines))
            if ended:
                return 0
            await clock.sleep(FOLLOW_POLL_SECONDS)
    finally:
        if feeding is not None:
            feeding.cancel()


async def _feed(attached: Attached, script: str, io: StreamIO, clock: Clock) -> None:
    """The container's command waits on its stdin: it reads what the attach sends, to its
    end, as its input. It runs again with that input, printing into the container's log what
    follows the lines it printed before it waited (what it would have printed from then on by
    its own plan is that run's to print, once); with stdinOnce the command then ends."""
    data = (await _read_all(io)).decode(errors="surrogateescape")
    attached.hold()
    log = _Log(attached.run, clock, len(attached.run.log))
    output = _Output(log, clock, False)
    status = await _command(ExecShell(attached.context, output.sink, data), output, script)
    log.flush()
    if attached.stdin_once:
        attached.end(status)


class _Tee:
    """A session's streams whose output also goes into the container's log."""

    def __init__(self, io: StreamIO, log: _Log) -> None:
        self.io, self.log = io, log

    async def read(self) -> bytes:
        return await self.io.read()

    async def write(self, stream: int, data: bytes) -> None:
        await self.io.write(stream, data)
        await self.log.write(stream, data)


class _Log:
    """A StreamIO whose output is a container's log, in lines, past its first `skip`."""

    def __init__(self, run: ContainerStatus, clock: Clock, skip: int) -> None:
        self.run, self.clock, self.skip, self.partial = run, clock, skip, ""

    async def read(self) -> bytes:
        return b""

    async def write(self, stream: int, data: bytes) -> None:
        *lines, self.partial = (self.partial + data.decode(errors="replace")).split("\n")
        self._print(lines)

    def flush(self) -> None:
        if self.partial:
            self._print([self.partial])
            self.partial = ""

    def _print(self, lines: list[str]) -> None:
        shown = lines[self.skip :]
        self.skip = max(0, self.skip - len(lines))
        now = self.clock.now()
        self.run.print((now, line) for line in shown)


async def _read_all(io: StreamIO) -> bytes:
    """Stdin until it ends."""
    chunks = []
    while data := await io.read():
        chunks.append(data)
    return b"".join(chunks)


def _program(argv: Sequence[str]) -> str:
    """The program a command runs, without its directory ("" for none)."""
    return argv[0].rsplit("/", 1)[-1] if argv else ""


def _shell_script(argv: Sequence[str]) -> str | None:
    """A shell's `-c` script, or None when the command is not `sh -c SCRIPT`."""
    return argv[2] if len(argv) >= 3 and _program(argv) in SHELLS and argv[1] == "-c" else None


def _script(argv: Sequence[str]) -> str:
    """The script a command runs: a shell's `-c` script, or the program with its arguments."""
    script = _shell_script(argv)
    return shlex.join(argv) if script is None else script


def _cat_of_stdin(argv: Sequence[str]) -> bool:
    """`cat` (or `sh -c cat`) with no file: it copies stdin to stdout until stdin ends."""
    script = _shell_script(argv)
    words = argv if script is None else script.split()
    return _program(words) == "cat" and list(words[1:]) in ([], ["-"])


def _bare_shell(argv: Sequence[str]) -> bool:
    """A shell that reads its commands from stdin."""
    return _program(argv) in SHELLS and all(a in ("-i", "-l", "-s") for a in argv[1:])


async def _interactive(
    shell: ExecShell, output: _Output, io: StreamIO, tty: bool, prompt: bool = True
) -> tuple[int, bool]:
    """A shell reading its commands from stdin (its first prompt shown if `prompt`): its
    status, and whether it ended by itself (`exit`, or Ctrl-D on a tty) rather than with the
    end of the stream."""
    line = ""
    if tty and prompt:
        await output.write(STDOUT, PROMPT)
    while True:
        data = (await io.read()).decode(errors="replace")
        if not data:
            break
        if tty:  # arrow keys and the like: no line editing beyond backspace
            data = _ESCAPES.sub("", data)
        for ch in data:
            if ch in ("\r", "\n"):
                if not tty and ch == "\r":
                    line += ch
                    continue
                if tty:
                    await output.write(STDOUT, "\n")
                if not await _run_line(shell, output, line):
                    return shell.status, True
                line = ""
                if tty:
                    await output.write(STDOUT, PROMPT)
            elif tty and ch == _CTRL_D:
                if not line:
                    return shell.status, True
            elif tty and ch == _CTRL_C:
                line = ""
                await output.write(STDOUT, "^C\n" + PROMPT)
            elif tty and ch in _BACKSPACES:
                if line:
                    line = line[:-1]
                    await output.write(STDOUT, "\b \b")
            else:
                line += ch
                if tty:
                    await output.write(STDOUT, ch)
    if line.strip() and not await _run_line(shell, output, line):
        return shell.status, True
    return shell.status, False


async def _run_line(shell: ExecShell, output: _Output, line: str) -> bool:
    """Run one command line; False once the shell has ended."""
    running = shell.run_script(line)
    await output.send(shell.seconds)
    return running
