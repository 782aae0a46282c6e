"""What a node and its pods use at one moment, as the kubelet's stats summary reports it
(k8s.io/kubelet/pkg/apis/stats/v1alpha1: the fields Pinnace models).

The kubelet's simulated runtime produces a `Summary` from the behaviour model; the eviction
manager, the OOM killer and the API server's metrics API read it. Amounts are integers in the
units the kubelet's summary API uses: CPU in nanocores, memory and disk in bytes.

A `pinnace agent` process also serves the summaries of all its nodes at once, in a compact form
of what `summary_of` reads (`compact`, `from_compact`; `SUMMARIES_PATH`), so that the API server
reads them with one request instead of one per node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pinnace.clock.rfc3339 import parse_time, second_instant

SUMMARIES_PATH = "/pinnace/summaries"
"""`GET <SUMMARIES_PATH>[?node=NAME&node=…]` of an agent process: the summaries of its nodes
(those named, or all), as lines of JSON sent as they are read, each `{"summaries": {node:
compact(summary)}, "unreachable": {node: why}}` of some of them, a node the API server cannot
reach (its /stats/summary answers 503) among the unreachable; a node the process does not run
is in none (Pinnace's own path)."""


@dataclass
class ContainerStats:
    name: str
    cpu_usage_nano_cores: int = 0
    memory_working_set_bytes: int = 0
    rootfs_used_bytes: int = 0
    """The container's writable layer."""
    logs_used_bytes: int = 0
    cpu_throttled_nano_cores: int = 0
    """The CPU it demands above its limit (held back by its CFS quota)."""
    pids: int = 0


@dataclass
class PodStats:
    uid: str
    namespace: str
    name: str
    containers: list[ContainerStats] = field(default_factory=list)
    volumes_used_bytes: int = 0
    """Local ephemeral volumes (emptyDir)."""
    pids: int = 0

    @property
    def cpu_usage_nano_cores(self) -> int:
        return sum(c.cpu_usage_nano_cores for c in self.containers)

    @property
    def memory_working_set_bytes(self) -> int:
        return sum(c.memory_working_set_bytes for c in self.containers)

    @property
    def ephemeral_storage_bytes(self) -> int:
        """Writable layers, logs and local volumes: what the kubelet charges a pod's
        ephemeral-storage with."""
        return self.volumes_used_bytes + sum(
            c.rootfs_used_bytes + c.logs_used_bytes for c in self.containers
        )


@dataclass
class NodeStats:
    cpu_usage_nano_cores: int = 0
    memory_capacity_bytes: int = 0
    memory_working_set_bytes: int = 0
    nodefs_capacity_bytes: int = 0
    nodefs_used_bytes: int = 0
    nodefs_inodes: int = 0
    nodefs_inodes_used: int = 0
    imagefs_capacity_bytes: int = 0
    imagefs_used_bytes: int = 0
    imagefs_inodes: int = 0
    imagefs_inodes_used: int = 0
    pid_max: int = 0
    pids: int = 0

    @property
    def memory_available_bytes(self) -> int:
        return max(0, self.memory_capacity_bytes - self.memory_working_set_bytes)

    @property
    def nodefs_available_bytes(self) -> int:
        return max(0, self.nodefs_capacity_bytes - self.nodefs_used_bytes)

    @property
    def nodefs_inodes_free(self) -> int:
        return max(0, self.nodefs_inodes - self.nodefs_inodes_used)

    @property
    def imagefs_available_bytes(self) -> int:
        return max(0, self.imagefs_capacity_bytes - self.imagefs_used_bytes)

    @property
    def imagefs_inodes_free(self) -> int:
        return max(0, self.imagefs_inodes - self.imagefs_inodes_used)

    @property
    def pid_available(self) -> int:
        return max(0, self.pid_max - self.pids)


@dataclass
class Summary:
    """One node's stats at `time` (clock seconds)."""

    time: float
    node: NodeStats
    pods: list[PodStats] = field(default_factory=list)


def summary_of(document: Mapping[str, Any]) -> Summary:
    """A kubelet's /stats/summary JSON as the `Summary` of what the metrics API reads: the
    CPU and memory working set of the node, its pods and their containers."""
    node = document["node"]

    def usage(stats: Mapping[str, Any]) -> tuple[int, int]:
        cpu = (stats.get("cpu") or {}).get("usageNanoCores", 0)
        return cpu, (stats.get("memory") or {}).get("workingSetBytes", 0)

    def container(stats: Mapping[str, Any]) -> ContainerStats:
        return ContainerStats(stats["name"], *usage(stats))

    def pod(stats: Mapping[str, Any]) -> PodStats:
        ref = stats["podRef"]
        containers = [container(c) for c in stats.get("containers") or []]
        return PodStats(ref["uid"], ref["namespace"], ref["name"], containers)

    pods = [pod(p) for p in document.get("pods") or []]
    cpu, memory = usage(node)
    return Summary(
        parse_time(node["cpu"]["time"]),
        NodeStats(cpu_usage_nano_cores=cpu, memory_working_set_bytes=memory),
        pods,
    )


class PodMetricsPoint(NamedTuple):
    """What a summary says one pod uses: of each of its containers there, the name, the CPU
    (nanocores) and the memory working set (bytes)."""

    namespace: str
    name: str
    containers: tuple[tuple[str, int, int], ...]


class NodeMetricsPoint(NamedTuple):
    """The CPU and memory figures of a node's summary, without the rest (what the usage history
    samples): the node's CPU (nanocores) and memory working set (bytes), and its pods'."""

    cpu_usage_nano_cores: int
    memory_working_set_bytes: int
    pods: list[PodMetricsPoint]


def resource_metrics_of(summary: Summary) -> NodeMetricsPoint:
    """The CPU and memory figures of `summary` (an agent process's node, scraped)."""
    node = summary.node
    pods = [
        PodMetricsPoint(p.namespace, p.name,
                 tuple((c.name, c.cpu_usage_nano_cores, c.memory_working_set_bytes)
                       for c in p.containers))
        for p in summary.pods
    ]  # fmt: skip
    return NodeMetricsPoint(node.cpu_usage_nano_cores, node.memory_working_set_bytes, pods)


Compact = list[Any]
"""[time, node CPU, node memory, [[pod uid, namespace, name, [[container, CPU, memory], …]], …]]:
the figures `summary_of` reads of a summary, CPU in nanocores and memory working sets in
bytes, its time as /stats/summary writes it (to the second)."""


def compact(summary: Summary) -> Compact:
    node = summary.node
    pods = [
        [p.uid, p.namespace, p.name,
         [[c.name, c.cpu_usage_nano_cores, c.memory_working_set_bytes] for c in p.containers]]
        for p in summary.pods
    ]  # fmt: skip
    time = second_instant(summary.time)
    return [time, node.cpu_usage_nano_cores, node.memory_working_set_bytes, pods]


def from_compact(row: Compact) -> Summary:
    """The `Summary` `summary_of` reads of the node's /stats/summary; a ValueError or TypeError
    when `row` is none."""
    time, cpu, memory, pods = row
    return Summary(
        float(time),
        NodeStats(cpu_usage_nano_cores=int(cpu), memory_working_set_bytes=int(memory)),
        [
            PodStats(uid, namespace, name,
                     [ContainerStats(c, int(c_cpu), int(c_memory)) for c, c_cpu, c_memory in cs])
            for uid, namespace, name, cs in pods
        ],
    )  # fmt: skip
