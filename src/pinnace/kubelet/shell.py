"""The `sh -c` language of simulated containers, as busybox's sh runs it, reduced to what
documentation examples use. A command run directly (`/bin/echo hi`) is one simple command of
its words, unexpanded.

Understood:

- lists of commands joined by `;`, newlines, `&&` and `||`; `#` comments
- `while COND; do ...; done`, `until COND; do ...; done`, `for NAME in WORDS; do ...; done`;
  `while true` (or `:`) around a body that sleeps (at least `MIN_ROUND_SECONDS` a round) is a
  loop that runs for as long as the container does, printing what its body prints each time
  round (`LogStream`)
- words with '...', "..." and backslash quoting; `$NAME`, `${NAME}`, `$?`; `$(...)` and
  backquotes (command substitution, trailing newlines dropped); `$((...))` arithmetic
  (+ - * / % and parentheses over integers and variables); unquoted expansions split on blanks;
  unquoted `*`, `?` and `[...]` patterns matched against the container's files (a pattern
  that matches nothing stays as written)
- assignments (`i=0`, `export NAME=value`): variables of the shell, in the environment once
  exported. The environment starts as the runtime gives it: HOSTNAME (the pod's name), PATH
  (busybox's), the kubelet's variables (`pinnace.kubelet.environment`), HOME (/root)
- `echo [-n] [-e]`, `env`, `printenv [NAME...]` (exit 1 when one is not set), `cat FILE...`
  and `ls [DIR...]` on the container's files (`pinnace.kubelet.volumes`; a missing one prints
  busybox's error and exits 1), `date` (busybox's format, or `date +FORMAT`), `true`,
  `false`, `:`, `exec`, `tail -f /dev/null` (waits forever), and the commands of
  `pinnace.kubelet.commands` (`sleep`, `exit`, `stress`).

Anything else (pipes, redirections, `if`, an unknown program, a loop that never sleeps) is not
understood: the container then runs forever printing nothing, as before. A command exec'd in
a running container (`ExecShell`, `pinnace.kubelet.exec`) instead finds an unknown program not
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
import math
import re
import shlex
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pinnace.api.streams import STDERR, STDOUT
from pinnace.kubelet.commands import SHELLS, CommandRun, simple_command
from pinnace.kubelet.shell_syntax import (
    NAME,
    AndOr,
    Command,
    Loop,
    NotUnderstood,
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
_PRINTING = frozenset({"echo", "env", "printenv", "cat", "ls", "date", "stress"})
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
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


@dataclass
class ScriptRun:
    """What a script does: its run (time, exit code, usage), the lines it prints with the
    seconds after the start when it prints them, and the loop it ends in, if it never ends."""

    run: CommandRun
    lines: list[tuple[float, str]]
    endless: _Shell | None = None

    def first_lines(self) -> list[str]:
        return [line for t, line in self.lines if t <= 0]

    def stream(self) -> LogStream | None:
        """The lines printed after the start, for the runtime to append as they come."""
        later = [(t, line) for t, line in self.lines if t > 0]
        if not later and self.endless is None:
            return None
        return LogStream(deque(later), self.endless)


class LogStream:
    """Lines a running container prints after its start, one batch at a time."""

    def __init__(self, lines: deque[tuple[float, str]], endless: _Shell | None) -> None:
        self._lines = lines
        self._endless = endless
        self._at = 0.0

    def next_lines(self) -> tuple[float, list[str]] | None:
        """(seconds after the previous batch, the lines) of the next batch; None at the end.
        A round of an endless loop that prints nothing is a batch of no lines."""
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
    script.run.output = [line for _, line in script.lines]
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
    if shell.endless is not None:
        run = dataclasses.replace(run, seconds=math.inf)
    printing = shell.endless is not None and not math.isinf(shell.run.seconds)
    return ScriptRun(run, shell.take_lines(), shell if printing else None)


class ExecShell:
    """A shell exec'd in a running container (`kubectl exec`): its output goes to `sink` as
    it is printed, an unknown program is not found (busybox's `sh: X: not found`, status
    127), and it keeps its variables from one command line to the next (an interactive
    `sh`). A script it does not understand prints why on stderr with status 2."""

    def __init__(self, context: ShellContext, sink: Sink) -> None:
        self._shell = _Shell(context, sink=sink)

    @property
    def seconds(self) -> float:
        """How long its commands have taken so far (inf once one waits for ever)."""
        return self._shell.run.seconds

    @property
    def status(self) -> int:
        """The exit status of the last command, or of the shell once it has ended."""
        return self._shell.run.exit_code if self._shell.exited else self._shell.status

    def run_program(self, argv: Sequence[str]) -> bool:
        """Run a program with its arguments, unexpanded; False once the shell has ended."""
        return self.run_script(shlex.join(argv))

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
        self.status = 0
        self.run = CommandRun()
        self._lines: list[tuple[float, str]] = []
        self._partial = ""
        self.endless: list[AndOr] | None = None
        self.exited = False
        """`exit` or `exec` ended the script with the run's exit code."""
        self.started = context.now()

    # output
    def write(self, text: str) -> None:
        if self.sink is not None:
            self.sink(self.run.seconds, STDOUT, text)
            return
        *complete, self._partial = (self._partial + text).split("\n")
        self._lines.extend((self.run.seconds, line) for line in complete)

    def error(self, text: str) -> None:
        """Print to stderr (which a container's log has with its stdout)."""
        if self.sink is not None:
            self.sink(self.run.seconds, STDERR, text)
        else:
            self.write(text)

    def flush(self) -> None:
        if self._partial:
            self._lines.append((self.run.seconds, self._partial))
            self._partial = ""

    def take_lines(self) -> list[tuple[float, str]]:
        lines, self._lines = self._lines, []
        return lines

    def round(self) -> bool:
        """One more round of the endless loop; False when it cannot go on."""
        assert self.endless is not None
        started = self.run.seconds
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
        else:
            self.simple(command)

    def loop(self, loop: Loop) -> None:
        if loop.kind == "for":
            for item in [w for word in loop.items for w in self.expand(word)]:
                self.variables[loop.name] = item
                self.run_list(loop.body)
            return
        if loop.kind == "while" and _always_true(loop.condition):
            self.endless_loop(loop.body)
        for _ in range(MAX_ITERATIONS):
            self.run_list(loop.condition)
            if (self.status == 0) != (loop.kind == "while"):
                self.status = 0
                return
            self.run_list(loop.body)
        raise NotUnderstood("a loop that does not end")

    def endless_loop(self, body: list[AndOr]) -> None:
        """Run the first round; the rest come from the LogStream."""
        if not _only_printing(body):
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

    def assignment(self, word: Word) -> tuple[str, str]:
        """NAME=VALUE: the value expanded but not split."""
        name, _, first = word[0][1].partition("=")
        rest = (text if kind == "lit" else self.expansion(kind, text) for kind, text, _ in word[1:])
        return name, first + "".join(rest)

    def assign(self, name: str, value: str) -> None:
        if name in self.exported:
            self.exported[name] = value
        else:
            self.variables[name] = value

    def program(self, name: str, args: list[str]) -> int:
        builtin = _BUILTINS.get(name)
        if builtin is not None:
            return builtin(self, args)
        before, started = len(self.run.output), self.run.seconds
        status = simple_command([name, *args], self.run)
        if status is None and self.sink is not None:
            self.error(f"sh: {name}: not found\n")
            return 127
        if status is None:
            raise NotUnderstood(name)
        self.flush()  # what it prints comes as it starts (stress reports its end at once too)
        printed, self.run.output[before:] = self.run.output[before:], []
        if self.sink is not None:
            for line in printed:
                self.sink(started, STDOUT, line + "\n")
        else:
            self._lines.extend((started, line) for line in printed)
        if name == "exit":
            shell_exit(self, status)
        return status

    # expansion
    def lookup(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        return self.variables.get(name, self.exported.get(name, ""))

    def expand(self, word: Word) -> list[str]:
        """The fields of a word: unquoted expansions split on blanks."""
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
            expanded = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", r"\1", text)
            return str(_Arithmetic(expanded, self.lookup).value())
        sub = copy.copy(self)
        sub.sink = None  # its output is the expansion's value
        sub.variables, sub.exported = dict(self.variables), dict(self.exported)
        sub._lines, sub._partial = [], ""
        with contextlib.suppress(_Exit):
            sub.run_list(parse(text))
        sub.flush()
        self.run.seconds = sub.run.seconds
        self.status = sub.status
        return "\n".join(line for _, line in sub._lines).rstrip("\n")


def _always_true(condition: list[AndOr]) -> bool:
    if len(condition) != 1 or len(condition[0]) != 1:
        return False
    command = condition[0][0][1]
    return (
        isinstance(command, Simple)
        and len(command.words) == 1
        and command.words[0] in ([("lit", "true", False)], [("lit", ":", False)])
    )


def _simple_commands(commands: list[AndOr]) -> Iterator[Simple]:
    for and_or in commands:
        for _, command in and_or:
            if isinstance(command, Loop):
                yield from _simple_commands(command.condition)
                yield from _simple_commands(command.body)
            else:
                yield command


def _assignment_name(word: Word) -> str:
    """NAME when the word is an assignment NAME=..., else ""."""
    if not word or word[0][0] != "lit" or word[0][2]:
        return ""
    found = _ASSIGNMENT.match(word[0][1])
    return found.group(1) if found else ""


def _name(command: Simple) -> str:
    """The program a command runs, when its first word is a plain literal."""
    words = command.words
    while words and _assignment_name(words[0]):
        words = words[1:]
    first = words[0] if words else []
    if not words:
        return "="
    return first[0][1].rsplit("/", 1)[-1] if len(first) == 1 and first[0][0] == "lit" else ""


def _only_printing(commands: list[AndOr]) -> bool:
    """Nothing in an endless loop's body but output, sleeps and variables."""
    allowed = _PRINTING - {"stress"} | {"sleep", "true", "false", ":", "export", "="}
    return all(_name(c) in allowed for c in _simple_commands(commands))


def _prints(commands: list[AndOr]) -> bool:
    return any(_name(c) in _PRINTING for c in _simple_commands(commands))


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
    _container_state(shell)
    if not args or any(a.startswith("-") for a in args):
        raise NotUnderstood("cat without files")
    status = 0
    for path in args:
        content = shell.context.files.read(path)
        if content is None:
            status = 1
            if shell.context.files.is_dir(path):
                shell.error("cat: read error: Is a directory\n")
            else:
                shell.error(f"cat: can't open '{path}': No such file or directory\n")
        else:
            shell.write(content)
    return status


def _ls(shell: _Shell, args: list[str]) -> int:
    _container_state(shell)
    if len(args) != 1 or args[0].startswith("-"):
        raise NotUnderstood("ls of one directory")
    names = shell.context.files.list(args[0])
    if names is None:
        shell.error(f"ls: {args[0]}: No such file or directory\n")
        return 1
    shell.write("".join(name + "\n" for name in names))
    return 0


def _date(shell: _Shell, args: list[str]) -> int:
    if len(args) > 1 or (args and not args[0].startswith("+")):
        raise NotUnderstood("date with options")
    now = time.gmtime(shell.started + shell.run.seconds)
    shell.write(time.strftime(args[0][1:] if args else BUSYBOX_DATE, now) + "\n")
    return 0


def _export(shell: _Shell, args: list[str]) -> int:
    for arg in args:
        name, equals, value = arg.partition("=")
        if not NAME.fullmatch(name):
            raise NotUnderstood("export")
        shell.exported[name] = value if equals else shell.variables.pop(name, "")
    return 0


def _tail(shell: _Shell, args: list[str]) -> int:
    if args != ["-f", "/dev/null"]:
        raise NotUnderstood("tail")
    shell.run.seconds = math.inf
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
    "tail": _tail,
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
