"""What a kubelet serves to monitoring, as Prometheus reaches it through the API server's node
proxy (`/api/v1/nodes/NAME/proxy/...`):

- `/metrics/cadvisor`: cAdvisor's container metrics (github.com/google/cadvisor,
  metrics/prometheus.go) with its labels `container, id, image, name, namespace, pod`:
  `container_cpu_usage_seconds_total`, `container_memory_working_set_bytes`,
  `container_cpu_cfs_periods_total`, `container_cpu_cfs_throttled_periods_total`,
  `container_cpu_cfs_throttled_seconds_total`, `container_oom_events_total`,
  `container_spec_memory_limit_bytes`;
- `/metrics/resource`: the kubelet's resource metrics (pkg/kubelet/metrics/collectors/
  resource_metrics.go): node, pod and container CPU seconds and working sets;
- `/metrics`: the kubelet's own (`kubelet_running_pods`, `kubelet_running_containers`);
- `/stats/summary`: the stats summary as JSON (k8s.io/kubelet/pkg/apis/stats/v1alpha1).

Everything comes from the node's stats summary at the moment of the request (the usage model,
CPU sharing and the CFS quota), so it agrees with what the metrics API, the eviction manager and
the OOM killer see. The cumulative counters are integrated between reads (`Counters`): the
usage over an interval is taken as the mean of the rates at its ends, exact for steady usage;
a container first read is credited its current rate since it started. CFS periods are 100 ms,
and a period is throttled while the container demands more than its quota.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from pinnace.api.stats import ContainerStats, Summary
from pinnace.clock.rfc3339 import format_time
from pinnace.kubelet.runtime import ContainerRuntime, ContainerStatus, container_id_of
from pinnace.kubelet.usage import NANO

CFS_PERIOD_SECONDS = 0.1
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
JSON = "application/json"
CADVISOR_LABELS = ["container", "id", "image", "name", "namespace", "pod"]


@dataclass
class _Cumulative:
    """One container's counters at `time`, and the rates read then."""

    time: float
    cpu_rate: float
    throttled_rate: float
    cpu_seconds: float = 0.0
    periods: float = 0.0
    throttled_periods: float = 0.0
    throttled_seconds: float = 0.0

    def advance(self, now: float, stats: ContainerStats, quota: bool) -> None:
        elapsed = max(0.0, now - self.time)
        cpu_rate = stats.cpu_usage_nano_cores / NANO
        throttled_rate = stats.cpu_throttled_nano_cores / NANO
        self.cpu_seconds += elapsed * (self.cpu_rate + cpu_rate) / 2
        if quota:
            periods = elapsed / CFS_PERIOD_SECONDS
            self.periods += periods
            if self.throttled_rate > 0 or throttled_rate > 0:
                self.throttled_periods += periods
            self.throttled_seconds += elapsed * (self.throttled_rate + throttled_rate) / 2
        self.time, self.cpu_rate, self.throttled_rate = now, cpu_rate, throttled_rate


@dataclass(frozen=True)
class ContainerSample:
    uid: str
    namespace: str
    pod: str
    status: ContainerStatus
    stats: ContainerStats
    counters: _Cumulative
    memory_limit_bytes: int


class Counters:
    """A node's cumulative CPU counters, advanced at every read; those of containers that no
    longer run are dropped, as cAdvisor drops a removed cgroup's series."""

    def __init__(self) -> None:
        self._containers: dict[str, _Cumulative] = {}
        self.node: _Cumulative | None = None

    def read(self, summary: Summary, runtime: ContainerRuntime) -> list[ContainerSample]:
        now = summary.time
        statuses = {container_id_of(s.key): s for s in runtime.list_containers()}
        by_pod_and_name = {
            (s.sandbox, s.name): cid for cid, s in statuses.items() if s.ended is None
        }
        samples, seen = [], set()
        for pod in summary.pods:
            for stats in pod.containers:
                cid = by_pod_and_name.get((pod.uid, stats.name))
                if cid is None:
                    continue
                status = statuses[cid]
                resources = runtime.resources_of(status)
                quota = resources is not None and resources.cpu_limit_nano_cores > 0
                counters = self._containers.get(cid)
                if counters is None:
                    rate = stats.cpu_usage_nano_cores / NANO
                    counters = _Cumulative(status.started_at, rate, 0.0)
                    self._containers[cid] = counters
                counters.advance(now, stats, quota)
                seen.add(cid)
                limit = resources.memory_limit_bytes if resources is not None else 0
                samples.append(
                    ContainerSample(
                        pod.uid, pod.namespace, pod.name, status, stats, counters, limit
                    )
                )
        for gone in set(self._containers) - seen:
            del self._containers[gone]
        node_stats = ContainerStats("", cpu_usage_nano_cores=summary.node.cpu_usage_nano_cores)
        if self.node is None:
            self.node = _Cumulative(now, node_stats.cpu_usage_nano_cores / NANO, 0.0)
        self.node.advance(now, node_stats, False)
        return samples


class _Families(Collector):
    def __init__(self, families: Iterable[CounterMetricFamily | GaugeMetricFamily]) -> None:
        self.families = list(families)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        yield from self.families


def exposition(families: Iterable[CounterMetricFamily | GaugeMetricFamily]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(families))
    return generate_latest(registry)


def cadvisor(samples: list[ContainerSample]) -> bytes:
    def family(kind: type, name: str, help_text: str) -> Any:
        return kind(name, help_text, labels=CADVISOR_LABELS)

    cpu = family(CounterMetricFamily, "container_cpu_usage_seconds",
                 "Cumulative cpu time consumed in seconds.")  # fmt: skip
    memory = family(GaugeMetricFamily, "container_memory_working_set_bytes",
                    "Current working set in bytes.")  # fmt: skip
    periods = family(CounterMetricFamily, "container_cpu_cfs_periods",
                     "Number of elapsed enforcement period intervals.")  # fmt: skip
    throttled = family(CounterMetricFamily, "container_cpu_cfs_throttled_periods",
                       "Number of throttled period intervals.")  # fmt: skip
    throttled_seconds = family(CounterMetricFamily, "container_cpu_cfs_throttled_seconds",
                               "Total time duration the container has been throttled.")  # fmt: skip
    oom = family(CounterMetricFamily, "container_oom_events",
                 "Count of out of memory events observed for the container")  # fmt: skip
    limit = family(GaugeMetricFamily, "container_spec_memory_limit_bytes",
                   "Memory limit for the container.")  # fmt: skip
    for s in samples:
        cid = container_id_of(s.status.key)
        runtime_id = cid.split("://", 1)[-1]
        labels = [s.status.name, f"/kubepods/pod{s.uid}/{runtime_id}", s.status.image,
                  runtime_id, s.namespace, s.pod]  # fmt: skip
        c = s.counters
        at = c.time  # cAdvisor stamps each sample with its stats' time, and Prometheus keeps it
        cpu.add_metric(labels, c.cpu_seconds, timestamp=at)
        memory.add_metric(labels, s.stats.memory_working_set_bytes, timestamp=at)
        if c.periods:
            periods.add_metric(labels, int(c.periods), timestamp=at)
            throttled.add_metric(labels, int(c.throttled_periods), timestamp=at)
            throttled_seconds.add_metric(labels, c.throttled_seconds, timestamp=at)
        # A container killed for memory is replaced by a new one: the running one has seen none.
        oom.add_metric(labels, 0, timestamp=at)
        limit.add_metric(labels, s.memory_limit_bytes, timestamp=at)
    return exposition([cpu, memory, periods, throttled, throttled_seconds, oom, limit])


def resource_metrics(summary: Summary, samples: list[ContainerSample], node_cpu: float) -> bytes:
    node_cpu_family = CounterMetricFamily(
        "node_cpu_usage_seconds", "Cumulative cpu time consumed by the node in core-seconds"
    )
    node_cpu_family.add_metric([], node_cpu)
    node_memory = GaugeMetricFamily(
        "node_memory_working_set_bytes", "Current working set of the node in bytes"
    )
    node_memory.add_metric([], summary.node.memory_working_set_bytes)
    labels = ["container", "namespace", "pod"]
    cpu = CounterMetricFamily(
        "container_cpu_usage_seconds",
        "Cumulative cpu time consumed by the container in core-seconds",
        labels=labels,
    )
    memory = GaugeMetricFamily(
        "container_memory_working_set_bytes",
        "Current working set of the container in bytes",
        labels=labels,
    )
    pod_cpu = CounterMetricFamily(
        "pod_cpu_usage_seconds",
        "Cumulative cpu time consumed by the pod in core-seconds",
        labels=["namespace", "pod"],
    )
    pod_memory = GaugeMetricFamily(
        "pod_memory_working_set_bytes",
        "Current working set of the pod in bytes",
        labels=["namespace", "pod"],
    )
    pods: dict[tuple[str, str], list[float]] = {}
    for s in samples:
        cpu.add_metric([s.status.name, s.namespace, s.pod], s.counters.cpu_seconds)
        memory.add_metric([s.status.name, s.namespace, s.pod], s.stats.memory_working_set_bytes)
        totals = pods.setdefault((s.namespace, s.pod), [0.0, 0.0])
        totals[0] += s.counters.cpu_seconds
        totals[1] += s.stats.memory_working_set_bytes
    for (namespace, pod), (pod_seconds, pod_bytes) in pods.items():
        pod_cpu.add_metric([namespace, pod], pod_seconds)
        pod_memory.add_metric([namespace, pod], pod_bytes)
    return exposition([node_cpu_family, node_memory, cpu, memory, pod_cpu, pod_memory])


def kubelet_metrics(summary: Summary) -> bytes:
    pods = GaugeMetricFamily(
        "kubelet_running_pods", "Number of pods that have a running pod sandbox"
    )
    pods.add_metric([], len(summary.pods))
    containers = GaugeMetricFamily(
        "kubelet_running_containers", "Number of containers currently running",
        labels=["container_state"],
    )  # fmt: skip
    containers.add_metric(["running"], sum(len(p.containers) for p in summary.pods))
    return exposition([pods, containers])


def stats_summary(node_name: str, summary: Summary, samples: list[ContainerSample],
                  node_cpu: float) -> bytes:  # fmt: skip
    """The summary in the kubelet's JSON shape (the fields Pinnace models)."""
    time = format_time(summary.time)
    cumulative = {(s.uid, s.status.name): s.counters.cpu_seconds for s in samples}
    node = summary.node

    def cpu(nano_cores: int, seconds: float) -> dict[str, Any]:
        return {"time": time, "usageNanoCores": nano_cores,
                "usageCoreNanoSeconds": round(seconds * NANO)}  # fmt: skip

    def memory(working_set: int) -> dict[str, Any]:
        return {"time": time, "workingSetBytes": working_set}

    pods = []
    for p in summary.pods:
        containers = [
            {
                "name": c.name,
                "cpu": cpu(c.cpu_usage_nano_cores, cumulative.get((p.uid, c.name), 0.0)),
                "memory": memory(c.memory_working_set_bytes),
            }
            for c in p.containers
        ]
        pod_seconds = sum(cumulative.get((p.uid, c.name), 0.0) for c in p.containers)
        pods.append({
            "podRef": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
            "containers": containers,
            "cpu": cpu(p.cpu_usage_nano_cores, pod_seconds),
            "memory": memory(p.memory_working_set_bytes),
        })  # fmt: skip
    document = {
        "node": {
            "nodeName": node_name,
            "cpu": cpu(node.cpu_usage_nano_cores, node_cpu),
            "memory": {
                **memory(node.memory_working_set_bytes),
                "availableBytes": node.memory_available_bytes,
            },
            "fs": {
                "time": time,
                "capacityBytes": node.nodefs_capacity_bytes,
                "usedBytes": node.nodefs_used_bytes,
                "availableBytes": node.nodefs_available_bytes,
            },
        },
        "pods": pods,
    }
    return orjson.dumps(document)


def serve(node_name: str, path: str, summary: Summary, runtime: ContainerRuntime,
          counters: Counters) -> tuple[bytes, str] | None:  # fmt: skip
    """(body, content type) of what the kubelet serves at `path`; None for a path it does
    not."""
    if path not in PATHS:
        return None
    samples = counters.read(summary, runtime)
    node_cpu = counters.node.cpu_seconds if counters.node is not None else 0.0
    if path == "/metrics/cadvisor":
        return cadvisor(samples), PROMETHEUS_TEXT
    if path == "/metrics/resource":
        return resource_metrics(summary, samples, node_cpu), PROMETHEUS_TEXT
    if path == "/metrics":
        return kubelet_metrics(summary), PROMETHEUS_TEXT
    return stats_summary(node_name, summary, samples, node_cpu), JSON


PATHS = ("/metrics/cadvisor", "/metrics/resource", "/metrics", "/stats/summary")
