"""One descheduling cycle, and the periodic loop the descheduler's Deployment runs: the
cluster is read once per cycle, then every profile's deschedule plugins run, then every
profile's balance plugins, sharing one evictor and its limits."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pinnace.client import Client
from pinnace.descheduler.evictor import (
    DefaultEvictor,
    Eviction,
    PodEvictor,
    TotalLimitError,
)
from pinnace.descheduler.framework import BALANCE, DESCHEDULE, Context
from pinnace.descheduler.policy import DeschedulerPolicy
from pinnace.descheduler.snapshot import Snapshot, take_snapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CycleResult:
    evictions: list[Eviction]
    failures: list[str]
    """Evictions the API refused (a disruption budget), as `namespace/name: message`."""
    skipped: str = ""
    """Why the cycle evicted nothing without looking, if it did not."""
    held_back: dict[str, int] = field(default_factory=dict)
    """Why the evictor's checks kept pods, with how many (each pod counted once)."""
    notes: list[str] = field(default_factory=list)
    """Why plugins had nothing to do (`LowNodeUtilization: No node is underutilized, …`)."""


TOO_SMALL = (
    "The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. "
    "So aborting."
)


class Descheduler:
    def __init__(self, client: Client, policy: DeschedulerPolicy, dry_run: bool = False) -> None:
        self.client = client
        self.policy = policy
        self.dry_run = dry_run

    async def run_once(self) -> CycleResult:
        return await self.run_cycle(await take_snapshot(self.client, self.policy.node_selector))

    async def run_cycle(self, snapshot: Snapshot) -> CycleResult:
        """One cycle over the cluster as `snapshot` shows it."""
        if len(snapshot.nodes) <= 1:
            return CycleResult([], [], TOO_SMALL)
        pod_evictor = PodEvictor(
            self.client, self.policy.limits, self.dry_run, self.policy.failure_events
        )
        contexts = [
            (profile, Context(snapshot, DefaultEvictor(profile.evictor, snapshot), pod_evictor))
            for profile in self.policy.profiles
        ]
        try:
            for point in (DESCHEDULE, BALANCE):
                for profile, ctx in contexts:
                    for strategy in profile.strategies:
                        if strategy.point == point:
                            await strategy.run(ctx)
        except TotalLimitError as e:
            log.info("%s", e)
        await pod_evictor.flush()
        return CycleResult(
            pod_evictor.evictions,
            pod_evictor.failures,
            held_back=pod_evictor.held_back(),
            notes=list(pod_evictor.notes),
        )

    async def run(self, interval: float, report: Callable[[CycleResult], None]) -> None:
        """A cycle every `interval` seconds, forever; cancel the task to stop."""
        while True:
            report(await self.run_once())
            await self.client.clock.sleep(interval)
