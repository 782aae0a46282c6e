"""What the Trimaran plugins share (kubernetes-sigs/scheduler-plugins, pkg/trimaran and
apis/config): their common arguments, where node usage comes from, and Go's rounding.

Upstream, each plugin's collector asks a load watcher for the nodes' usage every 30 s: the
metrics server's latest values, or Prometheus' averages and standard deviations over a window.
Here the usage is the metrics API's (metrics.k8s.io, what the node agents report), sampled by
the scheduler every `usageSampleInterval` (a Pinnace argument, default 30s) and averaged over
`usageWindow` (another, default 15m) in the node table (`NodeTable.track_usage`), the mean and
standard deviation of every node kept as columns. `watcherAddress` must be empty: Pinnace runs
no load watcher and no Prometheus of its own.

`metricProvider.type` is KubernetesMetricsServer (the default) or Pinnace's own CustomMetrics.
Upstream, every provider gives the same thing, each node's CPU utilisation in percent, which
the plugins turn into millicores of the node's CPU capacity. CustomMetrics gives instead a
node's load on a Pods metric of custom.metrics.k8s.io (Pinnace's simulated metrics adapter,
`pinnace.metrics.custom`): the sum of `metricProvider.metric` over the node's pods, in percent
of `metricProvider.nodeCapacity` (the load one node can take, a quantity), used where the CPU
utilisation would be; memory stays the metrics API's. Prometheus and SignalFx are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.clock.duration import parse_duration
from pinnace.resources.lists import parse_quantity
from pinnace.resources.names import CPU, MEMORY

KUBERNETES_METRICS_SERVER = "KubernetesMetricsServer"
CUSTOM_METRICS = "CustomMetrics"
"""Pinnace's provider: a Pods custom metric summed per node."""
PROVIDER_TYPES = (KUBERNETES_METRICS_SERVER, "Prometheus", "SignalFx", CUSTOM_METRICS)
"""The metric providers upstream knows, and Pinnace's; Pinnace serves the first and last."""
SERVED_PROVIDERS = (KUBERNETES_METRICS_SERVER, CUSTOM_METRICS)
DEFAULT_SAMPLE_INTERVAL = "30s"
"""The time between usage samples by default (Trimaran's metricsUpdateIntervalSeconds)."""
DEFAULT_USAGE_WINDOW = "15m"
"""The window usage is averaged over by default (load-watcher's FifteenMinutes)."""


def go_round(values: np.ndarray) -> np.ndarray:
    """Go's math.Round (halves away from zero) as int64; NumPy's round goes to even."""
    return (np.sign(values) * np.floor(np.abs(values) + 0.5)).astype(np.int64)


def usage_sampling(args: Mapping[str, Any]) -> tuple[float, float]:
    """The TrimaranSpec arguments checked, and the usage window and sample interval in
    seconds (`usageWindow`, `usageSampleInterval`)."""
    provider = args.get("metricProvider") or {}
    if not isinstance(provider, Mapping):
        raise ValueError(f"metricProvider: Invalid value: {provider!r}: must be a mapping")
    kind = provider.get("type") or KUBERNETES_METRICS_SERVER
    if args.get("watcherAddress"):
        raise ValueError(
            f'watcherAddress: Unsupported value: "{args["watcherAddress"]}": Pinnace reads '
            "node usage from its metrics API, not from a load watcher"
        )
    if kind not in PROVIDER_TYPES:
        raise ValueError(f"invalid MetricProvider.Type, got {kind}")  # checkSpecs' wording
    if kind not in SERVED_PROVIDERS:
        raise ValueError(
            f'metricProvider.type: Unsupported value: "{kind}": supported values: '
            + ", ".join(f'"{t}"' for t in SERVED_PROVIDERS)
        )
    window = _duration(args, "usageWindow", DEFAULT_USAGE_WINDOW)
    interval = _duration(args, "usageSampleInterval", DEFAULT_SAMPLE_INTERVAL)
    if interval <= 0:
        raise ValueError(
            f'usageSampleInterval: Invalid value: "{args["usageSampleInterval"]}": must be positive'
        )
    if window < interval:
        raise ValueError(
            f'usageWindow: Invalid value: "{args.get("usageWindow", DEFAULT_USAGE_WINDOW)}": '
            "must be at least the sample interval"
        )
    return window, interval


@dataclass(frozen=True)
class PodsMetricLoad:
    """The CustomMetrics provider: a node's load is the sum of the Pods custom metric `metric`
    over its pods, out of `node_capacity` (in the metric's units)."""

    metric: str
    node_capacity: float


def pods_metric_load(args: Mapping[str, Any]) -> PodsMetricLoad | None:
    """The CustomMetrics provider of the (checked) TrimaranSpec arguments, or None for the
    metrics API's CPU usage."""
    provider = args.get("metricProvider") or {}
    if provider.get("type") != CUSTOM_METRICS:
        for key in ("metric", "nodeCapacity"):
            if key in provider:
                raise ValueError(
                    f"metricProvider.{key}: Invalid value: {provider[key]!r}: only for type "
                    f'"{CUSTOM_METRICS}"'
                )
        return None
    metric = provider.get("metric")
    if not isinstance(metric, str) or not metric:
        raise ValueError(
            f"metricProvider.metric: Required value: the Pods metric type {CUSTOM_METRICS} reads"
        )
    text = provider.get("nodeCapacity")
    try:
        capacity = float(parse_quantity(str(text)).as_fraction()) if text is not None else 0.0
    except ValueError:
        raise ValueError(
            f"metricProvider.nodeCapacity: Invalid value: {text!r}: must be a quantity"
        ) from None
    if capacity <= 0:
        raise ValueError(
            f"metricProvider.nodeCapacity: Invalid value: {text!r}: must be a positive quantity, "
            "the metric's load one node can take"
        )
    return PodsMetricLoad(metric, capacity)


def _duration(args: Mapping[str, Any], key: str, default: str) -> float:
    text = args.get(key, default)
    if not isinstance(text, str):
        raise ValueError(f"{key}: Invalid value: {text!r}: must be a duration")
    try:
        return parse_duration(text) / 1e9
    except ValueError as e:
        raise ValueError(f'{key}: Invalid value: "{text}": {e}') from None


def go_number(args: Mapping[str, Any], key: str, struct: str, go_type: str) -> Any:
    """`args[key]` when it decodes into a Go `go_type` (int64 or float64), else
    encoding/json's error; None when absent."""
    value = args.get(key)
    if value is None:
        return None
    integral = go_type == "int64"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (integral and not float(value).is_integer())
    ):
        kind = _json_kind(value)
        if kind == "number":  # encoding/json names the number it could not fit
            kind = f"number {value}"
        raise ValueError(
            f"{key}: Invalid value: {value!r}: json: cannot unmarshal {kind} into Go struct "
            f"field {struct}.{key} of type {go_type}"
        )
    return int(value) if integral else float(value)


def go_string(args: Mapping[str, Any], key: str, struct: str) -> str | None:
    value = args.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(
        f"{key}: Invalid value: {value!r}: json: cannot unmarshal {_json_kind(value)} into Go "
        f"struct field {struct}.{key} of type string"
    )


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def resource_requested(pod: Mapping[str, Any]) -> tuple[int, int]:
    """The pod's cpu (millicores) and memory (bytes) requests as Trimaran counts them
    (resourcestats.go's GetResourceRequested): its containers' sum, or any init container's
    if larger (a restartable one too: Trimaran does not add sidecars), plus the overhead."""
    spec = pod.get("spec") or {}

    def amounts(container: Mapping[str, Any]) -> tuple[int, int]:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu, memory = requests.get(CPU), requests.get(MEMORY)
        return (
            parse_quantity(cpu).milli_value() if cpu is not None else 0,
            parse_quantity(memory).value() if memory is not None else 0,
        )

    containers = [amounts(c) for c in spec.get("containers") or ()]
    cpu, memory = sum(c for c, _ in containers), sum(m for _, m in containers)
    for init_cpu, init_memory in (amounts(c) for c in spec.get("initContainers") or ()):
        cpu, memory = max(cpu, init_cpu), max(memory, init_memory)
    overhead_cpu, overhead_memory = amounts({"resources": {"requests": spec.get("overhead")}})
    return cpu + overhead_cpu, memory + overhead_memory
