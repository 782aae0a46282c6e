"""What the cluster's assembly asks of every component: start, and stop leaving nothing behind.

A component (the scheduler, a controller, the node agents, the compactor) starts its work on
the clock's loop and, when stopped, returns only once every task it started has ended, so a
stopped cluster leaves no task pending on the loop (client-go's informers and controllers end
the same way, through their context's cancellation and WaitGroups).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Protocol

log = logging.getLogger(__name__)


class Component(Protocol):
    async def start(self) -> None:
        """Begin work; return once the component is running (caches synced where it has any)."""

    async def stop(self) -> None:
        """End work; return once every task the component started has ended."""


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

