"""Well-known commands behave as they would for real, so documentation examples do what the
documentation says: `sleep 30` runs 30 s and exits 0, `sh -c "exit 1"` fails at once,
`sh -c "echo hello; sleep 5"` prints hello and ends after 5 s, `sleep infinity` never ends.

A command (command then args) made only of `sleep`, `exit`, `echo`, `true` and `false`, run
directly or as an `sh -c`/`bash -c` script of `;`, `&&` and `||` lists, gives its run time,
exit code and output. Anything else (a server, a loop) is not understood and runs forever.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

SHELLS = ("sh", "bash", "ash", "dash")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class CommandRun:
    seconds: float = 0.0
    exit_code: int = 0
    output: list[str] = field(default_factory=list)


def command_run(argv: Sequence[str]) -> CommandRun | None:
    """What running `argv` does, or None when the command is not one this understands."""
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    if program in SHELLS and len(argv) >= 3 and argv[1] == "-c":
        return _script(argv[2])
    return _script(shlex.join(argv))


def _script(text: str) -> CommandRun | None:
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return None
    run = CommandRun()
    words: list[str] = []
    skip = False  # the next command is skipped by && after a failure or || after a success
    for token in [*tokens, ";"]:
        if token not in (";", "&&", "||", "\n"):
            words.append(token)
            continue
        if words and not skip:
            status = _simple(words, run)
            if status is None:
                return None
            if words[0] == "exit":
                return run
            run.exit_code = status
        words = []
        skip = (token == "&&" and run.exit_code != 0) or (token == "||" and run.exit_code == 0)
    return run


def _simple(words: list[str], run: CommandRun) -> int | None:
    """Run one simple command; its exit status, or None when it is not understood."""
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name == "sleep":
        seconds = [_duration(a) for a in args]
        if not seconds or any(s is None for s in seconds):
            return None
        run.seconds += sum(s for s in seconds if s is not None)
        return 0
    if name == "exit":
        code = int(args[0]) if args and args[0].isdigit() else 0
        run.exit_code = code % 256
        return run.exit_code
    if name == "echo":
        run.output.append(" ".join(args))
        return 0
    if name == "true" and not args:
        return 0
    if name == "false" and not args:
        return 1
    return None


def _duration(text: str) -> float | None:
    """sleep's argument: a number with an optional s/m/h/d unit, or infinity."""
    if text in ("infinity", "inf"):
        return math.inf
    unit = text[-1:] if text[-1:] in _DURATION_UNITS else ""
    try:
        value = float(text[:-1] if unit else text)
    except ValueError:
        return None
    return value * _DURATION_UNITS.get(unit, 1) if value >= 0 else None
