"""Compaction on a schedule, so a store's history stays bounded under a steady write load."""

from __future__ import annotations

import asyncio
import logging

from pinnace.clock import Clock, Timer
from pinnace.store.interface import Store

DEFAULT_INTERVAL = 300.0
"""kube-apiserver compacts every 5 minutes (--etcd-compaction-interval)."""

log = logging.getLogger(__name__)


class Compactor:
    """Compacts `store` every `interval` seconds of `clock` time.

    With `keep=None` (kube-apiserver's scheme) each run compacts to the revision the previous
    run saw, so the last interval of history always stays: a watcher that disconnects can
    resume from a revision up to one interval old. With `keep=N` each run compacts to
    `revision - N` instead (etcd's revision retention).
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        interval: float = DEFAULT_INTERVAL,
        keep: int | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        if keep is not None and keep < 0:
            raise ValueError(f"keep must not be negative, not {keep}")
        self._store = store
        self._clock = clock
        self._interval = interval
        self._keep = keep
        self._previous = store.revision
        self._timer: Timer | None = None
        self._running: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._timer is None:
            self._previous = self._store.revision
            self._timer = self._clock.call_later(self._interval, self._tick)

    async def stop(self) -> None:
        """No more runs; one in progress finishes first."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None:
            await self._running

    async def run_once(self) -> None:
        """Compact now, as a scheduled run would."""
        store = self._store
        current = store.revision
        if self._keep is None:
            target, self._previous = self._previous, current
        else:
            target = current - self._keep
        if target > store.compacted_revision:
            await store.compact(target)

    def _tick(self) -> None:
        self._timer = self._clock.call_later(self._interval, self._tick)
        if self._running is not None and not self._running.done():
            return  # the last run is still going: skip this one
        self._running = self._clock.loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self.run_once()
        except Exception:
            log.exception("compaction failed; trying again in %s s", self._interval)
