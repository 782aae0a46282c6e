"""The cluster autoscaler's settings: cluster-autoscaler's flags of the same names, with its
defaults (config/autoscaling_options.go, main.go and FAQ.md "What are the parameters to CA?"),
and the node groups it manages: the cluster file's node pools that have a maxSize."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pinnace.kubelet.cluster_config import NodePool

EXPANDERS = ("random", "most-pods", "least-waste", "priority")


@dataclass(frozen=True)
class AutoscalerOptions:
    node_pools: Sequence[NodePool] = ()
    """Every pool of the cluster file; those with a maxSize are its node groups."""
    scan_interval: float = 10.0
    """--scan-interval: how often the cluster is re-evaluated."""
    expander: str = "random"
    """--expander: which node group to grow when several would help."""
    max_nodes_total: int = 0
    """--max-nodes-total: the most nodes the cluster may have (0: no limit)."""
    new_pod_scale_up_delay: float = 0.0
    """--new-pod-scale-up-delay: pods younger than this are not yet helped."""
    provisioning_delay: float = 60.0
    """How long a new node takes to join after the scale-up (a cloud's VM start; Pinnace's own
    setting)."""
    scale_down_enabled: bool = True
    """--scale-down-enabled"""
    scale_down_utilization_threshold: float = 0.5
    """--scale-down-utilization-threshold: below it (the larger of cpu and memory requested
    over allocatable), a node may go."""
    scale_down_unneeded_time: float = 600.0
    """--scale-down-unneeded-time: how long a node must have been unneeded to go."""
    scale_down_delay_after_add: float = 600.0
    """--scale-down-delay-after-add"""
    scale_down_delay_after_delete: float | None = None
    """--scale-down-delay-after-delete (None: the scan interval, its default)."""
    scale_down_delay_after_failure: float = 180.0
    """--scale-down-delay-after-failure"""
    unremovable_node_recheck_timeout: float = 300.0
    """--unremovable-node-recheck-timeout: a node its pods kept is not tried again sooner."""
    max_empty_bulk_delete: int = 10
    """--max-empty-bulk-delete: empty nodes removed at once."""
    max_drain_parallelism: int = 1
    """--max-drain-parallelism: non-empty nodes drained at once."""
    max_graceful_termination_sec: int = 600
    """--max-graceful-termination-sec: the grace period an evicted pod gets at most."""
    max_pod_eviction_time: float = 120.0
    """How long a drain retries an eviction the API refuses (MaxPodEvictionTime)."""

    def __post_init__(self) -> None:
        if self.expander not in EXPANDERS:
            raise ValueError(f'unknown expander "{self.expander}": one of {", ".join(EXPANDERS)}')
        if not 0 <= self.scale_down_utilization_threshold <= 1:
            raise ValueError("--scale-down-utilization-threshold must be between 0 and 1")

    @property
    def delay_after_delete(self) -> float:
        if self.scale_down_delay_after_delete is None:
            return self.scan_interval
        return self.scale_down_delay_after_delete

    def node_groups(self) -> list[NodePool]:
        return [p for p in self.node_pools if p.autoscaled]
