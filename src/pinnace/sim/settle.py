"""When a cluster has settled: a timeline step `after: settled` waits for it.

The cluster has settled when no workload object (Pod, ReplicaSet, Deployment, DaemonSet, Job,
StatefulSet) has changed for QUIET_SECONDS of simulated time. Heartbeats (Leases, Node
status) and Events never keep it from settling; a pod that cannot be scheduled does not either,
once the scheduler has said so. A crash-looping pod's restarts do, until its back-off grows past
QUIET_SECONDS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pinnace.clock import Clock

QUIET_SECONDS = 30.0
POLL_SECONDS = 1.0


async def until_settled(clock: Clock, workload_changes: Callable[[], int]) -> None:
    """Return once `workload_changes()` (the event log's count of changes to workload
    objects) has stood still for QUIET_SECONDS."""
    last_change = clock.now()
    seen = workload_changes()
    while clock.now() - last_change < QUIET_SECONDS:
        await asyncio.sleep(POLL_SECONDS)
        count = workload_changes()
        if count != seen:
            seen, last_change = count, clock.now()
