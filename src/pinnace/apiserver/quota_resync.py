"""The resource quota controller's full resync (kube-controller-manager's
--resource-quota-sync-period, 5 minutes): every quota recounted from the objects stored.

Pinnace recounts a namespace's quotas at each write that changes what they count
(`AdmissionChain.after_write`); the one change no write announces is time: a pod being deleted
stops counting once its deletion timestamp plus its grace has passed (QuotaV1Pod), though it
may stay stored for long after (a pod on a lost node stays Terminating). v1.32 frees it at the
next resync; so does Pinnace. The passes that could change nothing are skipped (`Periodic`):
those that run come at the times of the resync's grid, and a quota or a pod's deletion
written meanwhile wakes the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from pinnace.api import catalog
from pinnace.apiserver.keys import kind_prefix
from pinnace.clock import Clock
from pinnace.clock.periodic import Periodic
from pinnace.store import Store, WatchEvent

DEFAULT_SYNC_PERIOD = 300.0

_PODS = kind_prefix(catalog.kind("", "pods"))
_QUOTAS = kind_prefix(catalog.kind("", "resourcequotas"))


class QuotaResync:
    """Runs `resync` (`AdmissionChain.resync`: it returns when a pass could next change
    anything) every `period` seconds of `clock`, woken by `store`'s writes of quotas and of
    pods being deleted."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        resync: Callable[[], Awaitable[float]],
        period: float = DEFAULT_SYNC_PERIOD,
    ) -> None:
        self._store = store
        self._clock = clock
        self._passes = Periodic(clock, period, resync)
        self._stop_observing: Callable[[], None] | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def passes(self) -> int:
        """Passes run so far (skipped ones not counted)."""
        return self._passes.passes

    async def start(self) -> None:
        self._stop_observing = self._store.observe(self._observe)
        self._task = self._clock.loop.create_task(self._passes.run())

    async def stop(self) -> None:
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _observe(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            return
        if event.key.startswith(_QUOTAS) or (
            event.key.startswith(_PODS)
            and "deletionTimestamp" in (event.object.get("metadata") or {})
        ):
            self._passes.wake()
