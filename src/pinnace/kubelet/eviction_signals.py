"""Eviction signals and thresholds, as the kubelet's eviction manager observes and judges them
(pkg/kubelet/eviction/helpers.go in v1.32).

A signal is an amount still available on the node (memory, nodefs and imagefs bytes and
inodes, process IDs), observed from the stats `Summary` with the capacity it is a part of. A
threshold is met when the available amount falls below its quantity (a percentage is of the
capacity). Once met, a threshold stays met until the signal is back above its quantity plus
its minimum reclaim. Each signal belongs to a node condition and to the resource reclaimed by
evicting pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from pinnace.api.stats import Summary
from pinnace.kubelet.config import NodeConfig
from pinnace.resources.names import EPHEMERAL_STORAGE, MEMORY
from pinnace.resources.node import (
    DEFAULT_EVICTION_HARD,
    Threshold,
    ThresholdValue,
    parse_eviction_thresholds,
    threshold_quantity,
)
from pinnace.resources.quantity import BINARY_SI, DECIMAL_SI, Format, Quantity

MEMORY_AVAILABLE = "memory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
PID_AVAILABLE = "pid.available"

MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
PRESSURE_CONDITIONS = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)
"""In the order the kubelet lists them on the node."""

INODES = "inodes"
PIDS = "pids"
"""The eviction manager's own names for the resources that are not API resources."""

DISK_SIGNALS = frozenset(
    {NODEFS_AVAILABLE, NODEFS_INODES_FREE, IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE}
)

SIGNAL_CONDITION: Mapping[str, str] = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    NODEFS_AVAILABLE: DISK_PRESSURE,
    NODEFS_INODES_FREE: DISK_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}
SIGNAL_RESOURCE: Mapping[str, str] = {
    MEMORY_AVAILABLE: MEMORY,
    NODEFS_AVAILABLE: EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: INODES,
    IMAGEFS_AVAILABLE: EPHEMERAL_STORAGE,
    IMAGEFS_INODES_FREE: INODES,
    PID_AVAILABLE: PIDS,
}


@dataclass(frozen=True)
class Observation:
    """What a signal reads now: the amount available out of `capacity`."""

    available: int
    capacity: int
    format: Format = BINARY_SI

    def quantity(self) -> Quantity:
        return Quantity.from_milli(self.available * 1000, self.format)


def observe(summary: Summary) -> dict[str, Observation]:
    """The signals the summary reports (makeSignalObservations). A filesystem or PID table
    the summary has no capacity for is not observed, so its thresholds are never met."""
    node = summary.node
    candidates = {
        MEMORY_AVAILABLE: Observation(node.memory_available_bytes, node.memory_capacity_bytes),
        NODEFS_AVAILABLE: Observation(node.nodefs_available_bytes, node.nodefs_capacity_bytes),
        NODEFS_INODES_FREE: Observation(node.nodefs_inodes_free, node.nodefs_inodes, DECIMAL_SI),
        IMAGEFS_AVAILABLE: Observation(node.imagefs_available_bytes, node.imagefs_capacity_bytes),
        IMAGEFS_INODES_FREE: Observation(node.imagefs_inodes_free, node.imagefs_inodes, DECIMAL_SI),
        PID_AVAILABLE: Observation(node.pid_available, node.pid_max, DECIMAL_SI),
    }
    return {signal: o for signal, o in candidates.items() if o.capacity > 0}


def node_thresholds(config: NodeConfig) -> list[Threshold]:
    """The node's hard thresholds (the kubelet's defaults when evictionHard is unset), then
    its soft ones with their grace periods, each with its minimum reclaim."""
    hard = DEFAULT_EVICTION_HARD if config.eviction_hard is None else config.eviction_hard
    grace_periods = {s: f"{seconds}s" for s, seconds in config.eviction_soft_grace_period.items()}
    return parse_eviction_thresholds(
        hard, config.eviction_soft, grace_periods, config.eviction_minimum_reclaim
    )


def threshold_amount(value: ThresholdValue, observation: Observation) -> Quantity:
    """GetThresholdQuantity: the threshold in the signal's units (a percentage of capacity)."""
    if value.quantity is not None:
        return value.quantity
    return _share_of(value.percentage, observation.capacity)


@lru_cache(maxsize=1024)
def _share_of(percentage: float, capacity: int) -> Quantity:
    """A percentage threshold's amount: the same for a node's capacity at every pass of its
    eviction manager, so worked out once."""
    return threshold_quantity(ThresholdValue(percentage=percentage), Quantity(capacity))


def thresholds_met(
    thresholds: Iterable[Threshold],
    observations: Mapping[str, Observation],
    *,
    enforce_min_reclaim: bool = False,
) -> list[Threshold]:
    """The thresholds whose signal is below them, grace periods aside; with
    `enforce_min_reclaim`, below them plus their minimum reclaim."""
    met = []
    for t in thresholds:
        observed = observations.get(t.signal)
        if observed is None:
            continue
        wanted = threshold_amount(t.value, observed)
        if enforce_min_reclaim and t.min_reclaim is not None:
            wanted = wanted + threshold_amount(t.min_reclaim, observed)
        if wanted > observed.available:
            met.append(t)
    return met


def node_conditions(thresholds: Iterable[Threshold]) -> set[str]:
    return {SIGNAL_CONDITION[t.signal] for t in thresholds if t.signal in SIGNAL_CONDITION}


def by_eviction_priority(thresholds: Iterable[Threshold]) -> list[Threshold]:
    """Memory first, thresholds with no resource to reclaim last (byEvictionPriority)."""

    def rank(t: Threshold) -> int:
        if t.signal == MEMORY_AVAILABLE:
            return 0
        return 1 if t.signal in SIGNAL_RESOURCE else 2

    return sorted(thresholds, key=rank)
