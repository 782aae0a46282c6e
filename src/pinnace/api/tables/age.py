"""Ages and durations as kubectl shows them: apimachinery's duration.HumanDuration, which keeps
two or three significant figures ("45s", "3m2s", "25m", "5h4m", "10d", "2y3d")."""

from __future__ import annotations

from typing import Any

from pinnace.clock.rfc3339 import parse_time

UNKNOWN = "<unknown>"


def human_duration(seconds: float) -> str:
    """`seconds` as duration.HumanDuration prints a time.Duration of that length."""
    whole = int(seconds)  # Go truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 field value; None for a missing (zero) time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def since(value: Any, now: float) -> str:
    """The age of a timestamp field, `<unknown>` when it is not set (translateTimestampSince)."""
    then = timestamp(value)
    return UNKNOWN if then is None else human_duration(now - then)
