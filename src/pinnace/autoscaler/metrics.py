"""cluster-autoscaler's metrics (cluster-autoscaler/metrics/metrics.go, proposals/metrics.md),
served by `pinnace up` at `/metrics/cluster-autoscaler` (cluster-autoscaler is a process of
its own with its own /metrics), as of the last loop:

- `cluster_autoscaler_cluster_safe_to_autoscale`: 1 while the cluster is Healthy
- `cluster_autoscaler_nodes_count{state}`: ready, unready, notStarted, longUnregistered,
  unregistered (asked for, not there yet)
- `cluster_autoscaler_node_groups_count{node_group_type}`: autoscaled, autoprovisioned (0)
- `cluster_autoscaler_unschedulable_pods_count{type}`: unschedulable, scheduler_unprocessed (0)
- `cluster_autoscaler_max_nodes_count`: --max-nodes-total
- `cluster_autoscaler_last_activity{activity}`: main, autoscaling, scaleUp, scaleDown (Unix
  seconds)
- `cluster_autoscaler_scaled_up_nodes_total`, `cluster_autoscaler_scaled_down_nodes_total
  {reason}` (empty, underutilized, unready)
- `cluster_autoscaler_evicted_pods_total{eviction_result}`: succeeded, failed
- `cluster_autoscaler_unneeded_nodes_count`, `cluster_autoscaler_unremovable_nodes_count
  {reason}`, `cluster_autoscaler_scale_down_in_cooldown`

Each HELP starts `[ALPHA] `, as k8s.io/component-base/metrics, which cluster-autoscaler
registers them with, marks a metric given no stability level.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

PREFIX = "cluster_autoscaler_"
NODE_STATES = ("ready", "unready", "notStarted", "longUnregistered", "unregistered")
ACTIVITIES = ("main", "autoscaling", "scaleUp", "scaleDown")
SCALE_DOWN_REASONS = ("empty", "underutilized", "unready")


@dataclass
class AutoscalerStats:
    """What the loop reports: figures of the last loop and counters since the start."""

    safe_to_autoscale: bool = True
    nodes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(NODE_STATES, 0))
    node_groups: int = 0
    unschedulable_pods: int = 0
    max_nodes: int = 0
    last_activity: dict[str, float] = field(default_factory=dict)
    scaled_up_nodes: int = 0
    scaled_down_nodes: Counter[str] = field(default_factory=Counter)
    evicted_pods: Counter[str] = field(default_factory=Counter)
    unneeded_nodes: int = 0
    unremovable_nodes: Counter[str] = field(default_factory=Counter)
    scale_down_in_cooldown: bool = False


class AutoscalerMetrics(Collector):
    def __init__(self, stats: AutoscalerStats) -> None:
        self.stats = stats

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        s = self.stats
        yield _gauge(
            "cluster_safe_to_autoscale",
            "[ALPHA] Whether or not cluster is healthy enough for autoscaling. 1 if it is, 0 "
            "otherwise.",
            float(s.safe_to_autoscale),
        )
        nodes = GaugeMetricFamily(
            PREFIX + "nodes_count", "[ALPHA] Number of nodes in cluster.", labels=["state"]
        )
        for state in NODE_STATES:
            nodes.add_metric([state], s.nodes.get(state, 0))
        yield nodes
        groups = GaugeMetricFamily(
            PREFIX + "node_groups_count",
            "[ALPHA] Number of node groups managed by CA.",
            labels=["node_group_type"],
        )
        groups.add_metric(["autoscaled"], s.node_groups)
        groups.add_metric(["autoprovisioned"], 0)
        yield groups
        pods = GaugeMetricFamily(
            PREFIX + "unschedulable_pods_count",
            "[ALPHA] Number of unschedulable pods in the cluster.",
            labels=["type"],
        )
        pods.add_metric(["unschedulable"], s.unschedulable_pods)
        pods.add_metric(["scheduler_unprocessed"], 0)
        yield pods
        yield _gauge(
            "max_nodes_count", "[ALPHA] Maximum number of nodes in all node groups", s.max_nodes
        )
        activity = GaugeMetricFamily(
            PREFIX + "last_activity",
            "[ALPHA] Last time certain part of CA logic executed.",
            labels=["activity"],
        )
        for name in ACTIVITIES:
            if name in s.last_activity:
                activity.add_metric([name], s.last_activity[name])
        yield activity
        up = CounterMetricFamily(PREFIX + "scaled_up_nodes", "[ALPHA] Number of nodes added by CA.")
        up.add_metric([], s.scaled_up_nodes)
        yield up
        down = CounterMetricFamily(
            PREFIX + "scaled_down_nodes",
            "[ALPHA] Number of nodes removed by CA.",
            labels=["reason"],
        )
        for reason in SCALE_DOWN_REASONS:
            down.add_metric([reason], s.scaled_down_nodes[reason])
        yield down
        evicted = CounterMetricFamily(
            PREFIX + "evicted_pods",
            "[ALPHA] Number of pods evicted by CA",
            labels=["eviction_result"],
        )
        for result in ("succeeded", "failed"):
            evicted.add_metric([result], s.evicted_pods[result])
        yield evicted
        yield _gauge(
            "unneeded_nodes_count",
            "[ALPHA] Number of nodes currently considered unneeded by CA.",
            s.unneeded_nodes,
        )
        unremovable = GaugeMetricFamily(
            PREFIX + "unremovable_nodes_count",
            "[ALPHA] Number of nodes currently considered unremovable by CA.",
            labels=["reason"],
        )
        for reason, count in sorted(s.unremovable_nodes.items()):
            unremovable.add_metric([reason], count)
        yield unremovable
        yield _gauge(
            "scale_down_in_cooldown",
            "[ALPHA] Whether or not the scale down is in cooldown. 1 if its, 0 otherwise.",
            float(s.scale_down_in_cooldown),
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, documentation, value=value)
