"""The simulation driver's handle on virtual time: a Clock that also runs its loop."""

from __future__ import annotations

from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

from pinnace.clock.clock import Clock
from pinnace.clock.loop import DEFAULT_EPOCH, VirtualEventLoop

_T = TypeVar("_T")


class VirtualClock(Clock):
    """A Clock on a fresh `VirtualEventLoop`, with the controls a simulation driver needs.

    Components get it (or any Clock) and schedule work; the driver moves time forward with
    `advance`, `run_until`, `run_until_idle` or `run`.
    """

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        self._virtual_loop = VirtualEventLoop(start)
        super().__init__(self._virtual_loop)

    @property
    def loop(self) -> VirtualEventLoop:
        return self._virtual_loop

    @property
    def events_processed(self) -> int:
        """Callbacks run so far: timers, `call_soon` callbacks and task steps."""
        return self._virtual_loop.events_processed

    def run_until(self, when: float) -> None:
        """Run everything due at or before `when` (epoch seconds); now() is then `when`."""
        self._virtual_loop.run_until(when)

    def advance(self, seconds: float) -> None:
        """Run the next `seconds` of virtual time."""
        self._virtual_loop.run_until(self.now() + seconds)

    def run_until_idle(self) -> None:
        """Run until nothing is scheduled; now() is then the time of the last event."""
        self._virtual_loop.run_until_idle()

    def run(self, main: Coroutine[Any, Any, _T]) -> _T:
        """Run `main` to completion on virtual time and return its result.

        Raises `DeadlockError` if `main` waits for something nothing is scheduled to do.
        """
        return self._virtual_loop.run_until_complete(main)

    def close(self) -> None:
        self._virtual_loop.close()

    def __enter__(self) -> VirtualClock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
