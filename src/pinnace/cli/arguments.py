"""Argument types the `pinnace` commands share: whole numbers with a least value, positive
Go durations (in seconds) and Go booleans. A bad value is argparse's one-line error, never a
traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from pinnace.clock import parse_duration


def whole(minimum: int = 0) -> Callable[[str], int]:
    """A whole number of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


def positive_duration(example: str) -> Callable[[str], float]:
    """A Go duration above zero, in seconds; `example` is shown in the error."""

    def parse(text: str) -> float:
        try:
            seconds = parse_duration(text) / 1e9
        except ValueError:
            seconds = -1.0
        if seconds <= 0:
            raise argparse.ArgumentTypeError(
                f"must be a positive duration such as {example}, not {text!r}"
            )
        return seconds

    return parse


def non_negative_duration(example: str) -> Callable[[str], float]:
    """A Go duration of zero or more, in seconds; `example` is shown in the error."""

    def parse(text: str) -> float:
        try:
            seconds = parse_duration(text) / 1e9
        except ValueError:
            seconds = -1.0
        if seconds < 0:
            raise argparse.ArgumentTypeError(f"must be a duration such as {example}, not {text!r}")
        return seconds

    return parse


def add_durations(
    group: argparse._ArgumentGroup,
    durations: Mapping[str, tuple[float, str]],
    example: str,
    prefix: str = "",
) -> None:
    """A positive-duration flag `--PREFIXFLAG` for each of `durations` (flag -> its default in
    seconds and what it sets); `example` is shown in the help and the errors."""
    for flag, (default, what) in durations.items():
        group.add_argument(
            f"--{prefix}{flag}",
            type=positive_duration(example),
            default=default,
            metavar="DURATION",
            help=f"{what} ({default:g}s); a Go duration such as {example}",
        )


def go_bool(text: str) -> bool:
    """A boolean as Go's flag package reads one (strconv.ParseBool)."""
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, not {text!r}")
