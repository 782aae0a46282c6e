"""The clock components hold: what time it is, and work scheduled for later.

One class serves both modes. On a real asyncio loop, `now()` is the loop's monotonic time plus
the wall-clock offset measured when the Clock was made (so it tracks `time.time()` but never
steps backwards with NTP); on a `VirtualEventLoop`, whose time is already seconds since the
epoch, it is the loop's time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol, TypeVarTuple

from pinnace.clock.loop import VirtualEventLoop
from pinnace.clock.rfc3339 import format_micro_time, format_time

_Ts = TypeVarTuple("_Ts")


class Timer(Protocol):
    """A callback scheduled for later (an asyncio `TimerHandle`)."""

    def cancel(self) -> None:
        """Stop the callback from running, if it has not run yet."""

    def cancelled(self) -> bool: ...


class Clock:
    """Time and timers for components, backed by an asyncio event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._offset = 0.0 if isinstance(loop, VirtualEventLoop) else time.time() - loop.time()
        if isinstance(loop, VirtualEventLoop):
            # Its time is epoch seconds already: `now` is the loop's own, one call fewer on a
            # read the scheduler alone makes some twenty times a pod.
            self.now = loop.time  # type: ignore[method-assign]

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def now(self) -> float:
        """Seconds since the Unix epoch."""
        return self._loop.time() + self._offset

    def now_rfc3339(self) -> str:
        """Now as a `metav1.Time`: `2025-01-01T00:00:00Z`."""
        return format_time(self.now())

    def now_rfc3339_micro(self) -> str:
        """Now as a `metav1.MicroTime` (Lease, Event): `2025-01-01T00:00:00.000000Z`."""
        return format_micro_time(self.now())

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        return self._loop.time()

    def loop_time(self, when: float) -> float:
        """`when`, seconds since the Unix epoch, on the loop's clock (`asyncio.timeout_at`);
        exactly `when` on the virtual loop."""
        return when - self._offset

    def call_later(self, delay: float, callback: Callable[[*_Ts], object], *args: *_Ts) -> Timer:
        return self._loop.call_later(delay, callback, *args)

    def call_at(self, when: float, callback: Callable[[*_Ts], object], *args: *_Ts) -> Timer:
        """Run `callback(*args)` at `when`, seconds since the Unix epoch."""
        return self._loop.call_at(self.loop_time(when), callback, *args)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)

    async def sleep_until(self, when: float) -> None:
        """Sleep until `when`, seconds since the Unix epoch (exactly `when` on the virtual
        loop, where `sleep(when - now())` may be off by a rounding)."""
        if when <= self.now():
            await asyncio.sleep(0)
            return
        waiter = self._loop.create_future()
        timer = self.call_at(when, resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()


def resolve(waiter: asyncio.Future[None]) -> None:
    """Let whoever awaits `waiter` go on, unless it has been already (a timer's callback)."""
    if not waiter.done():
        waiter.set_result(None)
