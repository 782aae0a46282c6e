"""Cron schedules as Kubernetes v1.32 reads them: github.com/robfig/cron/v3's ParseStandard
(five fields, `@hourly`-style descriptors, `@every <duration>`, a `TZ=`/`CRON_TZ=` prefix) and
its Next, which both kube-apiserver's validation and the CronJob controller use.

Pinnace has its own small parser rather than a Python cron library so that a bad schedule
gets kube-apiserver's very words (robfig/cron's error messages) and the rare corners behave as
the Go library does: `*/N` no longer counts as a star for the day-of-month/day-of-week rule,
`N/step` runs from N to the field's maximum, a step larger than the range keeps only its start,
an impossible date (`0 0 31 2 *`) finds no time within five years.

Times are seconds since the epoch. A schedule without a time zone runs in UTC, the time zone
of a kube-controller-manager on a typical control-plane node.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

STAR_BIT = 1 << 63


class CronError(ValueError):
    """The schedule does not parse; the message is robfig/cron's."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int]


_SECONDS = _Bounds(0, 59, {})
_MINUTES = _Bounds(0, 59, {})
_HOURS = _Bounds(0, 23, {})
_DOM = _Bounds(1, 31, {})
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MONTHS = _Bounds(1, 12, {m: i + 1 for i, m in enumerate(_MONTH_NAMES)})
_DOW = _Bounds(0, 6, {d: i for i, d in enumerate(_DAY_NAMES)})


def load_location(name: str) -> tzinfo:
    """time.LoadLocation: "" and "UTC" are UTC, "Local" the controller's own time zone (UTC
    here); an unknown name fails in Go's words."""
    if name in ("", "UTC", "Local"):
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as e:
        raise CronError(f"unknown time zone {name}") from e


# --- schedules --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecSchedule:
    """A schedule of bit sets, one per field (bit N set: value N matches)."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: tzinfo

    def next(self, t: float) -> float | None:
        """The first activation strictly after `t`; None when there is none within five years
        (SpecSchedule.Next)."""
        return _Next(self, t).run()


@dataclass(frozen=True)
class ConstantDelaySchedule:
    """`@every <duration>`: every `delay` seconds (at least one, whole seconds)."""

    delay: int

    def next(self, t: float) -> float | None:
        return math.floor(t) + self.delay


Schedule = SpecSchedule | ConstantDelaySchedule


def parse_standard(spec: str) -> Schedule:
    """cron.ParseStandard: `minute hour day-of-month month day-of-week`, or a descriptor."""
    if not spec:
        raise CronError("empty spec string")
    location: tzinfo = UTC
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space == -1:
            raise CronError(f"invalid location descriptior: {spec}")
        name = spec[spec.index("=") + 1 : space]
        try:
            location = load_location(name)
        except CronError as e:
            raise CronError(f"provided bad location {name}: {e}") from None
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _descriptor(spec, location)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return _schedule(("0", *fields), location)


def _schedule(fields: tuple[str, ...], location: tzinfo) -> SpecSchedule:
    second, minute, hour, dom, month, dow = fields
    return SpecSchedule(
        second=_field(second, _SECONDS),
        minute=_field(minute, _MINUTES),
        hour=_field(hour, _HOURS),
        dom=_field(dom, _DOM),
        month=_field(month, _MONTHS),
        dow=_field(dow, _DOW),
        location=location,
    )


_DESCRIPTORS = {
    "@yearly": ("0", "0", "0", "1", "1", "*"),
    "@annually": ("0", "0", "0", "1", "1", "*"),
    "@monthly": ("0", "0", "0", "1", "*", "*"),
    "@weekly": ("0", "0", "0", "*", "*", "0"),
    "@daily": ("0", "0", "0", "*", "*", "*"),
    "@midnight": ("0", "0", "0", "*", "*", "*"),
    "@hourly": ("0", "0", "*", "*", "*", "*"),
}
_EVERY = "@every "


def _descriptor(spec: str, location: tzinfo) -> Schedule:
    if spec in _DESCRIPTORS:
        return _schedule(_DESCRIPTORS[spec], location)
    if spec.startswith(_EVERY):
        try:
            seconds = parse_go_duration(spec[len(_EVERY) :])
        except CronError as e:
            raise CronError(f"failed to parse duration {spec}: {e}") from None
        return ConstantDelaySchedule(max(1, math.floor(seconds)))
    raise CronError(f"unrecognized descriptor: {spec}")


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _range(expr, bounds)
    return bits


def _range(expr: str, bounds: _Bounds) -> int:
    """getRange: `*`, `?`, `N`, `N-M`, each with an optional `/step`."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, STAR_BIT
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if single:
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    return sum(1 << i for i in range(start, end + 1, step)) | extra


def _int_or_name(expr: str, names: dict[str, int]) -> int:
    if expr.lower() in names:
        return names[expr.lower()]
    return _parse_int(expr)


_ATOI = re.compile(r"[+-]?[0-9]+")


def _parse_int(expr: str) -> int:
    """mustParseInt, with strconv.Atoi's errors."""
    if not _ATOI.fullmatch(expr):
        raise CronError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'
        )
    number = int(expr)
    if not -(2**63) <= number < 2**63:
        raise CronError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": value out of range'
        )
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {expr}")
    return number


# --- Go durations -----------------------------------------------------------------------------

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")


def parse_go_duration(text: str) -> float:
    """time.ParseDuration, in seconds: `1h30m`, `90s`, `1.5h`."""
    quoted = f'"{text}"'
    rest = text
    sign = 1.0
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise CronError(f"time: invalid duration {quoted}")
    total = 0.0
    while rest:
        match = _DURATION_PART.match(rest)
        number, unit = (match.group(1), match.group(2)) if match else ("", "")
        if number in ("", "."):
            raise CronError(f"time: invalid duration {quoted}")
        if not unit:
            raise CronError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise CronError(f'time: unknown unit "{unit}" in duration {quoted}')
        total += float(number) * _UNITS[unit]
        rest = rest[len(number) + len(unit) :]
    return sign * total


# --- Next -------------------------------------------------------------------------------------


class _Wrap(Exception):
    """A field rolled over: start again from the month."""


class _Next:
    """SpecSchedule.Next: walk months, days, hours, minutes and seconds forward until each
    matches, in the schedule's time zone, as the Go library does (DST included: a day step that
    lands off midnight is pulled back to it)."""

    def __init__(self, schedule: SpecSchedule, t: float) -> None:
        self.s = schedule
        self.loc = schedule.location
        self.t = self._at(math.floor(t) + 1)
        self.added = False

    def _at(self, epoch: float) -> datetime:
        return datetime.fromtimestamp(epoch, self.loc)

    def _date(self, year: int, month: int, day: int, hour: int = 0) -> datetime:
        """time.Date with normalisation of a month or day past its end."""
        year += (month - 1) // 12
        month = (month - 1) % 12 + 1
        wall = datetime(year, month, 1, hour) + timedelta(days=day - 1)
        return datetime(wall.year, wall.month, wall.day, wall.hour, tzinfo=self.loc)

    def _add(self, seconds: int) -> None:
        self.t = self._at(self.t.timestamp() + seconds)

    def run(self) -> float | None:
        year_limit = self.t.year + 5
        while True:
            if self.t.year > year_limit:
                return None
            try:
                self._months()
                self._days()
                self._hours()
                self._minutes()
                self._seconds()
            except _Wrap:
                continue
            return self.t.timestamp()

    def _months(self) -> None:
        while not (1 << self.t.month) & self.s.month:
            if not self.added:
                self.added = True
                self.t = self._date(self.t.year, self.t.month, 1)
            t = self.t
            self.t = self._date(t.year, t.month + 1, t.day, t.hour)
            if self.t.month == 1:
                raise _Wrap

    def _day_matches(self) -> bool:
        dom = bool((1 << self.t.day) & self.s.dom)
        dow = bool((1 << ((self.t.weekday() + 1) % 7)) & self.s.dow)
        if self.s.dom & STAR_BIT or self.s.dow & STAR_BIT:
            return dom and dow
        return dom or dow

    def _days(self) -> None:
        while not self._day_matches():
            if not self.added:
                self.added = True
                self.t = self._date(self.t.year, self.t.month, self.t.day)
            t = self.t
            self.t = self._date(t.year, t.month, t.day + 1, t.hour)
            if self.t.hour != 0:
                hour = self.t.hour
                self._add((24 - hour) * 3600 if hour > 12 else -hour * 3600)
            if self.t.day == 1:
                raise _Wrap

    def _hours(self) -> None:
        while not (1 << self.t.hour) & self.s.hour:
            if not self.added:
                self.added = True
                self.t = self._date(self.t.year, self.t.month, self.t.day, self.t.hour)
            self._add(3600)
            if self.t.hour == 0:
                raise _Wrap

    def _minutes(self) -> None:
        while not (1 << self.t.minute) & self.s.minute:
            if not self.added:
                self.added = True
                self.t = self._at(self.t.timestamp() // 60 * 60)
            self._add(60)
            if self.t.minute == 0:
                raise _Wrap

    def _seconds(self) -> None:
        while not (1 << self.t.second) & self.s.second:
            if not self.added:
                self.added = True
                self.t = self._at(math.floor(self.t.timestamp()))
            self._add(1)
            if self.t.second == 0:
                raise _Wrap
