"""Leader election through a coordination.k8s.io Lease, as client-go's does it
(staging/src/k8s.io/client-go/tools/leaderelection/leaderelection.go on resourcelock/
leaselock.go), for kube-scheduler and kube-controller-manager run as several processes.

Each candidate tries to acquire the Lease every retryPeriod (with client-go's jitter of 1.2):
it takes it when there is none, when it holds it already, or when the holder has not changed
the record for leaseDuration *as this candidate observed it* (the time it last saw the record
change, on its own clock, not the Lease's renewTime, so clocks of different machines never
need to agree). Taking a Lease another held counts a transition (`leaseTransitions`). The
leader renews every retryPeriod; when renewals keep failing for renewDeadline it stops
leading. A leader stopped gracefully releases the Lease (ReleaseOnCancel): the holder emptied
and the duration 1 s, so a successor need not wait out the lease.

Every write is an update of the Lease as last read, so of two candidates writing on the same
version exactly one wins (optimistic concurrency): two leaders at once are impossible as long
as renewDeadline < leaseDuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client.events import EventRecorder
from pinnace.client.interface import Client
from pinnace.client.transport import HTTPError
from pinnace.clock import Randomness, format_micro_time

log = logging.getLogger(__name__)

LEASES = catalog.kind("coordination.k8s.io", "leases")
JITTER_FACTOR = 1.2
"""wait.JitterUntil's factor in acquire: each wait is retryPeriod * (1 + 1.2 * random)."""
LEADER_ELECTION = "LeaderElection"
"""The reason of the Events about the Lease (resourcelock's RecordEvent)."""
LOCK_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """componentbaseconfig.LeaderElectionConfiguration's timings: kube-scheduler's and
    kube-controller-manager's defaults."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        # NewLeaderElector's checks: a leader must give up before a rival may take over.
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")


def candidate_identity() -> str:
    """`<hostname>_<uuid>`, as kube-scheduler and kube-controller-manager name themselves."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


Callback = Callable[[], Coroutine[Any, Any, None]]


class LeaderElector:
    """Campaigns for the Lease `namespace/name` as `identity`; `on_started_leading` runs when
    it leads, `on_stopped_leading` when it no longer does (or never did and stops)."""

    def __init__(
        self,
        client: Client,
        name: str,
        identity: str,
        *,
        on_started_leading: Callback,
        on_stopped_leading: Callback,
        config: LeaderElectionConfig = LeaderElectionConfig(),
        namespace: str = LOCK_NAMESPACE,
        randomness: Randomness | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.clock = client.clock
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.config = config
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._random = (randomness or Randomness()).random
        self._recorder = recorder
        self._lease: Object | None = None
        """The Lease as last read or written (its resourceVersion guards the next update)."""
        self._observed: dict[str, Any] = {}
        """The record (the Lease's spec) as last observed, and when (`_observed_time`)."""
        self._observed_time = float("-inf")
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._leading: asyncio.Task[None] | None = None
        self.lost = False
        """Leadership was lost (renewals failed for renewDeadline), not given up on `stop`:
        kube-scheduler and kube-controller-manager exit with an error then."""

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Begin campaigning (LeaderElector.Run, in a task)."""
        self._task = self.clock.loop.create_task(self.run(), name=f"leader election {self.name}")

    async def stop(self) -> None:
        """End the campaign: stop leading and release the Lease (ReleaseOnCancel)."""
        self._stopping.set()
        if self._task is not None:
            await self._task

    async def abandon(self) -> None:
        """End without releasing anything, as a process killed does (for tests)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait(self) -> None:
        """Until the campaign ends: leadership lost, or `stop`."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def is_leader(self) -> bool:
        return self._observed.get("holderIdentity") == self.identity

    def check(self, tolerance: float) -> str:
        """client-go's Check, behind the leaderElection health check: why this process, while
        it leads, has not renewed its Lease for the lease duration and `tolerance` more; ""
        when it has, or does not lead (a standby is healthy)."""
        if not self.is_leader():
            return ""
        if self.clock.monotonic() - self._observed_time <= self.config.lease_duration + tolerance:
            return ""
        return f"failed election to renew leadership on lease {self.namespace}/{self.name}"

    @property
    def leader(self) -> str:
        """Who holds the Lease as last observed ("" when nobody)."""
        return str(self._observed.get("holderIdentity") or "")

    async def run(self) -> None:
        try:
            if not await self._acquire():
                return
            self._leading = self.clock.loop.create_task(self._on_started())
            await self._renew()
        finally:
            # OnStartedLeading's context ends with Run: a start still under way is cut short.
            if self._leading is not None and not self._leading.done():
                self._leading.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._leading
            await self._on_stopped()
            # Released once the components have stopped, so the next leader never acts
            # beside them.
            if self._stopping.is_set() and self.config.release_on_cancel:
                await self._release()

    async def _acquire(self) -> bool:
        """Try every retryPeriod (jittered) until the Lease is ours; False when stopped."""
        log.info("attempting to acquire leader lease %s/%s...", self.namespace, self.name)
        while not self._stopping.is_set():
            if await self._try_acquire_or_renew(self.config.renew_deadline):
                log.info("successfully acquired lease %s/%s", self.namespace, self.name)
                self._record_event("became leader")
                return True
            delay = self.config.retry_period * (1 + JITTER_FACTOR * self._random.random())
            await self._sleep(delay)
        return False

    async def _renew(self) -> None:
        """Renew every retryPeriod while the renewals succeed within renewDeadline; return
        when leadership is lost or the campaign stops."""
        while not self._stopping.is_set():
            deadline = self.clock.monotonic() + self.config.renew_deadline
            renewed = False
            while not self._stopping.is_set():
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    break
                if await self._try_acquire_or_renew(remaining):
                    renewed = True
                    break
                await self._sleep(min(self.config.retry_period, deadline - self.clock.monotonic()))
            if self._stopping.is_set():
                break
            if not renewed:
                log.error("failed to renew lease %s/%s: timed out", self.namespace, self.name)
                self._record_event("stopped leading")
                self.lost = True
                return
            await self._sleep(self.config.retry_period)

    async def _sleep(self, delay: float) -> None:
        """Wait `delay` seconds, or less when the campaign stops."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), max(delay, 0))

    # --- the lock --------------------------------------------------------------------------------

    async def _try_acquire_or_renew(self, timeout: float) -> bool:
        try:
            return await asyncio.wait_for(self._try(), timeout)
        except (StatusError, HTTPError, OSError, TimeoutError) as e:
            log.info("error retrieving or updating lease %s/%s: %s", self.namespace, self.name, e)
            return False

    async def _try(self) -> bool:
        """tryAcquireOrRenew: the fast path for a leader (update the record it observed),
        else read the Lease and take it if it is free, expired or ours."""
        now = self.clock.now()
        record = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.config.lease_duration),  # whole seconds, as Go's
            "acquireTime": format_micro_time(now),
            "renewTime": format_micro_time(now),
        }
        if self.is_leader() and self._lease_valid() and self._lease is not None:
            record["acquireTime"] = self._observed.get("acquireTime", record["acquireTime"])
            record["leaseTransitions"] = self._observed.get("leaseTransitions", 0)
            with contextlib.suppress(StatusError):
                await self._update(record)
                return True
        try:
            self._lease = await self.client.get(LEASES, self.namespace, self.name)
        except StatusError as e:
            if e.code != 404:
                raise
            record["leaseTransitions"] = 0
            lease = self._lease_object(record)
            self._lease = await self.client.create(LEASES, self.namespace, lease)
            self._observe(self._lease.get("spec") or {})
            return True
        current = self._lease.get("spec") or {}
        if current != self._observed:
            self._observe(current)
        if current.get("holderIdentity") and self._lease_valid() and not self.is_leader():
            log.debug("lock is held by %s and has not yet expired", current["holderIdentity"])
            return False
        if self.is_leader():
            record["acquireTime"] = current.get("acquireTime", record["acquireTime"])
            record["leaseTransitions"] = current.get("leaseTransitions", 0)
        else:
            record["leaseTransitions"] = current.get("leaseTransitions", 0) + 1
        await self._update(record)
        return True

    async def _release(self) -> None:
        """Empty the holder, so another candidate may take the Lease at once."""
        if not self.is_leader() or self._lease is None:
            return
        now = format_micro_time(self.clock.now())
        record = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": self._observed.get("leaseTransitions", 0),
        }
        try:
            await asyncio.wait_for(self._update(record), self.config.renew_deadline)
        except (StatusError, HTTPError, OSError, TimeoutError) as e:
            log.error("failed to release lease %s/%s: %s", self.namespace, self.name, e)

    async def _update(self, record: dict[str, Any]) -> None:
        assert self._lease is not None
        lease = {**self._lease, "spec": {**(self._lease.get("spec") or {}), **record}}
        self._lease = await self.client.update(LEASES, lease)
        self._observe(self._lease.get("spec") or {})

    def _observe(self, record: dict[str, Any]) -> None:
        self._observed = dict(record)
        self._observed_time = self.clock.monotonic()

    def _lease_valid(self) -> bool:
        """isLeaseValid: the record observed changed less than its duration ago (by this
        candidate's clock)."""
        duration = self._observed.get("leaseDurationSeconds") or 0
        return self._observed_time + duration > self.clock.monotonic()

    def _lease_object(self, record: dict[str, Any]) -> Object:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record,
        }

    def _record_event(self, what: str) -> None:
        if self._recorder is not None and self._lease is not None:
            self._recorder.event(
                {**self._lease, "kind": "Lease", "apiVersion": "coordination.k8s.io/v1"},
                "Normal",
                LEADER_ELECTION,
                f"{self.identity} {what}",
            )
