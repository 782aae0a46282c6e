"""How many replicas one metric asks for, as kube-controller-manager v1.32's
ReplicaCalculator works it out (pkg/controller/podautoscaler/replica_calculator.go).

Pods are grouped first: deleted and failed pods are ignored; pending pods, and for CPU pods
still starting up (within the CPU initialization period and not yet ready, or ready for less
than one metrics window; or never ready within the initial readiness delay), are unready; pods
without a metric are missing. The ratio of usage to target over the ready pods with metrics
decides; within the tolerance nothing changes. When scaling up, unready pods count as using
nothing; missing pods count as using nothing when scaling up and their full request (or the
target, if higher) when scaling down; if that reverses the direction, or lands within the
tolerance, the count stays. Pods metrics (custom.metrics.k8s.io) follow the same rules as a
resource's average value, with no start-up allowance (that is CPU's alone).

An Object metric with a Value target, or an External one, compares one value with its target:
the ratio times the ready pods, unless within the tolerance (and the ratio itself when
scaled to zero). With an AverageValue target the value is divided among the target's
replicas (status.replicas) instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pinnace.api.objects import Object
from pinnace.clock import parse_duration, parse_time
from pinnace.resources.quantity import Quantity

DEFAULT_TOLERANCE = 0.1
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0
DEFAULT_INITIAL_READINESS_DELAY = 30.0
CUSTOM_METRIC_WINDOW = 30.0
"""The window the metrics client assumes when a custom metric gives none."""


class MetricError(Exception):
    """A replica count could not be computed; the message is the one the HPA reports."""


@dataclass(frozen=True)
class PodMetric:
    value: int
    """Milli-units: millicores of CPU, thousandths of a byte of memory."""
    timestamp: float = 0.0
    window: float = 0.0


PodMetricsInfo = dict[str, PodMetric]


@dataclass(frozen=True)
class Proposal:
    replicas: int
    utilization: int | None
    """The average utilization in percent of the request, for Utilization targets."""
    raw_average: int
    """The average usage per pod, in milli-units."""


def go_duration_seconds(text: str) -> float:
    """A Go duration ("10s", "1m30.5s") in seconds; 0 for anything else."""
    try:
        return parse_duration(text) / 1e9
    except ValueError:
        return 0.0


def pod_metrics_info(listed: Object, resource: str, container: str = "") -> PodMetricsInfo:
    """The pods' usage of `resource` from a PodMetricsList, summed over their containers (or
    of the one named `container`). A pod with no containers, or a container without the
    resource, is left out."""
    if not listed.get("items"):
        raise MetricError("no metrics returned from resource metrics API")
    found: PodMetricsInfo = {}
    for item in listed["items"]:
        containers = [
            c for c in item.get("containers") or [] if not container or c.get("name") == container
        ]
        usages = [(c.get("usage") or {}).get(resource) for c in containers]
        present = [u for u in usages if u is not None]
        if not usages or len(present) < len(usages):
            continue
        found[item["metadata"]["name"]] = PodMetric(
            sum(Quantity(u).milli_value() for u in present),
            parse_time(item["timestamp"]),
            go_duration_seconds(item.get("window", "")),
        )
    return found


def custom_pod_metrics_info(listed: Object) -> PodMetricsInfo:
    """The pods' values from a custom.metrics.k8s.io MetricValueList (GetRawMetric)."""
    if not listed.get("items"):
        raise MetricError("no metrics returned from custom metrics API")
    found: PodMetricsInfo = {}
    for item in listed["items"]:
        window = item.get("windowSeconds")
        found[item["describedObject"]["name"]] = PodMetric(
            Quantity(item["value"]).milli_value(),
            parse_time(item["timestamp"]),
            float(window) if window is not None else CUSTOM_METRIC_WINDOW,
        )
    return found


def external_metric_values(listed: Object) -> list[int]:
    """The series' values, in milli-units, of an ExternalMetricValueList (GetExternalMetric)."""
    if not listed.get("items"):
        raise MetricError("no metrics returned from external metrics API")
    return [Quantity(item["value"]).milli_value() for item in listed["items"]]


def ready_pods_count(pods: Iterable[Object]) -> int:
    """The Running and Ready pods (getReadyPodsCount)."""
    pods = list(pods)
    if not pods:
        raise MetricError(
            "unable to calculate ready pods: no pods returned by selector while calculating "
            "replica count"
        )
    return sum(
        1
        for pod in pods
        if (pod.get("status") or {}).get("phase") == "Running"
        and (_ready_condition(pod) or {}).get("status") == "True"
    )


def _ready_condition(pod: Object) -> Object | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition
    return None


def _time(text: str | None) -> float | None:
    return parse_time(text) if text else None


@dataclass
class PodGroups:
    ready_count: int
    unready: set[str]
    missing: set[str]
    ignored: set[str]


def group_pods(
    pods: Iterable[Object],
    metrics: PodMetricsInfo,
    resource: str,
    cpu_initialization_period: float,
    initial_readiness_delay: float,
    now: float,
) -> PodGroups:
    groups = PodGroups(0, set(), set(), set())
    for pod in pods:
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        if pod["metadata"].get("deletionTimestamp") or phase == "Failed":
            groups.ignored.add(name)
            continue
        if phase == "Pending":
            groups.unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            groups.missing.add(name)
            continue
        if resource == "cpu" and _unready_for_cpu(
            pod, metric, cpu_initialization_period, initial_readiness_delay, now
        ):
            groups.unready.add(name)
            continue
        groups.ready_count += 1
    return groups


def _unready_for_cpu(
    pod: Object, metric: PodMetric, initialization: float, readiness_delay: float, now: float
) -> bool:
    condition = _ready_condition(pod)
    started = _time((pod.get("status") or {}).get("startTime"))
    if condition is None or started is None:
        return True
    transition = _time(condition.get("lastTransitionTime")) or 0.0
    if started + initialization > now:
        # Starting up: a sample counts once the pod is ready and one whole window has been
        # measured since it became so.
        return condition.get("status") == "False" or metric.timestamp < transition + metric.window
    # Past start-up: only a pod that has never been ready is left out.
    return condition.get("status") == "False" and started + readiness_delay > transition


def pod_requests(pods: Iterable[Object], resource: str, container: str = "") -> dict[str, int]:
    """Each pod's request of `resource` in milli-units, over its containers and restartable
    (sidecar) init containers, or of the one named `container`; a container without the
    request is an error."""
    requests: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = list(spec.get("containers") or []) + [
            c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
        ]
        total = 0
        for c in containers:
            if container and c.get("name") != container:
                continue
            request = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if request is None:
                raise MetricError(
                    f"missing request for {resource} in container {c.get('name', '')} "
                    f"of Pod {pod['metadata']['name']}"
                )
            total += Quantity(request).milli_value()
        requests[pod["metadata"]["name"]] = total
    return requests


def resource_utilization_ratio(
    metrics: PodMetricsInfo, requests: dict[str, int], target_utilization: int
) -> tuple[float, int, int]:
    """(usage ratio, utilization in percent, average usage in milli-units) over the pods that
    have both a metric and a request."""
    metrics_total = requests_total = entries = 0
    for name, metric in metrics.items():
        if name not in requests:
            continue  # a metric of a pod that is not ours
        metrics_total += metric.value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = metrics_total * 100 // requests_total
    return utilization / target_utilization, utilization, metrics_total // entries


def metric_usage_ratio(metrics: PodMetricsInfo, target_usage: int) -> tuple[float, int]:
    """(usage ratio, average usage in milli-units)."""
    usage = sum(m.value for m in metrics.values()) // len(metrics)
    return usage / target_usage, usage


@dataclass(frozen=True)
class ReplicaCalculator:
    tolerance: float = DEFAULT_TOLERANCE
    cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = DEFAULT_INITIAL_READINESS_DELAY

    def _within_tolerance(self, ratio: float) -> bool:
        return abs(1.0 - ratio) <= self.tolerance

    def _groups(
        self, pods: list[Object], metrics: PodMetricsInfo, resource: str, now: float
    ) -> PodGroups:
        if not pods:
            raise MetricError("no pods returned by selector while calculating replica count")
        groups = group_pods(
            pods,
            metrics,
            resource,
            self.cpu_initialization_period,
            self.initial_readiness_delay,
            now,
        )
        for name in groups.ignored | groups.unready:
            metrics.pop(name, None)
        if not metrics:
            raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
        return groups

    def resource_replicas(
        self,
        current: int,
        target_utilization: int,
        resource: str,
        metrics: PodMetricsInfo,
        pods: list[Object],
        now: float,
        container: str = "",
    ) -> Proposal:
        """GetResourceReplicas: a target utilization in percent of the pods' requests."""
        metrics = dict(metrics)
        groups = self._groups(pods, metrics, resource, now)
        requests = pod_requests(pods, resource, container)
        _, utilization, raw = resource_utilization_ratio(metrics, requests, target_utilization)
        fallback = max(100, target_utilization)
        replicas = self._replicas(
            current,
            metrics,
            groups,
            lambda: resource_utilization_ratio(metrics, requests, target_utilization)[0],
            lambda name: requests[name] * fallback // 100,
        )
        return Proposal(replicas, utilization, raw)

    def raw_resource_replicas(
        self,
        current: int,
        target_usage: int,
        resource: str,
        metrics: PodMetricsInfo,
        pods: list[Object],
        now: float,
    ) -> Proposal:
        """GetRawResourceReplicas: a target average usage per pod, in milli-units."""
        metrics = dict(metrics)
        groups = self._groups(pods, metrics, resource, now)
        _, usage = metric_usage_ratio(metrics, target_usage)
        replicas = self._replicas(
            current,
            metrics,
            groups,
            lambda: metric_usage_ratio(metrics, target_usage)[0],
            lambda _name: target_usage,
        )
        return Proposal(replicas, None, usage)

    def _replicas(
        self,
        current: int,
        metrics: dict[str, PodMetric],
        groups: PodGroups,
        usage_ratio: Callable[[], float],
        usage_when_missing: Callable[[str], int],
    ) -> int:
        """The replica count both calculations share: the ratio of usage to target over the
        ready pods with metrics; if that is within tolerance, or pods are unready or without
        metrics, the ratio again with the missing pods at `usage_when_missing` (scaling down)
        or 0 (scaling up) and unready ones at 0 when scaling up — unless that reverses the
        direction."""
        ratio = usage_ratio()
        scale_up_with_unready = bool(groups.unready) and ratio > 1.0
        if not scale_up_with_unready and not groups.missing:
            if self._within_tolerance(ratio):
                return current
            return math.ceil(ratio * groups.ready_count)
        if groups.missing:
            if ratio < 1.0:
                for name in groups.missing:
                    metrics[name] = PodMetric(usage_when_missing(name))
            elif ratio > 1.0:
                for name in groups.missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in groups.unready:
                metrics[name] = PodMetric(0)
        return self._rebalanced(current, ratio, usage_ratio(), len(metrics))

    def usage_ratio_replicas(self, current: int, ratio: float, pods: list[Object]) -> int:
        """getUsageRatioReplicaCount: one value against its target (Object and External
        metrics with a Value target); from zero replicas, the ratio alone."""
        if current == 0:
            return math.ceil(ratio)
        if self._within_tolerance(ratio):
            return current
        return math.ceil(ratio * ready_pods_count(pods))

    def per_pod_replicas(
        self, status_replicas: int, total: int, target_average: int
    ) -> tuple[int, int]:
        """GetObjectPerPodMetricReplicas and GetExternalPerPodMetricReplicas: (replicas, the
        value per replica in milli-units) for a value divided among the target's replicas."""
        replicas = status_replicas
        ratio = total / (target_average * status_replicas) if status_replicas else math.inf
        if not self._within_tolerance(ratio):
            replicas = math.ceil(total / target_average)
        average = math.ceil(total / status_replicas) if status_replicas else 0
        return replicas, average

    def _rebalanced(self, current: int, ratio: float, new_ratio: float, counted: int) -> int:
        """The count once missing and unready pods are accounted for; the current count when
        that lands within the tolerance or turns the direction around."""
        if (
            self._within_tolerance(new_ratio)
            or (ratio < 1.0 < new_ratio)
            or (ratio > 1.0 > new_ratio)
        ):
            return current
        replicas = math.ceil(new_ratio * counted)
        if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
            return current
        return replicas
