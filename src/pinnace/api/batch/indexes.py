"""Completion indexes written as text (`1,3-5,8`), checked as Kubernetes v1.32's Job
validation checks them (validateIndexesFormat, parseIndexInterval): in a success policy's
succeededIndexes, and in status.completedIndexes and status.failedIndexes.
"""

from __future__ import annotations

import re

_GO_ATOI = re.compile(r"[+-]?[0-9]+")
_INT_MAX = 2**63 - 1


class IndexesError(ValueError):
    """Why the text is not a list of increasing indexes below the completions."""


def _atoi(text: str) -> int:
    """strconv.Atoi: an optional sign and decimal digits, nothing else, within int64."""
    if not _GO_ATOI.fullmatch(text) or not -_INT_MAX - 1 <= int(text) <= _INT_MAX:
        raise IndexesError(f'cannot convert string to integer for index: "{text}"')
    return int(text)


def parse_interval(text: str, completions: int) -> tuple[int, int]:
    """One interval, `x` or `x-y` with x < y, both below `completions`."""
    limits = text.split("-")
    if len(limits) > 2:
        raise IndexesError(
            f'the fragment "{text}" violates the requirement that an index interval can have '
            "at most two parts separated by '-'"
        )
    first = _atoi(limits[0])
    if first >= completions:
        raise IndexesError(f'too large index: "{limits[0]}"')
    if len(limits) == 1:
        return first, first
    last = _atoi(limits[1])
    if last >= completions:
        raise IndexesError(f'too large index: "{limits[1]}"')
    if first >= last:
        raise IndexesError(f"non-increasing order, previous: {first}, current: {last}")
    return first, last


def intervals(text: str, completions: int) -> list[tuple[int, int]]:
    """The intervals of well-formed text, in order; raises IndexesError otherwise."""
    if not text:
        return []
    parsed: list[tuple[int, int]] = []
    for part in text.split(","):
        first, last = parse_interval(part, completions)
        if parsed and parsed[-1][1] >= first:
            raise IndexesError(f"non-increasing order, previous: {parsed[-1][1]}, current: {first}")
        parsed.append((first, last))
    return parsed


def count_indexes(text: str, completions: int) -> int:
    """How many indexes well-formed text names; raises IndexesError otherwise."""
    return sum(last - first + 1 for first, last in intervals(text, completions))
