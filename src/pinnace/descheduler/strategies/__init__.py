"""The descheduler's plugins by name (DefaultEvictor is the evictor, not listed here)."""

from __future__ import annotations

from pinnace.descheduler.framework import Strategy
from pinnace.descheduler.strategies.failed_pods import RemoveFailedPods
from pinnace.descheduler.strategies.inter_pod_anti_affinity import (
    RemovePodsViolatingInterPodAntiAffinity,
)
from pinnace.descheduler.strategies.node_affinity import RemovePodsViolatingNodeAffinity
from pinnace.descheduler.strategies.node_taints import RemovePodsViolatingNodeTaints
from pinnace.descheduler.strategies.node_utilization import (
    HighNodeUtilization,
    LowNodeUtilization,
)
from pinnace.descheduler.strategies.pod_lifetime import PodLifeTime
from pinnace.descheduler.strategies.remove_duplicates import RemoveDuplicates
from pinnace.descheduler.strategies.too_many_restarts import RemovePodsHavingTooManyRestarts
from pinnace.descheduler.strategies.topology_spread import (
    RemovePodsViolatingTopologySpreadConstraint,
)

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (
        LowNodeUtilization,
        HighNodeUtilization,
        RemoveDuplicates,
        RemovePodsViolatingNodeAffinity,
        RemovePodsViolatingNodeTaints,
        RemovePodsViolatingInterPodAntiAffinity,
        RemovePodsViolatingTopologySpreadConstraint,
        RemovePodsHavingTooManyRestarts,
        PodLifeTime,
        RemoveFailedPods,
    )
}
