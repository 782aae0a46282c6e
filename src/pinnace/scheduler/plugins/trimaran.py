"""What the Trimaran plugins share (kubernetes-sigs/scheduler-plugins, pkg/trimaran and
apis/config): their common arguments, where node usage comes from, and Go's rounding.

Upstream, each plugin's collector asks a load watcher for the nodes' usage every 30 s: the
metrics server's latest values, or Prometheus' averages and standard deviations over a window.
Here the usage is the metrics API's (metrics.k8s.io, what the node agents report), sampled by
the scheduler every `usageSampleInterval` (a Pinnace argument, default 30s) and averaged over
`usageWindow` (another, default 15m) in the node table (`NodeTable.track_usage`), the mean and
standard deviation of every node kept as columns. `metricProvider.type` may only be
KubernetesMetricsServer (the default), and `watcherAddress` must be empty: Pinnace runs no load
watcher and no Prometheus of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pinnace.clock.duration import parse_duration

KUBERNETES_METRICS_SERVER = "KubernetesMetricsServer"
PROVIDER_TYPES = (KUBERNETES_METRICS_SERVER, "Prometheus", "SignalFx")
"""The metric providers upstream knows; Pinnace serves the first."""
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
    if kind != KUBERNETES_METRICS_SERVER:
        raise ValueError(
            f'metricProvider.type: Unsupported value: "{kind}": supported values: '
            f'"{KUBERNETES_METRICS_SERVER}"'
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
