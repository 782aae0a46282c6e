"""The `sh -c` language of simulated containers, as busybox's sh runs it, reduced to what
documentation examples use (docs/nodes.md, "The shell model"). A command run directly
(`/bin/echo hi`) is one simple command of its words, unexpanded.

Understood:

- lists of commands joined by `;`, newlines, `&&` and `||`; pipes (`a | b`, `! a`); `#`
  comments; `if`/`elif`/`else`
- `while COND; do ...; done`, `until COND; do ...; done`, `for NAME in WORDS; do ...; done`;
  `while true` (or `:`, or `sleep N`) around a body that sleeps (at least
  `MIN_ROUND_SECONDS` a round) is a loop that runs for as long as the container does,
  printing (and writing into files) what its body does each time round (`LogStream`)
- words with '...', "..." and backslash quoting; `$NAME`, `${NAME}`, `$?`; bash arrays
  (`arr=(a b)`, `${arr[@]}` ("${arr[@]}" a word each), `${#arr[@]}`, `${arr[i]}`) and `${#NAME}`;
  `$(...)` and backquotes (command substitution, trailing newlines dropped); `$((...))`
  arithmetic (+ - * / % and parentheses over integers and variables); unquoted expansions split
  on blanks; unquoted `*`, `?` and `[...]` patterns matched against the container's files (a
  pattern that matches nothing stays as written)
- redirections: `> FILE`, `>> FILE` into the container's writable layer or an emptyDir
  (`pinnace.kubelet.volumes`; a write after the script's start is due when the script gets
  there, for the runtime to make), `< FILE`, `2>/dev/null`, `2>&1`, `>&2` (an exec'd
  command's stderr)
- assignments (`i=0`, `export NAME=value`): variables of the shell, in the environment once
  exported. The environment starts as the runtime gives it: HOSTNAME (the pod's name), PATH
  (busybox's), the kubelet's variables (`pinnace.kubelet.environment`), HOME (/root)
- `echo [-n] [-e]`, `env`, `printenv [NAME...]` (exit 1 when one is not set), `cat [FILE...]`,
  `ls [-1] [PATH...]`, `pwd`, `rev`, `head`, `tail [-n N|+N] [-f|-F] [FILE]` (following a file looks
  for what was appended every TAIL_SLEEP_SECONDS), `wc [-lwc]`, `seq`, `expr`, `test`/`[ ]`,
  `hostname`, `date` (busybox's format, or `date +FORMAT`), `uptime`, `gzip`/`gunzip` (stdin to
  stdout), `wget -qO- URL` (through the context's `web`), `sh`/`bash` (a script, or with no script
  an empty stdin: exit 0, unless the container keeps stdin open), `true`, `false`, `:`, `exec`,
  `read [-r] [NAME...]` (a line of input), `tee [-a] FILE...`, `tail -f /dev/null` (waits
  forever), and the programs of `pinnace.kubelet.commands` (`sleep`, `exit`, `stress`, `perl` pi,
  servers).

A program it does not know takes the context's `unknown` outcome (a run time and exit code,
`pinnace.kubelet.behaviour`), recorded in `ScriptRun.unknown`; without one, and for anything
else (`case`, functions, subshells, background jobs, a loop that never sleeps) the script is
not understood: `script_run` returns None and the caller chooses. A command exec'd in a
running container (`ExecShell`, `pinnace.kubelet.exec`) instead finds an unknown program not
found, as busybox's sh does, and prints what it does as it goes.

A script is run once when its container starts: what it prints at once is the container's
first log lines; later lines (after a `sleep`) and the lines of an endless loop come from its
`LogStream`, which evaluates one round of the loop at a time, against the files as they are by
then (a mounted ConfigMap that changed shows its new content).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import gzip
import math
import re
import shlex
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pinnace.api.streams import STDERR, STDOUT
from pinnace.kubelet.commands import (
    EXIT_CODE_SIGTERM,
    SERVERS,
    SHELLS,
    CommandRun,
    UnknownOutcome,
    duration,
    simple_command,
)
from pinnace.kubelet.shell_syntax import (
    NAME,
    AndOr,
    Command,
    If,
    Loop,
    NotUnderstood,
    Pipeline,
    Simple,
    Word,
    parse,
)
from pinnace.kubelet.volumes import Filesystem

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH as the images of the documentation's examples (busybox, alpine) set it."""
BUSYBOX_DATE = "%a %b %e %H:%M:%S UTC %Y"
MAX_ITERATIONS = 10_000
"""A finite loop that goes round more often than this is not understood."""
MIN_ROUND_SECONDS = 0.001
"""An endless loop that sleeps less a round is taken as one that never sleeps: its rounds
would come faster than the clock can tell them apart (a sleep of 0.0000001 s added to the time
of day is no time at all), and the node agent would print its lines for ever at one instant."""
Now = Callable[[], float]
"""Seconds since the Unix epoch, as a clock tells them."""
Sink = Callable[[float, int, str], None]
"""(seconds after the shell started, STDOUT or STDERR, text): where an exec'd shell's output
goes as it is printed."""
TAIL_SLEEP_SECONDS = 1.0
"""How often busybox's `tail -f` looks for what was appended to the file it follows."""
_PRINTING = frozenset(
    {
        "echo",
        "env",
        "printenv",
        "cat",
        "ls",
        "date",
        "stress",
        "rev",
        "seq",
        "expr",
        "wc",
        "head",
        "hostname",
        "wget",
        "uptime",
        "gzip",
        "gunzip",
        "tee",
    }
)
_STANDARD_STREAMS = {
    "/dev/stdout": "1",
    "/dev/stderr": "2",
    "/proc/1/fd/1": "1",
    "/proc/1/fd/2": "2",
    "/proc/self/fd/1": "1",
    "/proc/self/fd/2": "2",
}
"""Files that are the container's output streams: what is written there is its log."""
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_PARAMETER = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*)(?:\[(.+)\])?")
_GLOB = re.compile(r"[*?\[]")


class _Exit(Exception):
    """`exit`, or a wait that never ends: nothing after it runs."""


# --- running ---------------------------------------------------------------------------------


@dataclass
class ShellContext:
    """What a container's commands see: its environment, its files and the clock."""

    environment: Mapping[str, str] = field(default_factory=dict)
    """The variables the kubelet gives the container."""
    files: Filesystem = field(default_factory=Filesystem)
    now: Now = lambda: 0.0
    """Seconds since the Unix epoch, as the node's clock says (what `date` prints); never the
    wall clock's, so a simulation prints what its virtual clock says."""
    hostname: str = ""
    """The pod's name, which the runtime gives as HOSTNAME."""
    unknown: UnknownOutcome | None = None
    """What a program the model does not know does; None: it is not understood."""
    web: WebGet | None = None
    """How `wget` reaches a URL (the cluster's Services); None: nothing answers."""
    booted: float | None = None
    """When its node started (what `uptime` counts from); None: when the shell started."""
    stdin_open: bool = False
    """The container keeps its stdin open (`stdin: true`): a shell with no script, and a
    command that reads its input, wait on it for ever rather than reading nothing."""
    image: str = ""
    """The container's image, as its spec names it (what an exec'd command finds there:
    `pinnace.kubelet.image_files`)."""


@dataclass(frozen=True, slots=True)
class StartContext:
    """What a running container keeps of the context its command started in, for the commands
    exec'd in it, which inherit its process's environment and mounts (a node keeps one for
    every container it runs): the environment, one tuple for all the runs given the same
    one, and the files only when a subPath mount copied some at the start. The rest of a
    `ShellContext` is the node's and the pod's as they are now, made again at each exec."""

    environment: tuple[tuple[str, str], ...]
    """The variables the kubelet gave the container, in order."""
    files: Filesystem | None = None
    """Its files, when they hold copies made at the start; None: its volumes are live."""


WebGet = Callable[[str], tuple[str, str]]
"""A URL -> (the body it answers, "") or ("", wget's error)."""
Output = str | Callable[[], object]
"""A line a script prints, or a write into a file, due at its time."""


@dataclass
class ScriptRun:
    """What a script does: its run (time, exit code, usage), the lines it prints with the
    seconds after the start when it prints them, and the loop it ends in, if it never ends."""

    run: CommandRun
    lines: list[tuple[float, Output]]
    endless: _Shell | _Follow | None = None
    unknown: list[str] = field(default_factory=list)
    """The unknown programs it ran, as called, with the outcome the context gave them."""

    def first_lines(self) -> list[str]:
        return [line for t, line in self.lines if t <= 0 and isinstance(line, str)]

    def stream(self) -> LogStream | None:
        """The lines printed after the start, for the runtime to append as they come."""
        later = [(t, line) for t, line in self.lines if t > 0]
        if not later and self.endless is None:
            return None
        return LogStream(deque(later), self.endless)


class LogStream:
    """Lines a running container prints after its start, one batch at a time."""

    def __init__(
        self, lines: deque[tuple[float, Output]], endless: _Shell | _Follow | None
    ) -> None:
        self._lines = lines
        self._endless = endless
        self._at = 0.0

    def next_lines(self) -> tuple[float, list[Output]] | None:
        """(seconds after the previous batch, the lines and file writes) of the next batch;
        None at the end. A round of an endless loop that prints nothing is a batch of none."""
        if not self._lines and self._endless is not None:
            if not self._endless.round():
                self._endless = None
                return None
            self._lines.extend(self._endless.take_lines())
            if not self._lines:
                delay, self._at = self._endless.run.seconds - self._at, self._endless.run.seconds
                return delay, []
        if not self._lines:
            return None
        when = self._lines[0][0]
        batch = []
        while self._lines and self._lines[0][0] == when:
            batch.append(self._lines.popleft()[1])
        delay, self._at = when - self._at, when
        return delay, batch


def command_run(
    argv: Sequence[str], context: ShellContext | None = None, *, now: Now | None = None
) -> CommandRun | None:
    """What running `argv` does, all its output at once; None when it is not understood."""
    script = script_run(argv, context, now=now)
    if script is None:
        return None
    script.run.output = [line for _, line in script.lines if isinstance(line, str)]
    return script.run


def script_run(
    argv: Sequence[str], context: ShellContext | None = None, *, now: Now | None = None
) -> ScriptRun | None:
    """Run `argv` (a shell's `-c` script, or a program and its arguments); None when it is
    not understood. Without a context (an exec probe or hook: the container's files and
    environment are not at hand), `cat`, `ls`, `env` and `printenv` are not understood, and
    `now` tells the time."""
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    text = argv[2] if program in SHELLS and len(argv) >= 3 and argv[1] == "-c" else None
    if context is None:
        shell = _Shell(ShellContext(now=now) if now else ShellContext(), known=False)
    else:
        shell = _Shell(context)
    try:
        commands = parse(shlex.join(argv) if text is None else text)
        shell.run_list(commands)
    except _Exit:
        pass
    except (NotUnderstood, RecursionError):
        return None
    shell.flush()
    run = shell.run
    if not shell.exited:
        run.exit_code = shell.status
    run.stop_exit_code = _pid1_on_sigterm(commands, shell.unknown)
    if shell.endless is not None:
        run = dataclasses.replace(run, seconds=math.inf)
    printing = shell.endless is not None and not math.isinf(shell.run.seconds)
    endless: _Shell | _Follow | None = shell if printing else shell.follow
    if shell.follow is not None:
        run = dataclasses.replace(run, seconds=math.inf)
    return ScriptRun(run, shell.take_lines(), endless, shell.unknown)


def _pid1_on_sigterm(commands: list[AndOr], unknown: list[str]) -> int | None:
    """What the container's PID 1 does with SIGTERM (`CommandRun.stop_exit_code`). A shell
    running a `-c` script execs its last command when that is a simple one (dash, busybox's
    ash); otherwise the shell stays PID 1, and neither it nor what it runs (its children
    never get the signal) handles it. A well-known server handles it; a program the model
    does not know is taken to die of it; any other (sleep, cat, ...) has no handler."""
    last = commands[-1][-1][1] if commands and commands[-1] else None
    if not isinstance(last, Simple):
        return None
    name = "exec"
    words = iter(last.words)
    while name == "exec":  # `exec nginx` replaces the shell as well
        first = next(words, None)
        if first is None:
            return None
        if any(kind != "lit" for kind, _, _ in first):
            return EXIT_CODE_SIGTERM  # a program named by a variable: not known
        name = "".join(text for _, text, _ in first).rsplit("/", 1)[-1]
    if name in SERVERS:
        return SERVERS[name]
    if any(called.split(" ", 1)[0] == name for called in unknown):
        return EXIT_CODE_SIGTERM
    return None


class _Follow:
    """`tail -f FILE`: what is appended to the file, looked for every TAIL_SLEEP_SECONDS."""

    def __init__(self, files: Filesystem, path: str, size: int) -> None:
        self.files, self.path, self.size = files, path, size
        self.run = CommandRun()
        self._lines: list[tuple[float, Output]] = []
        self._partial = ""

    def round(self) -> bool:
        self.run.seconds += TAIL_SLEEP_SECONDS
        size = self.files.size(self.path)
        if size is None:
            return True  # -F: it may come back
        if size < self.size:
            self.size = 0  # truncated: followed from its start again
        content = self.files.read(self.path) or ""
        appended = content[max(0, len(content) - (size - self.size)) :]
        self.size = size
        *complete, self._partial = (self._partial + appended).split("\n")
        self._lines.extend((self.run.seconds, line) for line in complete)
        return True

    def take_lines(self) -> list[tuple[float, Output]]:
        lines, self._lines = self._lines, []
        return lines


class ExecShell:
    """A shell exec'd in a running container (`kubectl exec`): its output goes to `sink` as
    it is printed, an unknown program is not found (busybox's `sh: X: not found`, status
    127), and it keeps its variables from one command line to the next (an interactive
    `sh`). A script it does not understand prints why on stderr with status 2."""

    def __init__(self, context: ShellContext, sink: Sink, stdin: str | None = None) -> None:
        # its input is the session's (none: read as ended), never the container's own
        self._shell = _Shell(dataclasses.replace(context, stdin_open=False), sink=sink)
        self._shell.stdin = stdin

    @property
    def seconds(self) -> float:
        """How long its commands have taken so far (inf once one waits for ever)."""
        return self._shell.run.seconds

    @property
    def status(self) -> int:
        """The exit status of the last command, or of the shell once it has ended."""
        return self._shell.run.exit_code if self._shell.exited else self._shell.status

    def run_script(self, text: str) -> bool:
        """Run a script; False once the shell has ended: by `exit` or `exec`, waiting for
        ever, or in an endless loop (whose rounds `next_round` runs)."""
        shell = self._shell
        try:
            shell.run_list(parse(text))
        except _Exit:
            return False
        except (NotUnderstood, RecursionError) as e:
            shell.error(f"sh: not understood by Pinnace's shell model: {e}\n")
            shell.status = 2
        return True

    @property
    def looping(self) -> bool:
        """It ended in an endless loop that prints: more rounds to come."""
        return self._shell.endless is not None and not math.isinf(self._shell.run.seconds)

    def next_round(self) -> bool:
        """One more round of its endless loop; False when it cannot go on."""
        return self._shell.round()


class _Shell:
    def __init__(self, context: ShellContext, known: bool = True, sink: Sink | None = None) -> None:
        self.context = context
        self.known = known
        """The container's files and environment are at hand."""
        self.sink = sink
        """Where output goes as it is printed, for a command exec'd in the container (which
        also finds an unknown program not found, as busybox's sh does); without one, it is
        the container's log, in lines."""
        self.exported = {
            "HOSTNAME": context.hostname,
            "PATH": DEFAULT_PATH,
            **context.environment,
            "HOME": context.environment.get("HOME", "/root"),
        }
        self.variables: dict[str, str] = {}
        self.arrays: dict[str, list[str]] = {}
        self.status = 0
        self.run = CommandRun()
        self._lines: list[tuple[float, Output]] = []
        self._partial = ""
        self.endless: list[AndOr] | None = None
        self.follow: _Follow | None = None
        """The file `tail -f` follows for as long as the container runs."""
        self.exited = False
        """`exit` or `exec` ended the script with the run's exit code."""
        self.started = context.now()
        self.stdin: str | None = None
        """What the command reads: the output of the one before it in a pipe, or a file."""
        self._out: list[str] | None = None
        """Where output goes instead of the log: a pipe, a file, a command substitution."""
        self._err = "log"
        """Where error messages go: "log", "out" (2>&1) or "null" (2>/dev/null)."""
        self._stdout = STDOUT
        """The sink's stream output goes to: STDERR after `>&2`."""
        self._pending: dict[str, str | None] = {}
        """Files as this script wrote (or removed: None) them after its start, before its
        writes are due."""
        self.unknown: list[str] = []

    def take_stdin(self) -> str:
        """What is left of the input, read to its end: a later reader finds nothing. A
        container that keeps its stdin open waits on it for ever (until an attach gives it
        some, `pinnace.kubelet.exec`)."""
        if self.stdin is None and self.context.stdin_open:
            self.run.seconds = math.inf
        data = self.stdin or ""
        if self.stdin is not None:
            self.stdin = ""
        return data

    # output
    def write(self, text: str) -> None:
        if self._out is not None:
            self._out.append(text)
            return
        if self.sink is not None:
            self.sink(self.run.seconds, self._stdout, text)
            return
        *complete, self._partial = (self._partial + text).split("\n")
        self._lines.extend((self.run.seconds, line) for line in complete)

    def error(self, text: str) -> None:
        """An error message, on stderr: the log (or an exec's stderr) too, unless redirected."""
        if self._err == "out":
            self.write(text)
        elif self._err == "log":
            if self.sink is not None:
                self.sink(self.run.seconds, STDERR, text)
                return
            out, self._out = self._out, None
            self.write(text)
            self._out = out

    def flush(self) -> None:
        if self._partial:
            self._lines.append((self.run.seconds, self._partial))
            self._partial = ""

    def take_lines(self) -> list[tuple[float, Output]]:
        lines, self._lines = self._lines, []
        return lines

    # files
    def read_file(self, path: str) -> str | None:
        _container_state(self)
        if path in self._pending:
            return self._pending[path]
        return self.context.files.read(path)

    def write_file(self, path: str, text: str, append: bool) -> bool:
        """`> path` or `>> path`; False (with sh's error) when it cannot be written. A write
        after the start is due when the script gets there: others see it then."""
        _container_state(self)
        if path == "/dev/null":
            return True
        files = self.context.files
        if self.run.seconds <= 0:
            failed = files.write(path, text, append)
        else:
            failed = files.cannot_write(path)
            if failed is None:
                before = (self.read_file(path) or "") if append else ""
                self._pending[path] = before + text
                self.flush()
                write = functools.partial(files.write, path, text, append)
                self._lines.append((self.run.seconds, write))
        if failed is not None:
            self.error(failed + "\n")
        return failed is None

    def remove_file(self, path: str) -> None:
        """`rm`: the file (or the directory and its files) goes when the script gets there."""
        files = self.context.files
        if self.run.seconds <= 0:
            files.remove(path)
            return
        self._pending[path] = None
        self.flush()
        self._lines.append((self.run.seconds, functools.partial(files.remove, path)))

    def round(self) -> bool:
        """One more round of the endless loop; False when it cannot go on."""
        assert self.endless is not None
        started = self.run.seconds
        self._pending.clear()  # the rounds before are due by now
        try:
            self.run_list(self.endless)
        except (NotUnderstood, _Exit, RecursionError):
            return False
        self.flush()
        return self.run.seconds - started >= MIN_ROUND_SECONDS

    # lists and commands
    def run_list(self, commands: list[AndOr]) -> None:
        for and_or in commands:
            for op, command in and_or:
                if (op == "&&" and self.status != 0) or (op == "||" and self.status == 0):
                    continue
                self.execute(command)

    def execute(self, command: Command) -> None:
        if isinstance(command, Loop):
            self.loop(command)
        elif isinstance(command, If):
            self.if_then(command)
        elif isinstance(command, Pipeline):
            self.pipeline(command)
        elif command.redirections:
            self.redirected(command)
        else:
            self.simple(command)

    def if_then(self, command: If) -> None:
        for condition, body in command.branches:
            self.run_list(condition)
            if self.status == 0:
                self.run_list(body)
                return
        self.status = 0
        self.run_list(command.otherwise)

    def pipeline(self, pipeline: Pipeline) -> None:
        """Each command's output is the next one's input; the status is the last one's."""
        out, data = self._out, ""
        last = len(pipeline.commands) - 1
        for i, command in enumerate(pipeline.commands):
            # the first reads the shell's input (what it leaves, a later command finds)
            saved = self.stdin
            if i:
                self.stdin = data
            self._out = out if i == last else []
            try:
                self.execute(command)
                data = "".join(self._out or ())
            finally:
                self._out = out
                if i:
                    self.stdin = saved
        if pipeline.negated:
            self.status = int(self.status == 0)

    def redirected(self, command: Simple) -> None:
        saved = self.stdin, self._out, self._err, self._stdout
        target: tuple[str, bool] | None = None
        try:
            for operator, word in command.redirections:
                fields = self.expand(word)
                if len(fields) != 1:
                    raise NotUnderstood("ambiguous redirect")
                path, kind = fields[0], operator.lstrip("0123456789")
                fd = operator[: len(operator) - len(kind)]
                if kind == "<":
                    content = self.read_file(path)
                    if content is None:
                        self.error(f"sh: can't open {path}: no such file\n")
                        self.status = 1
                        return
                    self.stdin = content
                elif kind == ">&":
                    if (fd or "1") == "2" and path == "1":
                        self._err = "out"
                    elif (fd or "1") == "1" and path == "2":
                        self._to_stderr()
                    else:
                        raise NotUnderstood("a redirection of another descriptor")
                elif path in _STANDARD_STREAMS:
                    stream = _STANDARD_STREAMS[path]
                    if fd == "2" and stream == "1":
                        self._err = "out"
                    elif fd != "2" and stream == "2":
                        self._to_stderr()
                elif fd == "2":
                    if path != "/dev/null":
                        raise NotUnderstood("stderr into a file")
                    self._err = "null"
                else:
                    self._out = []
                    target = (path, kind == ">>")
            self.simple(command)
            if target is not None:
                path, append = target
                if not self.write_file(path, "".join(self._out or ()), append):
                    self.status = 1
        finally:
            self.stdin, self._out, self._err, self._stdout = saved

    def _to_stderr(self) -> None:
        """`>&2`: output goes where error messages go (the log, an exec's stderr)."""
        if self._err == "null":
            self._out = []  # discarded: no file to write it to
        elif self._err == "log":
            self._out, self._stdout = None, STDERR

    def loop(self, loop: Loop) -> None:
        if loop.kind == "for":
            for item in [w for word in loop.items for w in self.expand(word)]:
                self.variables[loop.name] = item
                self.run_list(loop.body)
            return
        if loop.kind == "while" and _always_true(loop.condition):
            # `while sleep 1; do ...` (the HPA walkthrough's load generator) sleeps each round
            self.endless_loop(loop.condition + loop.body)
        for _ in range(MAX_ITERATIONS):
            self.run_list(loop.condition)
            if (self.status == 0) != (loop.kind == "while"):
                self.status = 0
                return
            self.run_list(loop.body)
        raise NotUnderstood("a loop that does not end")

    def endless_loop(self, body: list[AndOr]) -> None:
        """Run the first round; the rest come from the LogStream."""
        if not _only_printing(body) or self._out is not None:
            raise NotUnderstood("an endless loop that does more than print and sleep")
        started = self.run.seconds
        self.run_list(body)
        if self.run.seconds - started < MIN_ROUND_SECONDS:
            raise NotUnderstood("an endless loop that never sleeps")
        if not _prints(body):
            self.run.seconds = math.inf
        self.endless = body
        raise _Exit

    def simple(self, command: Simple) -> None:
        raw = command.words
        assignments = []
        while raw and _assignment_name(raw[0]):
            assignments.append(self.assignment(raw[0]))
            raw = raw[1:]
        words = [w for word in raw for w in self.expand(word)]
        if not words:
            for name, value in assignments:
                self.assign(name, value)
            self.status = 0
            return
        if assignments:
            raise NotUnderstood("assignments for one command")
        self.status = self.program(words[0].rsplit("/", 1)[-1], words[1:])
        if math.isinf(self.run.seconds):
            raise _Exit

    def assignment(self, word: Word) -> tuple[str, str | list[str]]:
        """NAME=VALUE: the value expanded but not split; NAME=(...): an array."""
        name, _, first = word[0][1].partition("=")
        if len(word) == 2 and word[1][0] == "array":
            items = [w for c in _simple_commands(parse(word[1][1])) for w in c.words]
            return name, [f for item in items for f in self.expand(item)]
        rest = (text if kind == "lit" else self.expansion(kind, text) for kind, text, _ in word[1:])
        return name, first + "".join(rest)

    def assign(self, name: str, value: str | list[str]) -> None:
        if isinstance(value, list):
            self.arrays[name] = value
        elif name in self.exported:
            self.exported[name] = value
        else:
            self.variables[name] = value

    def program(self, name: str, args: list[str]) -> int:
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, args)
        before, started = len(self.run.output), self.run.seconds
        status = simple_command([name, *args], self.run)
        if status is None:
            return self.unknown_program(name, args)
        output = "".join(line + "\n" for line in self.run.output[before:])
        del self.run.output[before:]
        if output:  # what it prints comes as it starts (stress reports its end at once too)
            now, self.run.seconds = self.run.seconds, started
            self.write(output)
            self.run.seconds = now
        if name == "exit":
            shell_exit(self, status)
        return status

    def unknown_program(self, name: str, args: list[str]) -> int:
        if self.sink is not None:  # an exec'd shell, as busybox's
            self.error(f"sh: {name}: not found\n")
            return 127
        outcome = self.context.unknown
        if outcome is None or not self.known:
            raise NotUnderstood(name)
        self.unknown.append(shlex.join([name, *args]))
        self.run.seconds += outcome.seconds
        return outcome.exit_code

    # expansion
    def lookup(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        found = _PARAMETER.fullmatch(name)
        if found is None:
            return self.variables.get(name, self.exported.get(name, ""))
        length, name, subscript = found.groups()
        items = self.arrays.get(name)
        if items is None:
            scalar = self.variables.get(name, self.exported.get(name))
            items = [] if scalar is None else [scalar]
        if subscript in ("@", "*"):
            return str(len(items)) if length else " ".join(items)
        index = self.arithmetic(subscript) if subscript else 0
        value = items[index] if -len(items) <= index < len(items) else ""
        return str(len(value)) if length else value

    def arithmetic(self, text: str) -> int:
        expanded = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", r"\1", text)
        return _Arithmetic(expanded, self.lookup).value()

    def expand(self, word: Word) -> list[str]:
        """The fields of a word: unquoted expansions split on blanks, "${arr[@]}" a field for
        each element."""
        significant = [part for part in word if part != ("lit", "", True)]
        if len(significant) == 1 and significant[0][0] == "var" and significant[0][2]:
            found = _PARAMETER.fullmatch(significant[0][1])
            if found is not None and not found.group(1) and found.group(3) == "@":
                return list(self.arrays.get(found.group(2), ()))
        fields: list[str] = []
        current: str | None = None
        for kind, text, quoted in word:
            value = text if kind == "lit" else self.expansion(kind, text)
            if quoted or kind == "lit":
                current = (current or "") + value
                continue
            pieces = value.split()
            if not pieces:
                continue
            if value[:1].isspace() and current is not None:
                fields.append(current)
                current = None
            for piece in pieces[:-1]:
                fields.append((current or "") + piece)
                current = None
            current = (current or "") + pieces[-1]
            if value[-1:].isspace():
                fields.append(current)
                current = None
        if current is not None:
            fields.append(current)
        if self.known and any(not q and kind == "lit" and _GLOB.search(t) for kind, t, q in word):
            return [match for f in fields for match in self.context.files.glob(f) or [f]]
        return fields

    def expansion(self, kind: str, text: str) -> str:
        if kind == "var":
            return self.lookup(text)
        if kind == "arith":
            return str(self.arithmetic(text))
        if kind == "array":
            raise NotUnderstood("an array where a word is wanted")
        sub = copy.copy(self)
        sub.sink = None  # its output is the expansion's value
        sub.variables, sub.exported = dict(self.variables), dict(self.exported)
        sub.arrays = dict(self.arrays)
        sub._lines, sub._partial, sub._out = [], "", None
        with contextlib.suppress(_Exit):
            sub.run_list(parse(text))
        sub.flush()
        self.run.seconds = sub.run.seconds
        self.status = sub.status
        self.unknown = sub.unknown
        self._lines.extend((t, line) for t, line in sub._lines if not isinstance(line, str))
        printed = (line for _, line in sub._lines if isinstance(line, str))
        return "\n".join(printed).rstrip("\n")


def _always_true(condition: list[AndOr]) -> bool:
    """`true`, `:` or `sleep N`: a condition that never fails."""
    if len(condition) != 1 or len(condition[0]) != 1:
        return False
    command = condition[0][0][1]
    if not isinstance(command, Simple) or command.redirections:
        return False
    words = command.words
    if words in ([[("lit", "true", False)]], [[("lit", ":", False)]]):
        return True
    return (
        len(words) == 2
        and words[0] == [("lit", "sleep", False)]
        and len(words[1]) == 1
        and words[1][0][0] == "lit"
        and duration(words[1][0][1]) not in (None, math.inf)
    )


def _simple_commands(commands: list[AndOr], input_only: bool = False) -> Iterator[Simple]:
    """The simple commands of a script, inside its loops, ifs and pipelines; `input_only`: only
    those whose input is the shell's (not after a pipe, nor with a `<`)."""
    for and_or in commands:
        for _, command in and_or:
            yield from _simple_commands_of(command, input_only)


def _simple_commands_of(command: Command, input_only: bool) -> Iterator[Simple]:
    if isinstance(command, Loop):
        yield from _simple_commands(command.condition, input_only)
        yield from _simple_commands(command.body, input_only)
    elif isinstance(command, If):
        for condition, body in command.branches:
            yield from _simple_commands(condition, input_only)
            yield from _simple_commands(body, input_only)
        yield from _simple_commands(command.otherwise, input_only)
    elif isinstance(command, Pipeline):
        for inner in command.commands[:1] if input_only else command.commands:
            yield from _simple_commands_of(inner, input_only)
    elif not input_only or all(op.lstrip("0123456789") != "<" for op, _ in command.redirections):
        yield command


def _assignment_name(word: Word) -> str:
    """NAME when the word is an assignment NAME=..., else ""."""
    if not word or word[0][0] != "lit" or word[0][2]:
        return ""
    found = _ASSIGNMENT.match(word[0][1])
    return found.group(1) if found else ""


def _program_words(command: Simple) -> list[Word]:
    """A command's words from its program on: those of its leading assignments left out."""
    words = command.words
    while words and _assignment_name(words[0]):
        words = words[1:]
    return words


def _name(command: Simple) -> str:
    """The program a command runs, when its first word is a plain literal."""
    words = _program_words(command)
    first = words[0] if words else []
    if not words:
        return "="
    return first[0][1].rsplit("/", 1)[-1] if len(first) == 1 and first[0][0] == "lit" else ""


def reads_stdin(script: str) -> bool:
    """Whether the script reads the shell's own input: a command of it not fed by a pipe or
    a `<` that reads its input (`cat > FILE`, `wc -l`, `read LINE`). An exec session's stdin
    must be at hand for such a script; any other runs at once, without waiting for a stdin
    that may never end (a terminal's)."""
    try:
        commands = parse(script)
    except NotUnderstood:
        return False
    for command in _simple_commands(commands, input_only=True):
        args = [_literal(word) for word in _program_words(command)[1:]]
        reads = _INPUT_READERS.get(_name(command))
        if reads is not None and reads(args):
            return True
    return False


def _literal(word: Word) -> str:
    """A word as written when it expands to itself; "$" for one that expands."""
    return "".join(t for _, t, _ in word) if all(k == "lit" for k, _, _ in word) else "$"


def _reads_input_past_options(args: list[str]) -> bool:
    """head, tail: with no file (not following one)."""
    try:
        _, files, follow = _head_tail_count(args)
    except NotUnderstood:
        return False
    return not files and not follow


_INPUT_READERS: Mapping[str, Callable[[list[str]], bool]] = {
    "cat": lambda args: args in ([], ["-"]),
    "rev": lambda args: not args,
    "wc": lambda args: all(a.startswith("-") and a != "-" for a in args),
    "head": _reads_input_past_options,
    "tail": _reads_input_past_options,
    "gzip": lambda args: True,
    "gunzip": lambda args: True,
    "read": lambda args: True,
    "tee": lambda args: True,
}
"""The programs that read their input, given their arguments (literal, "$" for an expansion)."""


def _only_printing(commands: list[AndOr]) -> bool:
    """Nothing in an endless loop's body but output, sleeps, tests and variables."""
    allowed = _PRINTING - {"stress"} | {"sleep", "true", "false", ":", "export", "=", "[", "test"}
    return all(_name(c) in allowed for c in _simple_commands(commands))


def _prints(commands: list[AndOr]) -> bool:
    """Its body prints, or writes into files."""
    return any(
        _name(c) in _PRINTING or any(op.lstrip("1") in (">", ">>") for op, _ in c.redirections)
        for c in _simple_commands(commands)
    )


# --- builtins --------------------------------------------------------------------------------


def shell_exit(shell: _Shell, status: int) -> None:
    shell.status = shell.run.exit_code = status
    shell.exited = True
    raise _Exit


def _echo(shell: _Shell, args: list[str]) -> int:
    newline, escapes = True, False
    while args and args[0] in ("-n", "-e", "-E", "-ne", "-en"):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0][1:]
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = text.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
    shell.write(text + ("\n" if newline else ""))
    return 0


def _container_state(shell: _Shell) -> None:
    if not shell.known:
        raise NotUnderstood("the container's files and environment are not known here")


def _env(shell: _Shell, args: list[str]) -> int:
    _container_state(shell)
    if args:
        raise NotUnderstood("env with arguments")
    shell.write("".join(f"{k}={v}\n" for k, v in shell.exported.items()))
    return 0


def _printenv(shell: _Shell, args: list[str]) -> int:
    _container_state(shell)
    if not args:
        return _env(shell, args)
    found = [shell.exported[name] for name in args if name in shell.exported]
    shell.write("".join(value + "\n" for value in found))
    return 0 if len(found) == len(args) else 1


def _cat(shell: _Shell, args: list[str]) -> int:
    if not args or args == ["-"]:
        shell.write(shell.take_stdin())
        return 0
    if any(a.startswith("-") for a in args):
        raise NotUnderstood("cat with options")
    status = 0
    for content in _file_contents(shell, "cat", args):
        if content is None:
            status = 1
        else:
            shell.write(content)
    return status


def _file_contents(shell: _Shell, program: str, paths: list[str]) -> Iterator[str | None]:
    """The contents of files, None for each that cannot be read (busybox's error told)."""
    for path in paths:
        content = shell.read_file(path)
        if content is None:
            if shell.context.files.is_dir(path):
                shell.error(f"{program}: read error: Is a directory\n")
            else:
                shell.error(f"{program}: can't open '{path}': No such file or directory\n")
        yield content


def _input(shell: _Shell, program: str, paths: list[str]) -> str | None:
    """What a filter reads: its files one after another, else its input; None if one of its
    files cannot be read."""
    if not paths:
        return shell.take_stdin()
    contents = list(_file_contents(shell, program, paths))
    return None if None in contents else "".join(c or "" for c in contents)


def _lines_of(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []


def _ls(shell: _Shell, args: list[str]) -> int:
    """busybox ls [-1] [PATH...]: the working directory (/) without a path; with several,
    the files named first, then each directory's names under `DIR:`, a blank line between."""
    _container_state(shell)
    flags = "".join(a[1:] for a in args if a.startswith("-") and a != "-")
    operands = sorted(a for a in args if not a.startswith("-") or a == "-")
    if set(flags) - {"1"}:
        raise NotUnderstood("ls with options")
    status, files, directories = 0, [], []
    for path in operands or ["/"]:
        names = shell.context.files.list(path)
        if names is None:
            shell.error(f"ls: {path}: No such file or directory\n")
            status = 1
        elif names == [path]:
            files.append(path)
        else:
            directories.append((path, names))
    sections = ["".join(name + "\n" for name in files)] if files else []
    for path, names in directories:
        header = f"{path}:\n" if len(operands) > 1 else ""
        sections.append(header + "".join(name + "\n" for name in names))
    shell.write("\n".join(sections))
    return status


def _pwd(shell: _Shell, args: list[str]) -> int:
    """busybox pwd: the working directory, which for the model is always / (relative paths
    are read from there)."""
    shell.write("/\n")
    return 0


def _touch(shell: _Shell, args: list[str]) -> int:
    """busybox touch: a file that is not there is created empty (not with -c); one that is
    only has its times changed, which nothing in the model shows."""
    _container_state(shell)
    if any(a.startswith("-") and a != "-c" for a in args):
        raise NotUnderstood("touch with options")
    files, status = shell.context.files, 0
    for path in (a for a in args if a != "-c"):
        exists = shell.read_file(path) is not None or files.is_dir(path)
        failed = None if files.writable(path) else "Read-only file system"
        if not exists and failed is None and "-c" not in args:
            failed = files.cannot_write(path)
            if failed is None:
                shell.write_file(path, "", append=True)
        if failed is not None:
            shell.error(f"touch: {path}: {failed.rpartition(': ')[2]}\n")
            status = 1
    return status


def _rm(shell: _Shell, args: list[str]) -> int:
    """busybox rm of files, and with -r of directories; -f is quiet about what is not
    there."""
    _container_state(shell)
    flags = "".join(a[1:] for a in args if a.startswith("-"))
    if any(a == "-" for a in args) or not set(flags) <= set("frR"):
        raise NotUnderstood("rm with options")
    force, recursive = "f" in flags, bool(set(flags) & set("rR"))
    files, status = shell.context.files, 0
    for path in (a for a in args if not a.startswith("-")):
        is_file = shell.read_file(path) is not None
        if is_file or files.is_dir(path):
            if not (is_file or recursive):
                failed = f"rm: '{path}' is a directory"
            elif not files.writable(path):
                failed = f"rm: can't remove '{path}': Read-only file system"
            else:
                shell.remove_file(path)
                continue
        elif force:
            continue
        else:
            failed = f"rm: can't remove '{path}': No such file or directory"
        shell.error(failed + "\n")
        status = 1
    return status


def _mkdir(shell: _Shell, args: list[str]) -> int:
    """busybox mkdir (-p: parents, and no complaint about one that is there). The model
    keeps no empty directory: one shows once a file is written in it."""
    _container_state(shell)
    if any(a.startswith("-") and a != "-p" for a in args):
        raise NotUnderstood("mkdir with options")
    files, status = shell.context.files, 0
    for path in (a for a in args if a != "-p"):
        if shell.read_file(path) is not None or (files.is_dir(path) and "-p" not in args):
            failed = "File exists"
        elif not files.writable(path):
            failed = "Read-only file system"
        else:
            continue
        shell.error(f"mkdir: can't create directory '{path}': {failed}\n")
        status = 1
    return status


def _rev(shell: _Shell, args: list[str]) -> int:
    text = _input(shell, "rev", args)
    if text is None:
        return 1
    shell.write("".join(line[::-1] + "\n" for line in _lines_of(text)))
    return 0


def _seq(shell: _Shell, args: list[str]) -> int:
    try:
        numbers = [int(a) for a in args]
    except ValueError:
        raise NotUnderstood("seq of non-integers") from None
    if not 1 <= len(numbers) <= 3 or (len(numbers) == 3 and numbers[1] == 0):
        raise NotUnderstood("seq")
    first, step, last = (
        (1, 1, numbers[0])
        if len(numbers) == 1
        else (numbers[0], 1, numbers[1])
        if len(numbers) == 2
        else tuple(numbers)
    )
    values = range(first, last + (1 if step > 0 else -1), step)
    if len(values) > MAX_ITERATIONS:
        raise NotUnderstood("a long seq")
    shell.write("".join(f"{n}\n" for n in values))
    return 0


def _head_tail_count(args: list[str]) -> tuple[str, list[str], bool]:
    """`-n N`, `-nN`, `-N`, `-n +N` (and -f/-F for tail): the count, the files, following."""
    count, files, follow = "10", [], False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-f", "-F"):
            follow = True
        elif arg == "-n" and i + 1 < len(args):
            i += 1
            count = args[i]
        elif arg.startswith("-n"):
            count = arg[2:]
        elif re.fullmatch(r"-\d+", arg):
            count = arg[1:]
        elif arg.startswith("-") and arg != "-":
            raise NotUnderstood(f"option {arg}")
        else:
            files.append(arg)
        i += 1
    if not re.fullmatch(r"[+-]?\d+", count):
        raise NotUnderstood("a count")
    return count, files, follow


def _head(shell: _Shell, args: list[str]) -> int:
    count, files, follow = _head_tail_count(args)
    if follow or count.startswith("+"):
        raise NotUnderstood("head")
    text = _input(shell, "head", files)
    if text is None:
        return 1
    shell.write("".join(line + "\n" for line in _lines_of(text)[: abs(int(count))]))
    return 0


def _tail(shell: _Shell, args: list[str]) -> int:
    count, files, follow = _head_tail_count(args)
    if files == ["/dev/null"] and follow:
        shell.run.seconds = math.inf
        return 0
    if len(files) > 1 or (follow and not files):
        raise NotUnderstood("tail of several files")
    text = _input(shell, "tail", files)
    if text is not None:
        lines = _lines_of(text)
        shown = lines[int(count) - 1 :] if count.startswith("+") else lines[-abs(int(count)) :]
        shell.write("".join(line + "\n" for line in shown if int(count) != 0 or "+" in count))
    if not follow:
        return 0 if text is not None else 1
    if shell._out is not None or shell.run.seconds > 0:
        raise NotUnderstood("tail -f into a pipe, or after a while")
    size = shell.context.files.size(files[0])
    shell.follow = _Follow(shell.context.files, files[0], size or 0)
    shell.run.seconds = math.inf
    return 0


def _wc(shell: _Shell, args: list[str]) -> int:
    flags = "".join(a[1:] for a in args if a.startswith("-") and a != "-")
    files = [a for a in args if not a.startswith("-") or a == "-"]
    if set(flags) - set("lwc") or len(files) > 1:
        raise NotUnderstood("wc")
    text = _input(shell, "wc", files)
    if text is None:
        return 1
    counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(text.encode())}
    shown = [counts[f] for f in "lwc" if f in (flags or "lwc")]
    if len(shown) == 1 and not files:
        line = str(shown[0])  # busybox prints a lone count bare
    else:
        line = " ".join(f"{n:9d}" for n in shown) + "".join(f" {f}" for f in files)
    shell.write(line + "\n")
    return 0


def _expr(shell: _Shell, args: list[str]) -> int:
    """expr A OP B (arithmetic and comparison of integers, = and != of strings) or expr A."""
    if len(args) == 1:
        value = args[0]
    elif len(args) == 3:
        a, op, b = args
        numbers = re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b)
        if op in ("+", "-", "*", "/", "%") and numbers:
            if op in ("/", "%") and int(b) == 0:
                shell.error("expr: division by zero\n")
                return 2
            value = str(_Arithmetic(f"{a} {op} ({b})", shell.lookup).value())
        elif op in ("=", "!=", "<", ">", "<=", ">="):
            left: int | str = int(a) if numbers else a
            right: int | str = int(b) if numbers else b
            value = str(int(_compare(left, op, right)))
        else:
            raise NotUnderstood("expr")
    else:
        raise NotUnderstood("expr")
    shell.write(value + "\n")
    return 1 if value in ("", "0") else 0


def _compare(left: int | str, op: str, right: int | str) -> bool:
    if op in ("=", "=="):
        return left == right
    if op == "!=":
        return left != right
    if isinstance(left, int) != isinstance(right, int):
        left, right = str(left), str(right)
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[  # type: ignore[operator]
        op
    ]


_TEST_FILES = {"-e", "-f", "-d", "-s", "-r", "-w", "-x"}
_TEST_NUMBERS = {"-eq": "=", "-ne": "!=", "-lt": "<", "-gt": ">", "-le": "<=", "-ge": ">="}


def _test(shell: _Shell, args: list[str]) -> int:
    """test and [: files, strings and integers, with ! (a, o and parentheses are not
    modelled)."""
    if not args:
        return 1
    if args[0] == "!":
        return 1 - _test(shell, args[1:]) if len(args) > 1 else 1
    if len(args) == 1:
        return 0 if args[0] else 1
    if len(args) == 2 and args[0] in ("-z", "-n"):
        return int((args[1] == "") != (args[0] == "-z"))
    if len(args) == 2 and args[0] in _TEST_FILES:
        _container_state(shell)
        files, path = shell.context.files, args[1]
        content = shell.read_file(path)
        found = {
            "-d": files.is_dir(path),
            "-f": content is not None,
            "-s": bool(content),
        }.get(args[0], content is not None or files.is_dir(path))
        return 0 if found else 1
    if len(args) == 3 and args[1] in ("=", "==", "!="):
        return 0 if _compare(args[0], args[1], args[2]) else 1
    if len(args) == 3 and args[1] in _TEST_NUMBERS:
        try:
            left, right = int(args[0]), int(args[2])
        except ValueError:
            shell.error(f"sh: invalid number '{args[0] if not _is_int(args[0]) else args[2]}'\n")
            return 2
        return 0 if _compare(left, _TEST_NUMBERS[args[1]], right) else 1
    raise NotUnderstood("test")


def _is_int(text: str) -> bool:
    return re.fullmatch(r"\s*-?\d+\s*", text) is not None


def _bracket(shell: _Shell, args: list[str]) -> int:
    if not args or args[-1] != "]":
        shell.error("sh: missing ]\n")
        return 2
    return _test(shell, args[:-1])


def _hostname(shell: _Shell, args: list[str]) -> int:
    if args:
        raise NotUnderstood("hostname with arguments")
    shell.write(shell.context.hostname + "\n")
    return 0


def _wget(shell: _Shell, args: list[str]) -> int:
    """`wget -qO- URL` (or -q -O - / -O-): the page on stdout; wget's error and 1 when
    nothing answers."""
    quiet, to_stdout, urls, i = False, False, [], 0
    while i < len(args):
        arg = args[i]
        if arg in ("-q", "--quiet"):
            quiet = True
        elif arg in ("-O-", "-qO-", "-Oq-") or (arg == "-O" and args[i + 1 : i + 2] == ["-"]):
            quiet = quiet or "q" in arg
            to_stdout = True
            i += arg == "-O"
        elif arg in ("-T", "--timeout"):
            i += 1
        elif arg.startswith("-"):
            raise NotUnderstood(f"wget {arg}")
        else:
            urls.append(arg)
        i += 1
    if len(urls) != 1 or not to_stdout or shell.context.web is None:
        raise NotUnderstood("wget of a page to stdout")
    url = urls[0] if "://" in urls[0] else "http://" + urls[0]
    body, failed = shell.context.web(url)
    if failed:
        shell.error(f"wget: {failed}\n")
        return 1
    if not quiet:
        shell.error(f"Connecting to {url.split('://', 1)[1].split('/', 1)[0]}\n")
    shell.write(body)
    return 0


def _sh(shell: _Shell, args: list[str]) -> int:
    """A shell run from the script: with no script it reads its commands from stdin, which
    is empty unless the container keeps it open (then it waits on it for ever); `sh -c SCRIPT`
    and `sh FILE` run the script in a shell of its own."""
    if not args or args in (["-i"], ["-l"]):
        if shell.context.stdin_open and shell.stdin is None:
            shell.run.seconds = math.inf
        return 0
    if args[0] == "-c" and len(args) >= 2:
        text = args[1]
    elif args[0].startswith("-"):
        raise NotUnderstood("sh with options")
    else:
        content = shell.read_file(args[0])
        if content is None:
            shell.error(f"sh: can't open '{args[0]}': No such file or directory\n")
            return 2
        text = content
    sub = copy.copy(shell)
    sub.variables, sub.arrays, sub.exported = {}, {}, dict(shell.exported)
    sub.exited = False
    try:
        sub.run_list(parse(text))
    except _Exit:
        if not sub.exited:
            raise
    shell.run.seconds = sub.run.seconds
    shell.unknown = sub.unknown
    shell._lines, shell._partial = sub._lines, sub._partial
    return sub.run.exit_code if sub.exited else sub.status


def _date(shell: _Shell, args: list[str]) -> int:
    if len(args) > 1 or (args and not args[0].startswith("+")):
        raise NotUnderstood("date with options")
    now = time.gmtime(shell.started + shell.run.seconds)
    shell.write(time.strftime(args[0][1:] if args else BUSYBOX_DATE, now) + "\n")
    return 0


def _uptime(shell: _Shell, args: list[str]) -> int:
    """busybox's uptime: the time, how long the node has been up, no users logged in, and
    load averages of 0 (the node's load is not modelled)."""
    if args:
        raise NotUnderstood("uptime with options")
    now = shell.started + shell.run.seconds
    booted = shell.context.booted
    minutes = int(now - (shell.started if booted is None else booted)) // 60
    days, hours, minutes = minutes // 1440, minutes // 60 % 24, minutes % 60
    up = (f"{days} day{'s' if days != 1 else ''}, " if days else "") + (
        f"{hours:2}:{minutes:02}" if hours else f"{minutes} min"
    )
    clock = time.strftime("%H:%M:%S", time.gmtime(now))
    shell.write(f" {clock} up {up},  0 users,  load average: 0.00, 0.00, 0.00\n")
    return 0


def _gzip(shell: _Shell, args: list[str]) -> int:
    """gzip (`-d`: gunzip) from stdin to stdout, as in a pipe (`echo x | gzip`); the bytes
    as text, undecodable ones kept as surrogates, as tar keeps them."""
    flags = "".join(a.lstrip("-") for a in args if a.startswith("-") and a != "-")
    if any(not a.startswith("-") for a in args) or set(flags) - set("cdf"):
        raise NotUnderstood("gzip of files")
    data = shell.take_stdin().encode(errors="surrogateescape")
    if "d" not in flags:
        shell.write(gzip.compress(data, mtime=0).decode(errors="surrogateescape"))
        return 0
    try:
        shell.write(gzip.decompress(data).decode(errors="surrogateescape"))
    except (OSError, EOFError):
        shell.error("gzip: invalid magic\n")
        return 1
    return 0


def _tee(shell: _Shell, args: list[str]) -> int:
    """busybox tee [-a] FILE...: its input to stdout and into each file (appended with -a);
    a file it cannot open is told (`tee: can't open 'F': Read-only file system`), status 1."""
    _container_state(shell)
    paths = [a for a in args if a != "-a"]
    if any(p.startswith("-") for p in paths):
        raise NotUnderstood("tee with options")
    data, status = shell.take_stdin(), 0
    for path in paths:
        failed = shell.context.files.cannot_write(path)
        if failed is None:
            shell.write_file(path, data, append="-a" in args)
        else:
            shell.error(f"tee: can't open '{path}': {failed.rpartition(': ')[2]}\n")
            status = 1
    shell.write(data)
    return status


def _read(shell: _Shell, args: list[str]) -> int:
    """`read [-r] [NAME...]`: a line of input, split on blanks into the names (the last takes
    the rest of the line; REPLY, unsplit, without one); status 1 once input has ended (the
    names emptied) or when the line had no newline. Without -r a backslash escapes the
    character after it."""
    raw = args[:1] == ["-r"]
    names = args[1:] if raw else args
    if not all(NAME.fullmatch(name) for name in names):
        raise NotUnderstood("read with options")
    line, newline, rest = shell.take_stdin().partition("\n")
    if shell.stdin is not None:
        shell.stdin = rest
    if not raw:
        line = re.sub(r"\\(.)", r"\1", line)
    fields = line.strip().split(maxsplit=len(names) - 1) if names else [line]
    for i, name in enumerate(names or ["REPLY"]):
        shell.assign(name, fields[i] if i < len(fields) else "")
    return 0 if newline else 1


def _export(shell: _Shell, args: list[str]) -> int:
    for arg in args:
        name, equals, value = arg.partition("=")
        if not NAME.fullmatch(name):
            raise NotUnderstood("export")
        shell.exported[name] = value if equals else shell.variables.pop(name, "")
    return 0


def _exec(shell: _Shell, args: list[str]) -> int:
    if not args:
        return 0
    shell_exit(shell, shell.program(args[0].rsplit("/", 1)[-1], args[1:]))
    return 0


_BUILTINS: Mapping[str, Callable[[_Shell, list[str]], int]] = {
    "echo": _echo,
    "env": _env,
    "printenv": _printenv,
    "cat": _cat,
    "ls": _ls,
    "date": _date,
    "export": _export,
    "read": _read,
    "tee": _tee,
    "tail": _tail,
    "head": _head,
    "rev": _rev,
    "touch": _touch,
    "rm": _rm,
    "mkdir": _mkdir,
    "seq": _seq,
    "wc": _wc,
    "expr": _expr,
    "test": _test,
    "[": _bracket,
    "hostname": _hostname,
    "pwd": _pwd,
    "wget": _wget,
    "uptime": _uptime,
    "gzip": _gzip,
    "gunzip": lambda shell, args: _gzip(shell, ["-d", *args]),
    **dict.fromkeys(SHELLS, _sh),
    "exec": _exec,
    ":": lambda shell, args: 0,
}


class _Arithmetic:
    """$((...)): integers, variables (unset is 0), + - * / % and parentheses."""

    def __init__(self, text: str, lookup: Callable[[str], str]) -> None:
        self.tokens = re.findall(r"\d+|[A-Za-z_][A-Za-z0-9_]*|[-+*/%()]|\S", text)
        self.lookup = lookup
        self.i = 0

    def value(self) -> int:
        result = self.sum()
        if self.i != len(self.tokens):
            raise NotUnderstood("arithmetic")
        return result

    def peek(self) -> str:
        return self.tokens[self.i] if self.i < len(self.tokens) else ""

    def sum(self) -> int:
        total = self.product()
        while self.peek() in ("+", "-"):
            op = self.tokens[self.i]
            self.i += 1
            right = self.product()
            total = total + right if op == "+" else total - right
        return total

    def product(self) -> int:
        total = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.tokens[self.i]
            self.i += 1
            right = self.unary()
            if op == "*":
                total *= right
            elif right == 0:
                raise NotUnderstood("division by zero")
            else:  # C division: towards zero
                quotient = abs(total) // abs(right) * (1 if (total < 0) == (right < 0) else -1)
                total = quotient if op == "/" else total - quotient * right
        return total

    def unary(self) -> int:
        token = self.peek()
        self.i += 1
        if token == "-":
            return -self.unary()
        if token == "+":
            return self.unary()
        if token == "(":
            inner = self.sum()
            if self.peek() != ")":
                raise NotUnderstood("arithmetic")
            self.i += 1
            return inner
        if token.isdigit():
            return int(token)
        if NAME.fullmatch(token):
            value = self.lookup(token).strip() or "0"
            if not re.fullmatch(r"-?\d+", value):
                raise NotUnderstood("arithmetic on a non-number")
            return int(value)
        raise NotUnderstood("arithmetic")
