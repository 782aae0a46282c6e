"""The scheduling loop over the core: kube-scheduler's `wait.UntilWithContext(ctx,
sched.ScheduleOne, 0)` (pkg/scheduler/scheduler.go), whose queue Pop blocks until a pod is
due (pkg/scheduler/backend/queue/scheduling_queue.go).

Whatever feeds the core its informer events (the API adapter, the research environment's
scheduler-only engine) calls `nudge()` after each: the loop sleeps while the queue has no pod
to try, until an event puts one in activeQ or a backoff or the unschedulable pods' flush falls
due.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from pinnace.clock import Clock
from pinnace.scheduler.schedule_one import Pending, Scheduler, ScheduleResult

CYCLES_PER_TURN = 64
"""Scheduling cycles run before the loop lets informers and binds have a turn."""


@runtime_checkable
class Placer(Protocol):
    """Chooses the node of the pods that reach the choice among feasible nodes, instead of
    Score: `place` finishes `pending` (`core.finish(pending, node_name)`, or
    `core.finish(pending)` for Score's choice) and gives the result, at once or once decided.
    With `usage_window` and `usage_interval` (seconds) it reads usage as a plugin would
    (`ReadsNodeUsage`): the nodes' usage is then sampled for it, and with `workload_usage`
    the workloads' (`ReadsWorkloadUsage`)."""

    def place(self, core: Scheduler, pending: Pending) -> Awaitable[ScheduleResult]: ...


class SchedulingLoop:
    """Cycles of `core` on `clock`'s loop, each result given to `handle`; `placer`, when
    given, finishes the cycles that reach the choice of a node."""

    def __init__(
        self,
        core: Scheduler,
        clock: Clock,
        handle: Callable[[ScheduleResult], None],
        placer: Placer | None = None,
    ) -> None:
        self.core = core
        self.clock = clock
        self.handle = handle
        self.placer = placer
        self._wake = asyncio.Event()
        self._waiting = False
        """Whether the loop sleeps in `wait_for_work` (else it looks at the queue again before
        it does: an event need not wake it)."""
        self._waiting_until: float | None = None
        """The queue's `next_due` the loop sleeps until (None: until woken)."""

    async def run(self) -> None:
        """Schedule until cancelled."""
        while True:
            await self.schedule_pending()
            await self.wait_for_work()

    async def schedule_pending(self) -> None:
        """Run cycles while the queue has a pod to try now."""
        cycles = 0
        while (begun := self.core.begin_one()) is not None:
            if not isinstance(begun, Pending):
                result = begun
            elif self.placer is None:
                result = self.core.finish(begun)
            else:
                result = await self.placer.place(self.core, begun)
            self.handle(result)
            cycles += 1
            if cycles % CYCLES_PER_TURN == 0:
                await asyncio.sleep(0)

    async def wait_for_work(self) -> None:
        """Until the queue has a pod to try: one an event put in activeQ (`nudge`), or one
        whose wait is over."""
        self._wake.clear()
        self._waiting, self._waiting_until = True, self.core.queue.next_due()
        try:
            if self._waiting_until is None:
                await self._wake.wait()
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(self.clock.loop_time(self._waiting_until)):
                    await self._wake.wait()
        finally:
            self._waiting = False

    def nudge(self) -> None:
        """After an event reached the queue: wake the sleeping loop if it has a pod to try
        now, or one to try before the loop would look. Most events (a bind's echo, a
        kubelet's status write) give it neither."""
        if not self._waiting:
            return
        queue = self.core.queue
        if not queue.has_active():
            due = queue.next_due()
            if due is None or (self._waiting_until is not None and due >= self._waiting_until):
                return
        self._wake.set()
