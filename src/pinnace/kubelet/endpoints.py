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

Everything comes from a reading of the node's stats summary (the usage model, CPU sharing and
the CFS quota), so it agrees with what the metrics API, the eviction manager and the OOM killer
see. As cAdvisor reads a node's containers every housekeeping interval (10 s, the kubelet's
--housekeeping-interval) and serves its latest reading, a node's stats are read at a request
when the last reading is that old, or a container has started or ended since
(`NodeEndpoints`), and every path serves the latest reading, rendered once. The cumulative
counters are integrated between readings (`Counters`): the usage over an interval is taken as
the mean of the rates at its ends, exact for steady usage; a container first read is credited
its current rate since it started. CFS periods are 100 ms, and a period is throttled while the
container demands more than its quota. The text is the Prometheus text format 0.0.4, written
directly (as prometheus_client's `generate_latest` writes the same families, for less).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from prometheus_client.utils import floatToGoString

from pinnace.api.stats import ContainerStats, Summary
from pinnace.clock.rfc3339 import format_time
from pinnace.kubelet.config import HOUSEKEEPING_INTERVAL
from pinnace.kubelet.runtime import (
    ContainerRuntime,
    ContainerState,
    ContainerStatus,
    container_id_of,
)
from pinnace.kubelet.usage import NANO

CFS_PERIOD_SECONDS = 0.1
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
JSON = "application/json"
CADVISOR_LABELS = ("container", "id", "image", "name", "namespace", "pod")
CONTAINER_LABELS = ("container", "namespace", "pod")
POD_LABELS = ("namespace", "pod")


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
class Labels:
    """A container's label sets in the text format (`{name="value",...}`), written once for
    its life: cAdvisor's, and the resource metrics'."""

    cadvisor: str
    resource: str

    @staticmethod
    def of(cid: str, status: ContainerStatus, uid: str, namespace: str, pod: str) -> Labels:
        runtime_id = cid.split("://", 1)[-1]
        cgroup = f"/kubepods/pod{uid}/{runtime_id}"
        values = (status.name, cgroup, status.image, runtime_id, namespace, pod)
        resource = (status.name, namespace, pod)
        return Labels(_labels(CADVISOR_LABELS, values), _labels(CONTAINER_LABELS, resource))


@dataclass(frozen=True)
class ContainerSample:
    uid: str
    namespace: str
    pod: str
    status: ContainerStatus
    stats: ContainerStats
    counters: _Cumulative
    memory_limit_bytes: int
    labels: Labels


class Counters:
    """A node's cumulative CPU counters, advanced at every read; those of containers that no
    longer run are dropped, as cAdvisor drops a removed cgroup's series. With them, each
    container's labels.

    A pod's CPU seconds (`pod_cpu_seconds`, by uid) and the node's (`node_cpu_seconds`) are
    what their containers have used, those gone included, as a cgroup's usage holds its
    children's: a restarted container does not take its pod's count back, and neither is ever
    less than its running containers' sum."""

    def __init__(self) -> None:
        self._containers: dict[str, tuple[_Cumulative, Labels, str]] = {}
        self._gone_cpu_seconds = 0.0
        self._gone_by_pod: dict[str, float] = {}
        self.pod_cpu_seconds: dict[str, float] = {}
        self.node_cpu_seconds = 0.0

    def read(self, summary: Summary, runtime: ContainerRuntime) -> list[ContainerSample]:
        now = summary.time
        statuses = {container_id_of(s.key): s for s in runtime.list_containers() if s.ended is None}
        by_pod_and_name = {(s.sandbox, s.name): cid for cid, s in statuses.items()}
        samples, seen = [], set()
        for pod in summary.pods:
            for stats in pod.containers:
                cid = by_pod_and_name.get((pod.uid, stats.name))
                if cid is None:
                    continue
                status = statuses[cid]
                resources = runtime.resources_of(status)
                quota = resources is not None and resources.cpu_limit_nano_cores > 0
                known = self._containers.get(cid)
                if known is None:
                    rate = stats.cpu_usage_nano_cores / NANO
                    known = (
                        _Cumulative(status.started_at, rate, 0.0),
                        Labels.of(cid, status, pod.uid, pod.namespace, pod.name),
                        pod.uid,
                    )
                    self._containers[cid] = known
                counters, labels, _ = known
                counters.advance(now, stats, quota)
                seen.add(cid)
                limit = resources.memory_limit_bytes if resources is not None else 0
                samples.append(
                    ContainerSample(
                        pod.uid, pod.namespace, pod.name, status, stats, counters, limit, labels
                    )
                )
        for gone in set(self._containers) - seen:
            counters, _, uid = self._containers.pop(gone)
            self._gone_cpu_seconds += counters.cpu_seconds
            self._gone_by_pod[uid] = self._gone_by_pod.get(uid, 0.0) + counters.cpu_seconds
        pods = {pod.uid: self._gone_by_pod.get(pod.uid, 0.0) for pod in summary.pods}
        self._gone_by_pod = {
            uid: self._gone_by_pod[uid] for uid in pods if uid in self._gone_by_pod
        }
        for counters, _, uid in self._containers.values():
            pods[uid] += counters.cpu_seconds
        self.pod_cpu_seconds = pods
        self.node_cpu_seconds = self._gone_cpu_seconds + sum(
            counters.cpu_seconds for counters, _, _ in self._containers.values()
        )
        return samples


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _header(name: str, kind: str, help_text: str) -> str:
    """A family's HELP and TYPE lines (a counter's samples are named `<name>_total`)."""
    name += "_total" if kind == "counter" else ""
    help_text = help_text.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


def _labels(names: tuple[str, ...], values: Iterable[str]) -> str:
    """`{name="value",...}` of labels whose names are in sorted order."""
    pairs = ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))
    return "{" + pairs + "}"


def _line(name: str, labels: str, value: float, at: float | None = None) -> str:
    """One sample, stamped with `at` (clock seconds) when given."""
    stamp = "" if at is None else f" {int(at * 1000):d}"
    return f"{name}{labels} {_go(value)}{stamp}\n"


_go = floatToGoString
"""A value as the text format has it (as Go formats a float64)."""


CADVISOR_HEADERS = (
    _header("container_cpu_usage_seconds", "counter", "Cumulative cpu time consumed in seconds."),
    _header("container_memory_working_set_bytes", "gauge", "Current working set in bytes."),
    _header("container_cpu_cfs_periods", "counter",
            "Number of elapsed enforcement period intervals."),
    _header("container_cpu_cfs_throttled_periods", "counter",
            "Number of throttled period intervals."),
    _header("container_cpu_cfs_throttled_seconds", "counter",
            "Total time duration the container has been throttled."),
    _header("container_oom_events", "counter",
            "Count of out of memory events observed for the container"),
    _header("container_spec_memory_limit_bytes", "gauge", "Memory limit for the container."),
)  # fmt: skip


def cadvisor(samples: list[ContainerSample]) -> bytes:
    """cAdvisor's families in the Prometheus text format, each sample stamped with the time of
    its stats (as cAdvisor's are, so that Prometheus computes rates from when the usage was
    read, not from when its scrape happened to be answered)."""
    cpu, memory, periods, throttled, throttled_seconds, oom, limit = (
        [header] for header in CADVISOR_HEADERS
    )
    for s in samples:
        c, labels = s.counters, s.labels.cadvisor
        stamp = f" {int(c.time * 1000):d}\n"
        cpu.append(f"container_cpu_usage_seconds_total{labels} {_go(c.cpu_seconds)}{stamp}")
        memory.append(f"container_memory_working_set_bytes{labels} "
                      f"{_go(s.stats.memory_working_set_bytes)}{stamp}")  # fmt: skip
        if c.periods:
            periods.append(f"container_cpu_cfs_periods_total{labels} "
                           f"{_go(int(c.periods))}{stamp}")  # fmt: skip
            throttled.append(f"container_cpu_cfs_throttled_periods_total{labels} "
                             f"{_go(int(c.throttled_periods))}{stamp}")  # fmt: skip
            throttled_seconds.append(f"container_cpu_cfs_throttled_seconds_total{labels} "
                                     f"{_go(c.throttled_seconds)}{stamp}")  # fmt: skip
        # A container killed for memory is replaced by a new one: the running one has seen none.
        oom.append(f"container_oom_events_total{labels} 0.0{stamp}")
        limit.append(f"container_spec_memory_limit_bytes{labels} "
                     f"{_go(s.memory_limit_bytes)}{stamp}")  # fmt: skip
    families = (cpu, memory, periods, throttled, throttled_seconds, oom, limit)
    return "".join(line for family in families for line in family).encode()


SWAP_HELP = "Reported only on non-windows systems"
RESOURCE_HEADERS = {
    name: _header(name, kind, help_text)
    for name, kind, help_text in (
        ("container_cpu_usage_seconds", "counter",
         "[STABLE] Cumulative cpu time consumed by the container in core-seconds"),
        ("container_memory_working_set_bytes", "gauge",
         "[STABLE] Current working set of the container in bytes"),
        ("container_start_time_seconds", "gauge",
         "[STABLE] Start time of the container since unix epoch in seconds"),
        ("container_swap_usage_bytes", "gauge",
         f"[ALPHA] Current amount of the container swap usage in bytes. {SWAP_HELP}"),
        ("node_cpu_usage_seconds", "counter",
         "[STABLE] Cumulative cpu time consumed by the node in core-seconds"),
        ("node_memory_working_set_bytes", "gauge",
         "[STABLE] Current working set of the node in bytes"),
        ("node_swap_usage_bytes", "gauge",
         f"[ALPHA] Current swap usage of the node in bytes. {SWAP_HELP}"),
        ("pod_cpu_usage_seconds", "counter",
         "[STABLE] Cumulative cpu time consumed by the pod in core-seconds"),
        ("pod_memory_working_set_bytes", "gauge",
         "[STABLE] Current working set of the pod in bytes"),
        ("pod_swap_usage_bytes", "gauge",
         f"[ALPHA] Current amount of the pod swap usage in bytes. {SWAP_HELP}"),
        ("resource_scrape_error", "gauge",
         "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise"),
    )
}  # fmt: skip
"""The resource metrics collector's families (pkg/kubelet/metrics/collectors/
resource_metrics.go) by name, in the name order the Go registry gathers them in. Its
deprecated `scrape_error` (ALPHA, deprecated since 1.29) is hidden in v1.32."""


def resource_metrics(summary: Summary, samples: list[ContainerSample], node_cpu: float,
                     pod_cpu_seconds: Mapping[str, float]) -> bytes:  # fmt: skip
    """The families of every pod in the summary, those waiting for a container to start
    again too (the kubelet's come from the pod's cgroup). The nodes have no swap: their swap
    usage is 0, as cAdvisor reads it of a node without swap."""
    families = {name: [header] for name, header in RESOURCE_HEADERS.items()}

    def add(family: str, sample: str, labels: str, value: float, at: float | None) -> None:
        families[family].append(_line(sample, labels, value, at))

    # The kubelet stamps each usage sample with the time of its stats
    # (NewLazyMetricWithTimestamp); a start time and the scrape error are not stamped.
    at = summary.time
    add("node_cpu_usage_seconds", "node_cpu_usage_seconds_total", "", node_cpu, at)
    memory = summary.node.memory_working_set_bytes
    add("node_memory_working_set_bytes", "node_memory_working_set_bytes", "", memory, at)
    add("node_swap_usage_bytes", "node_swap_usage_bytes", "", 0, at)
    for s in samples:
        labels = s.labels.resource
        seconds = s.counters.cpu_seconds
        add("container_cpu_usage_seconds", "container_cpu_usage_seconds_total", labels, seconds, at)
        memory = s.stats.memory_working_set_bytes
        add("container_memory_working_set_bytes", "container_memory_working_set_bytes", labels,
            memory, at)  # fmt: skip
        add("container_start_time_seconds", "container_start_time_seconds", labels,
            s.status.started_at, None)  # fmt: skip
        add("container_swap_usage_bytes", "container_swap_usage_bytes", labels, 0, at)
    for pod in summary.pods:
        labels = _labels(POD_LABELS, (pod.namespace, pod.name))
        seconds = pod_cpu_seconds.get(pod.uid, 0.0)
        add("pod_cpu_usage_seconds", "pod_cpu_usage_seconds_total", labels, seconds, at)
        memory = pod.memory_working_set_bytes
        add("pod_memory_working_set_bytes", "pod_memory_working_set_bytes", labels, memory, at)
        add("pod_swap_usage_bytes", "pod_swap_usage_bytes", labels, 0, at)
    add("resource_scrape_error", "resource_scrape_error", "", 0, None)
    return "".join(line for lines in families.values() for line in lines).encode()


KUBELET_HEADERS = (
    _header(
        "kubelet_running_pods", "gauge", "[ALPHA] Number of pods that have a running pod sandbox"
    ),
    _header(
        "kubelet_running_containers", "gauge", "[ALPHA] Number of containers currently running"
    ),
)


def kubelet_metrics(summary: Summary, containers: Iterable[ContainerStatus]) -> bytes:
    """The pods with a sandbox, and the runtime's containers by state (those exited that it
    keeps among them), as the kubelet's PLEG counts them at each relist
    (pkg/kubelet/pleg/generic.go)."""
    states = Counter({ContainerState.RUNNING: 0})
    states.update(c.state for c in containers)
    by_state = [
        _line("kubelet_running_containers", _labels(("container_state",), (state,)), count)
        for state, count in sorted(states.items())
    ]
    return "".join((
        KUBELET_HEADERS[0],
        _line("kubelet_running_pods", "", len(summary.pods)),
        KUBELET_HEADERS[1],
        *by_state,
    )).encode()  # fmt: skip


def stats_summary(node_name: str, summary: Summary, samples: list[ContainerSample],
                  node_cpu: float, pod_cpu_seconds: Mapping[str, float]) -> bytes:  # fmt: skip
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
        pod_seconds = pod_cpu_seconds.get(p.uid, 0.0)
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


@dataclass
class _Reading:
    """A node's stats as read at `summary.time`, after the runtime's `changes`th change, and
    what each path has rendered of them."""

    summary: Summary
    changes: int
    samples: list[ContainerSample]
    node_cpu: float
    pod_cpu: dict[str, float]
    bodies: dict[str, bytes] = field(default_factory=dict)


class NodeEndpoints:
    """What one node's kubelet serves to monitoring. Its stats are read on demand, at most once
    every `housekeeping_interval` seconds (cAdvisor's) unless a container started or ended
    meanwhile (cAdvisor sees a new cgroup at once), and every path serves the latest reading,
    its samples stamped with its time, each body rendered once per reading: scrapes of several
    paths, or by several scrapers, within an interval cost a reading and a rendering, not one
    each."""

    def __init__(self, housekeeping_interval: float = HOUSEKEEPING_INTERVAL) -> None:
        self.housekeeping_interval = housekeeping_interval
        self.counters = Counters()
        self._reading: _Reading | None = None

    def serve(self, node_name: str, path: str, now: float, summarize: Callable[[], Summary],
              runtime: ContainerRuntime) -> tuple[bytes, str] | None:  # fmt: skip
        """(body, content type) of what the kubelet serves at `path` at `now`, `summarize`
        giving the node's stats summary when a new reading is due; None for a path it does
        not serve."""
        content_type = CONTENT_TYPES.get(path)
        if content_type is None:
            return None
        reading = self._latest(now, summarize, runtime)
        body = reading.bodies.get(path)
        if body is None:
            body = reading.bodies[path] = _render(node_name, path, reading, runtime)
        return body, content_type

    def summary(self, now: float, summarize: Callable[[], Summary],
                runtime: ContainerRuntime) -> Summary:  # fmt: skip
        """The stats summary every path serves at `now` (that of the latest reading)."""
        return self._latest(now, summarize, runtime).summary

    def _latest(self, now: float, summarize: Callable[[], Summary],
                runtime: ContainerRuntime) -> _Reading:  # fmt: skip
        reading = self._reading
        if (
            reading is None
            or reading.changes != runtime.changes
            or now - reading.summary.time >= self.housekeeping_interval
        ):
            summary = summarize()
            samples = self.counters.read(summary, runtime)
            node_cpu, pod_cpu = self.counters.node_cpu_seconds, self.counters.pod_cpu_seconds
            reading = self._reading = _Reading(summary, runtime.changes, samples, node_cpu, pod_cpu)
        return reading


def _render(node_name: str, path: str, reading: _Reading, runtime: ContainerRuntime) -> bytes:
    """`path`'s body of `reading`; the runtime is as it was at the reading (a change to it
    makes a new reading)."""
    if path == "/metrics/cadvisor":
        return cadvisor(reading.samples)
    if path == "/metrics/resource":
        return resource_metrics(reading.summary, reading.samples, reading.node_cpu, reading.pod_cpu)
    if path == "/metrics":
        return kubelet_metrics(reading.summary, runtime.list_containers())
    return stats_summary(
        node_name, reading.summary, reading.samples, reading.node_cpu, reading.pod_cpu
    )


CONTENT_TYPES = {
    "/metrics/cadvisor": PROMETHEUS_TEXT,
    "/metrics/resource": PROMETHEUS_TEXT,
    "/metrics": PROMETHEUS_TEXT,
    "/stats/summary": JSON,
}
PATHS = tuple(CONTENT_TYPES)
