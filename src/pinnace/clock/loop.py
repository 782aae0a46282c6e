"""An asyncio event loop on virtual time, for simulated mode.

Component code (callbacks, `asyncio.sleep`, `Queue`, `Event`, `wait_for`, `timeout`) runs on it
unchanged. When nothing is ready to run, the loop does not wait: it jumps virtual time straight
to the next timer. Its `time()` is seconds since the Unix epoch, starting at `start`.

Order is fixed, so a seeded run is reproducible: each iteration moves every timer due at or
before now into the ready queue, earliest first and, for equal times, in the order they were
scheduled (`call_at`/`call_later` order); then it runs the ready queue in FIFO order, as asyncio
does. asyncio's own timer heap compares times only and treats timers within the clock's
resolution of now as due; here due means `when <= now`, exactly.

The loop replaces `BaseEventLoop._run_once`, relying on the attributes it shares with it
(`_ready`, `_stopping`, `_timer_cancelled_count`, and `TimerHandle`'s `_cancelled`,
`_scheduled`, `_run`); tests/clock would fail on an asyncio that renamed them.

There is no real I/O and there are no threads in simulated mode: methods that would do either
raise `VirtualModeError`.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import sys
from collections.abc import Callable
from contextvars import Context
from typing import TYPE_CHECKING, Any, NoReturn, TypeVarTuple

from pinnace.clock.rfc3339 import format_micro_time

DEFAULT_EPOCH = 1735689600.0
"""2025-01-01T00:00:00Z, where virtual time starts unless told otherwise."""

# Once more than this many timers, and more than half of all, are cancelled, the heap is
# rebuilt without them (asyncio's thresholds).
_MIN_CANCELLED_TO_COMPACT = 50

_Ts = TypeVarTuple("_Ts")

if TYPE_CHECKING:

    class _TimerHandle(asyncio.TimerHandle):
        _scheduled: bool  # private to asyncio, so typeshed leaves it out

else:
    _TimerHandle = asyncio.TimerHandle

_Timer = tuple[float, int, _TimerHandle]


class DeadlockError(RuntimeError):
    """The loop must keep running but nothing is scheduled, so nothing can ever happen."""


class VirtualModeError(RuntimeError):
    """Real I/O or threads were asked of the virtual loop."""


class VirtualEventLoop(asyncio.BaseEventLoop):
    """An asyncio event loop whose clock jumps to the next timer instead of waiting."""

    if TYPE_CHECKING:
        # BaseEventLoop's private members this loop uses, which typeshed leaves out.
        _ready: collections.deque[asyncio.Handle]
        _stopping: bool
        _debug: bool

        def _check_closed(self) -> None: ...
        def _check_thread(self) -> None: ...
        def _check_callback(self, callback: Callable[..., object], method: str) -> None: ...

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        super().__init__()
        self._now = float(start)
        self._timers: list[_Timer] = []
        self._sequence = itertools.count()
        self._events_processed = 0
        # Where run_until() stops; run_until_complete() and run_forever() have no horizon.
        self._horizon = sys.float_info.max
        self._stop_when_idle = False
        self._pausing = False

    def time(self) -> float:
        return self._now

    @property
    def events_processed(self) -> int:
        """Callbacks run so far: timers, `call_soon` callbacks and task steps."""
        return self._events_processed

    def call_later(
        self,
        delay: float,
        callback: Callable[[*_Ts], object],
        *args: *_Ts,
        context: Context | None = None,
    ) -> asyncio.TimerHandle:
        if delay is None:
            raise TypeError("delay must not be None")
        return self.call_at(self._now + delay, callback, *args, context=context)

    def call_at(
        self,
        when: float,
        callback: Callable[[*_Ts], object],
        *args: *_Ts,
        context: Context | None = None,
    ) -> asyncio.TimerHandle:
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()
        if self._debug:
            self._check_thread()
            self._check_callback(callback, "call_at")
        timer = _TimerHandle(when, callback, args, self, context)
        heapq.heappush(self._timers, (when, next(self._sequence), timer))
        timer._scheduled = True
        return timer

    def run_until(self, when: float) -> None:
        """Run every callback due at or before `when`, then leave the clock at `when`."""
        if when < self._now:
            raise ValueError(
                f"cannot run until {format_micro_time(when)}: "
                f"virtual time is already {format_micro_time(self._now)}"
            )
        self._run_stopping_when_idle(when)

    def run_until_next(self) -> None:
        """Run what is due now, then up to the next timer and what falls due with it (a
        simulation's step); nothing more when nothing is scheduled."""
        self.run_until(self._now)
        live = [when for when, _, timer in self._timers if not timer._cancelled]
        if live:
            self.run_until(min(live))

    def pause(self) -> None:
        """Stop running right after the callback running now, before any other (`stop()`
        lets the callbacks ready with it run first). They run first when the loop runs
        again, in their order: nothing happens meanwhile, so a driver can act on the state
        the callback left (a decision asked of it in the middle of a component's work)."""
        self._pausing = True

    def run_until_idle(self) -> None:
        """Run until nothing at all is scheduled; the clock stays at the last event.

        With a component that re-arms a timer forever this never returns: use `run_until`.
        """
        self._run_stopping_when_idle(sys.float_info.max)

    def _run_stopping_when_idle(self, horizon: float) -> None:
        self._horizon, self._stop_when_idle = horizon, True
        try:
            self.run_forever()
        finally:
            self._horizon, self._stop_when_idle = sys.float_info.max, False

    def close(self) -> None:
        super().close()
        self._timers.clear()

    def _run_once(self) -> None:
        # run_forever() calls this until a stop is requested; each pass of this loop is one
        # asyncio iteration, run here in one frame to save a call and its set-up per iteration.
        ready = self._ready
        timers = self._timers
        while True:
            if (
                self._timer_cancelled_count > _MIN_CANCELLED_TO_COMPACT
                and self._timer_cancelled_count * 2 > len(timers)
            ):
                self._drop_cancelled_timers()
            if not ready and not self._stopping:
                while timers and timers[0][2]._cancelled:
                    heapq.heappop(timers)[2]._scheduled = False
                    self._timer_cancelled_count -= 1
                # Timers at infinity (asyncio.sleep(math.inf)) never come due.
                if timers and timers[0][0] <= self._horizon:
                    if timers[0][0] > self._now:
                        self._now = timers[0][0]
                elif self._stop_when_idle:
                    if self._horizon < sys.float_info.max:
                        self._now = self._horizon
                    self._stopping = True
                    return
                else:
                    self._deadlock()
            now = self._now
            while timers and timers[0][0] <= now:
                timer = heapq.heappop(timers)[2]
                timer._scheduled = False
                if timer._cancelled:
                    self._timer_cancelled_count -= 1
                else:
                    ready.append(timer)
            for _ in range(len(ready)):
                handle = ready.popleft()
                if not handle._cancelled:
                    self._events_processed += 1
                    handle._run()
                    if self._pausing:
                        self._pausing = False
                        self._stopping = True
                        return
            if self._stopping:
                return

    def _drop_cancelled_timers(self) -> None:
        live = []
        for entry in self._timers:
            if entry[2]._cancelled:
                entry[2]._scheduled = False
            else:
                live.append(entry)
        heapq.heapify(live)
        self._timers[:] = live  # in place: _run_once holds the list
        self._timer_cancelled_count = 0

    def _deadlock(self) -> NoReturn:
        waiting = sorted(asyncio.all_tasks(self), key=lambda task: task.get_name())
        shown = "; ".join(_describe(task) for task in waiting[:5])
        more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        raise DeadlockError(
            f"deadlock at virtual time {format_micro_time(self._now)}: nothing is scheduled, "
            f"so nothing can ever happen, but the loop was asked to keep running. "
            f"Tasks still waiting ({len(waiting)}): {shown or 'none'}{more}"
        )

    # asyncio wakes a blocked loop through this; the virtual loop never blocks.
    def _write_to_self(self) -> None:
        pass

    def _process_events(self, event_list: list[Any]) -> None:
        pass


def _describe(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    frame = getattr(coro, "cr_frame", None)
    where = f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""
    return f"{task.get_name()} ({getattr(coro, '__qualname__', coro)}{where})"


def _refuse(name: str) -> Callable[..., NoReturn]:
    def refuse(self: VirtualEventLoop, *args: Any, **kwargs: Any) -> NoReturn:
        raise VirtualModeError(
            f"{name}() is not available on the virtual event loop: simulated mode does no real "
            "I/O and runs no threads, so everything happens on virtual time in one thread"
        )

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_REAL_WORLD_METHODS = (
    "run_in_executor",
    "set_default_executor",
    "getaddrinfo",
    "getnameinfo",
    "create_connection",
    "create_server",
    "create_unix_connection",
    "create_unix_server",
    "create_datagram_endpoint",
    "connect_accepted_socket",
    "connect_read_pipe",
    "connect_write_pipe",
    "subprocess_exec",
    "subprocess_shell",
    "sendfile",
    "start_tls",
    "add_reader",
    "add_writer",
    "remove_reader",
    "remove_writer",
    "sock_recv",
    "sock_recv_into",
    "sock_recvfrom",
    "sock_recvfrom_into",
    "sock_sendall",
    "sock_sendto",
    "sock_connect",
    "sock_accept",
    "sock_sendfile",
    "add_signal_handler",
    "remove_signal_handler",
)
for _name in _REAL_WORLD_METHODS:
    setattr(VirtualEventLoop, _name, _refuse(_name))
