"""Times as Kubernetes writes them: RFC 3339 in UTC.

`metav1.Time` marshals as `2025-01-01T00:00:00Z` (whole seconds) and `metav1.MicroTime`
(Lease and Event fields) as `2025-01-01T00:00:00.000000Z`. Go truncates the digits it does not
show; Pinnace's times are floats with sub-microsecond error, so they are first rounded to the
nearest microsecond (an instant meant as 12.000001 s must not print as 12.000000) and then
truncated like Go.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta, timezone

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)


def _utc(t: float) -> tuple[datetime, int]:
    micros = round(t * 1_000_000)
    return _EPOCH + timedelta(microseconds=micros), micros % 1_000_000


def _seconds(d: datetime) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"


def format_time(t: float) -> str:
    """`metav1.Time` for `t` seconds since the Unix epoch: `2025-01-01T00:00:00Z`."""
    return _format_second(round(t * 1_000_000) // 1_000_000)


@functools.lru_cache(maxsize=64)
def _format_second(second: int) -> str:
    # One string for every timestamp of one second: objects written in the same second (at
    # 110 pods a node, thousands) share it instead of each holding a copy.
    return _seconds(_EPOCH + timedelta(seconds=second)) + "Z"


def second_instant(t: float) -> float:
    """`t` as a Time holds it: `parse_time(format_time(t))`, without the text."""
    return float(round(t * 1_000_000) // 1_000_000)


def format_micro_time(t: float) -> str:
    """`metav1.MicroTime` for `t` seconds since the Unix epoch: `2025-01-01T00:00:00.000000Z`."""
    second, micros = divmod(round(t * 1_000_000), 1_000_000)
    return f"{_format_second(second)[:-1]}.{micros:06d}Z"


def go_fraction(t: float) -> tuple[datetime, str]:
    """`t`'s second and its fraction as Go's `.999999999` layouts print it: `.5` for half a
    second, nothing for none (to the microsecond the float holds)."""
    d, micros = _utc(t)
    fraction = f".{micros:06d}".rstrip("0").rstrip(".")
    return d.replace(microsecond=0), fraction


def go_time_string(t: float) -> str:
    """Go's `time.Time.String()` of `t` in UTC, as `%v` and field errors print a Time:
    `2025-01-01 00:00:00.5 +0000 UTC`."""
    d, fraction = go_fraction(t)
    return d.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"


def format_nano_time(t: float) -> str:
    """Go's RFC3339Nano for `t`, as a `metav1.Time` prints through its text marshaller:
    `2025-01-01T00:00:00.5Z`."""
    d, fraction = go_fraction(t)
    return f"{_seconds(d)}{fraction}Z"


def micro_instant(t: float) -> float:
    """`t` as a MicroTime holds it: `parse_time(format_micro_time(t))`, without the text."""
    micros = round(t * 1_000_000)
    return micros // 1_000_000 + (micros % 1_000_000) / 1_000_000


@functools.lru_cache(maxsize=4096)
def parse_time(text: str) -> float:
    """Seconds since the Unix epoch for an RFC 3339 time, with or without fraction or offset.
    The times of the objects a controller sorts or compares over and over (pods' creation,
    leases' renewal) are read once each."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise ValueError(f'invalid time "{text}": want RFC 3339, e.g. "2025-01-01T00:00:00Z"')
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    try:
        if zone == "Z":
            tz = UTC
        else:
            sign = -1 if zone[0] == "-" else 1
            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
        d = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=tz
        )
    except ValueError as err:
        raise ValueError(f'invalid time "{text}": {err}') from None
    whole = (d - _EPOCH) // timedelta(seconds=1)
    return whole + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)
