"""Periodic work that skips the passes which could change nothing (wait.Until, made lazy).

kube-controller-manager and the kubelet run much of their work as a pass every period
(`wait.Until`: the next pass `period` after the last one ends). Most of those passes, in a
cluster where nothing happens, find nothing to do; on the virtual clock each still costs a
timer and a walk over every object, so a simulated month costs a month of passes.

`Periodic` runs such a pass on the same times, but the pass says when a pass could next change
anything (`Pass`: the earliest lease expiry, TTL, GC threshold, back-off…) and the passes before
then are skipped: the loop sleeps to the first pass at or after that time on the pass's own grid
(`period` apart after the last pass run), so a pass that runs comes at exactly the instant it
would have come. Whatever could change the outcome sooner (an informer's event, a node failing)
calls `wake()`: the next pass on the grid then runs as usual. A pass that cannot tell returns
None and the next comes `period` later, as with wait.Until.

`pass_after(t)` tells when the first pass after `t` was (run or skipped), for a component that
reconstructs what a skipped pass would have noted (the node lifecycle controller's probe
timestamps).

`Alarm`, the sleep that `wake()` cuts short, serves loops with a grid of their own (the node
pool's heartbeat wheel).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable

from pinnace.clock.clock import Clock, resolve

PASSES_KEPT = 64
"""The passes run that are remembered for `pass_after` (each with its skipped successors)."""

Pass = Callable[[], Awaitable[float | None]]
"""One pass; it returns the earliest time (seconds since the epoch, as `Clock.now`) at which a
pass could change anything, `math.inf` for not until woken, None for the next period as
usual."""


class Alarm:
    """A sleep until a time that `ring()` cuts short. A ring while no one sleeps is kept for
    the next sleep (a change made while the sleeper was busy is not missed)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.rung = False
        """Rung since the last `clear` or the end of the last sleep."""
        self._waiter: asyncio.Future[None] | None = None

    def ring(self) -> None:
        self.rung = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def clear(self) -> None:
        self.rung = False

    async def sleep_until(self, when: float) -> bool:
        """Sleep until `when` (seconds since the epoch; infinite: until rung) or a ring,
        whichever comes first; whether it was rung."""
        if not self.rung:
            self._waiter = waiter = self._clock.loop.create_future()
            timer = None
            if when < math.inf:
                timer = self._clock.call_at(when, resolve, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
        rung, self.rung = self.rung, False
        return rung


class Periodic:
    """Runs `work` every `period` seconds of `clock`, skipping the passes it says are
    pointless; `run()` is the component's task."""

    def __init__(self, clock: Clock, period: float, work: Pass) -> None:
        self._clock = clock
        self.period = period
        self._work = work
        self._alarm = Alarm(clock)
        self._runs: deque[tuple[float, float]] = deque(maxlen=PASSES_KEPT)
        """(start, end) of the last passes run, oldest first."""
        self.passes = 0
        """Passes run so far (skipped ones not counted)."""

    def wake(self) -> None:
        """Something changed that the next pass should see: it is not skipped."""
        self._alarm.ring()

    async def run(self) -> None:
        while True:
            self._alarm.clear()
            start = self._clock.now()
            outcome = await self._work()
            end = self._clock.now()
            self.passes += 1
            self._runs.append((start, end))
            if outcome is None or self._alarm.rung:
                outcome = end
            at = self._grid_at_or_after(end, outcome)
            if at > end + self.period and await self._alarm.sleep_until(at):
                at = self._grid_at_or_after(end, self._clock.now())  # woken: the next pass
            await self._clock.sleep_until(at)

    def pass_after(self, t: float) -> float:
        """When the first pass after `t` came, run or skipped (now, when none has yet)."""
        runs = list(self._runs)
        for i, (start, end) in enumerate(runs):
            if start > t:
                return start
            following = runs[i + 1][0] if i + 1 < len(runs) else self._clock.now()
            skipped = self._grid_after(end, t)
            if skipped < following:
                return skipped
        return self._clock.now()

    def _grid_after(self, end: float, t: float) -> float:
        """The first time later than `t` of the grid of the pass that ended at `end` (`period`
        apart from `end` on, `end` left out)."""
        k = max(1, math.floor((t - end) / self.period))
        while k > 1 and end + (k - 1) * self.period > t:
            k -= 1
        while end + k * self.period <= t:
            k += 1
        return end + k * self.period

    def _grid_at_or_after(self, end: float, t: float) -> float:
        """The first time not before `t` of the grid of the pass that ended at `end`."""
        if t == math.inf:
            return math.inf
        return self._grid_after(end, math.nextafter(t, -math.inf))
