"""What a simulated container uses over time, and how a node shares CPU among its containers.

Usage is a `Curve`: a piecewise-linear function of the seconds since the container started,
known in full when it starts. So usage at any moment is computed on demand, and the moment a
curve first goes above a limit is computed in advance (`first_above`), for a timer, instead of
sampling every container every second. The annotation syntax of the shapes:

    "200Mi"                                 constant
    "ramp 100Mi 600Mi 60s"                  from 100Mi at the start to 600Mi at 60 s, then held
    "spike 50Mi 400Mi at 30s for 10s"       50Mi, but 400Mi from 30 s to 40 s
    "periodic 100m 900m 60s"                a triangle wave: 100m at the start of every period
                                            of 60 s, 900m halfway through, back to 100m

Amounts are Kubernetes quantities (cpu "500m" or "2", memory "150Mi", pids "20"); durations are
seconds with an optional s, m, h or d unit ("90", "90s", "1.5m").

CPU is compressible (`share_cpu`): a container gets what it demands up to its limit (the CFS
quota; the rest of its demand is throttled) and, when the node's cores cannot satisfy every
container, the cores are shared in proportion to cpu.shares (the request, as the kubelet's
MilliCPUToShares sets it, at least 2 for a container without a request).
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from pinnace.kubelet.commands import duration
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import QuantityError

NANO = 1_000_000_000
MIN_CPU_SHARES = 2
SHARES_PER_CPU = 1024
MAX_AMOUNT = 2**63 - 1
"""The largest amount a usage annotation may give, in its unit (nanocores, bytes, a count): an
int64, as the kubelet's stats and Quantity's fast path count, so every sum of them stays finite."""
LOOK_AHEAD_POINTS = 4096
"""How many breakpoints `first_above_sum` sweeps before it stops and asks to be called again
from there (periodic curves have infinitely many)."""

Point = tuple[float, float]


class UsageSyntaxError(ValueError):
    """A usage value that does not parse; the message says what is expected."""


@dataclass(frozen=True)
class Curve:
    """Usage against the seconds since the container started. `points` are (seconds, amount)
    in time order from 0; two points at one time make a step. After the last point its amount
    holds, or, with a `period`, the points repeat every period."""

    points: tuple[Point, ...]
    period: float = 0.0
    times: tuple[float, ...] = field(init=False, repr=False, compare=False)
    constant_amount: float | None = field(init=False, repr=False, compare=False)
    """The amount at every moment of a curve that never changes, else None."""

    def __post_init__(self) -> None:
        # Frozen, so set once here: at() runs for every container whenever stats are read.
        object.__setattr__(self, "times", tuple(t for t, _ in self.points))
        amounts = {v for _, v in self.points}
        object.__setattr__(self, "constant_amount", amounts.pop() if len(amounts) == 1 else None)

    @staticmethod
    @functools.lru_cache(maxsize=1024, typed=True)
    def constant(amount: float) -> Curve:
        # Curves are immutable, so the containers of one steady amount (most of them, at
        # 110 pods a node) share one.
        return Curve(((0.0, amount),))

    @property
    def peak(self) -> float:
        return max(v for _, v in self.points)

    def at(self, t: float) -> float:
        """The amount at `t` seconds (after a step, the amount the step goes to)."""
        if self.constant_amount is not None:
            return self.constant_amount
        t = self._local(t)
        return self._between(bisect.bisect_right(self.times, t), t)

    def breakpoints(self, after: float) -> Iterator[tuple[float, float]]:
        """(time, phase) of each moment after `after` where the curve bends or steps, in
        order, without end for a periodic curve. The phase is the moment's own point time, exact
        (a period's end is the next one's start), for `bend`."""
        if self.constant_amount is not None:
            return
        times = sorted(set(self.times))
        if not self.period:
            yield from ((t, t) for t in times if t > after)
            return
        cycle = math.floor(max(after, 0.0) / self.period)
        while True:
            base = cycle * self.period
            yield from ((base + t, t) for t in times if t < self.period and base + t > after)
            cycle += 1

    def bend(self, phase: float) -> tuple[float, float]:
        """At the breakpoint `phase`: how far the amount steps, and its slope after."""
        i = bisect.bisect_right(self.times, phase)
        step = self._between(i, phase) - self._between(bisect.bisect_left(self.times, phase), phase)
        if i == 0 or i >= len(self.points):
            return step, 0.0
        (t0, v0), (t1, v1) = self.points[i - 1], self.points[i]
        return step, (v1 - v0) / (t1 - t0)

    def slope(self, t: float) -> float:
        """How fast the amount changes just after `t`, per second."""
        if self.constant_amount is not None:
            return 0.0
        return self.bend(self._local(t))[1]

    def _local(self, t: float) -> float:
        return math.fmod(t, self.period) if self.period and t > 0 else t

    def _between(self, i: int, t: float) -> float:
        if i == 0:
            return self.points[0][1]
        if i >= len(self.points):
            return self.points[-1][1]
        (t0, v0), (t1, v1) = self.points[i - 1], self.points[i]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


@dataclass(frozen=True)
class Started:
    """A curve placed on the clock: its second 0 is `start`."""

    curve: Curve
    start: float

    def at(self, t: float) -> float:
        return self.curve.at(t - self.start)


def first_above(curve: Curve, limit: float, since: float = 0.0) -> float | None:
    """The first time at or after `since` (seconds from the curve's start) the curve goes above
    `limit`: the moment it reaches the limit on its way past it, or None if it never does."""
    if curve.peak <= limit:
        return None
    found, _ = first_above_sum([Started(curve, 0.0)], limit, since, math.inf)
    return found


def first_above_sum(
    curves: Sequence[Started], limit: float, since: float, until: float
) -> tuple[float | None, float]:
    """When the sum of `curves` first goes above `limit` between `since` and `until`, and how
    far the search got: (time, _) when found, (None, until) when the sum stays within the limit
    to `until`, (None, t) when it stopped early at t (after LOOK_AHEAD_POINTS breakpoints: ask
    again at t).

    A sweep over the curves' breakpoints in time order: between two breakpoints the sum is a
    line, so only the curve that bends or steps at a breakpoint is looked at there."""
    value = sum(c.at(since) for c in curves)
    if value > limit:
        return since, since
    slopes = [c.curve.slope(since - c.start) for c in curves]
    slope = sum(slopes)
    events = heapq.merge(*(_breakpoints(c, i, since) for i, c in enumerate(curves)))
    previous, seen = since, 0
    for t, group in itertools.groupby(events, key=lambda event: event[0]):
        if t > until:
            break
        if seen >= LOOK_AHEAD_POINTS:
            return None, previous
        arriving = value + slope * (t - previous)
        if arriving > limit:
            return previous + (limit - value) / slope, t
        value = arriving
        for _, i, phase in group:
            seen += 1
            step, new_slope = curves[i].curve.bend(phase)
            value += step
            slope += new_slope - slopes[i]
            slopes[i] = new_slope
        if value > limit:
            return t, t
        previous = t
    if slope > 0 and value + slope * (until - previous) > limit:
        return previous + (limit - value) / slope, until
    return None, until


def _breakpoints(started: Started, index: int, since: float) -> Iterator[tuple[float, int, float]]:
    """(clock time, `index`, phase) of each breakpoint of a started curve after `since`."""
    for t, phase in started.curve.breakpoints(since - started.start):
        yield started.start + t, index, phase


def share_cpu(wants: Sequence[float], shares: Sequence[int], capacity: float) -> list[float]:
    """What each container gets of `capacity` when it wants `wants` (already capped at its
    limit): all of it when everything fits, else the cores are divided in proportion to
    `shares`, and what a container does not want of its part goes to the others."""
    if sum(wants) <= capacity:
        return list(wants)
    got = [0.0] * len(wants)
    hungry = [i for i, want in enumerate(wants) if want > 0]
    left = capacity
    while hungry:
        weight = sum(shares[i] for i in hungry)
        sated = [i for i in hungry if wants[i] <= left * shares[i] / weight]
        if not sated:
            for i in hungry:
                got[i] = left * shares[i] / weight
            break
        for i in sated:
            got[i] = wants[i]
            left -= wants[i]
        hungry = [i for i in hungry if i not in sated]
    return got


def cpu_shares(milli_cpu_request: int) -> int:
    """cpu.shares for a CPU request, as the kubelet's MilliCPUToShares."""
    return max(milli_cpu_request * SHARES_PER_CPU // 1000, MIN_CPU_SHARES)


# --- the annotation syntax ------------------------------------------------------------------

SHAPES = (
    'a quantity, "ramp FROM TO DURATION", "spike BASE PEAK at TIME for DURATION" or '
    '"periodic LOW HIGH PERIOD"'
)


# Curves are immutable: the pods of a workload repeat a few hundred annotation values (a
# drawn usage in millicores), each parsed once.
@functools.lru_cache(maxsize=4096)
def parse_curve(text: str, resource: str) -> Curve:
    """A curve from its annotation text; amounts in the units `amount` gives `resource`.
    Raises UsageSyntaxError."""
    words = text.split()
    match words:
        case [value]:
            return Curve.constant(amount(value, resource))
        case ["ramp", start, end, over]:
            seconds = _positive_duration(over)
            return Curve(((0.0, amount(start, resource)), (seconds, amount(end, resource))))
        case ["spike", base, peak, "at", when, "for", lasting]:
            low, high = amount(base, resource), amount(peak, resource)
            at, until = _duration(when), _duration(when) + _positive_duration(lasting)
            return Curve(((0.0, low), (at, low), (at, high), (until, high), (until, low)))
        case ["periodic", low, high, every]:
            period = _positive_duration(every)
            lo, hi = amount(low, resource), amount(high, resource)
            return Curve(((0.0, lo), (period / 2, hi), (period, lo)), period)
    raise UsageSyntaxError(f"must be {SHAPES}")


def amount(text: str, resource: str) -> float:
    """A quantity in the unit usage is kept in: nanocores for cpu, bytes for memory and
    ephemeral-storage, a count for pids."""
    # The forms workload generators write (`sim.arrivals`: "250m" of cpu, a count of bytes),
    # whole numbers, without a quantity's parse: each pod has values of its own.
    milli = resource == "cpu" and text.endswith("m")
    digits = text[:-1] if milli else text
    if digits.isascii() and digits.isdigit():
        unit = NANO // 1000 if milli else NANO if resource == "cpu" else 1
        whole = int(digits) * unit
        if whole > MAX_AMOUNT:
            raise UsageSyntaxError(f'"{text}" is too large')
        return float(whole)
    try:
        quantity = parse_quantity(text)
    except (QuantityError, ValueError):
        raise UsageSyntaxError(f'"{text}" is not a quantity: must be {SHAPES}') from None
    if quantity.sign() < 0:
        raise UsageSyntaxError(f'"{text}" is negative')
    exact: Fraction = quantity.as_fraction()
    counted = exact * NANO if resource == "cpu" else Fraction(math.ceil(exact))
    if counted > MAX_AMOUNT:
        raise UsageSyntaxError(f'"{text}" is too large')
    return float(counted)


def _duration(text: str) -> float:
    seconds = duration(text)
    if seconds is None or seconds == math.inf:
        raise UsageSyntaxError(f'"{text}" is not a duration such as 30s, 2m or 90')
    return seconds


def _positive_duration(text: str) -> float:
    seconds = _duration(text)
    if seconds <= 0:
        raise UsageSyntaxError(f'"{text}" must be a duration above zero')
    return seconds
