"""What the cluster's assembly asks of every component: start, and stop leaving nothing behind.

A component (the scheduler, a controller, the node agents, the compactor) starts its work on
the clock's loop and, when stopped, returns only once every task it started has ended, so a
stopped cluster leaves no task pending on the loop (client-go's informers and controllers end
the same way, through their context's cancellation and WaitGroups).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Component(Protocol):
    async def start(self) -> None:
        """Begin work; return once the component is running (caches synced where it has any)."""

    async def stop(self) -> None:
        """End work; return once every task the component started has ended."""


class HeldTasks:
    """The tasks a component started and holds until each is done (the loop keeps only weak
    references, so an unheld task may be collected midway), in the order they started.

    A set would do, but a set of tasks iterates in the order of their memory addresses, so
    cancelling them at a stop would run their endings in a different order on every run.

    Done tasks are let go in sweeps, each once as many tasks were held as after the last one
    (twice, at least `_FIRST_SWEEP`): a done callback per task would cost a callback on the
    loop per task (a scheduler holds one per binding).
    """

    _FIRST_SWEEP = 64

    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[Any], None] = {}
        self._sweep_at = self._FIRST_SWEEP

    def hold(self, task: asyncio.Task[Any]) -> None:
        tasks = self._tasks
        tasks[task] = None
        if len(tasks) >= self._sweep_at:
            self._sweep()

    def _sweep(self) -> None:
        self._tasks = {task: None for task in self._tasks if not task.done()}
        self._sweep_at = max(2 * len(self._tasks), self._FIRST_SWEEP)

    def __bool__(self) -> bool:
        """Whether a task held is not done yet."""
        self._sweep()
        return bool(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        """The tasks held and not done yet, first started first (a copy: holding more
        meanwhile is safe)."""
        self._sweep()
        return iter(list(self._tasks))


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait for each to end; a task that failed rather than ending on the
    cancellation is logged, as it would otherwise go unseen."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, Exception):
            log.error("%s ended with an error", task.get_name(), exc_info=result)


class StartedOnFirstUse:
    """Informers (anything with start, wait_for_sync and async stop) started the first time
    something needs them (`await ready()`), not with the cluster: a cache only a person's
    page or a scraper reads costs nothing until one does."""

    def __init__(self, informers: Iterable[Any]) -> None:
        self._informers = tuple(informers)
        self._started = False

    async def ready(self) -> None:
        """Start the informers if they have not been, and wait until they have synced."""
        if not self._started:
            self._started = True
            for informer in self._informers:
                informer.start()
        for informer in self._informers:
            await informer.wait_for_sync()

    async def stop(self) -> None:
        if self._started:
            for informer in self._informers:
                await informer.stop()
