"""Usage forecasts per workload, from its pods' usage history.

A workload is what controls a pod (`workload_of`): its controller owner, a ReplicaSet made by
a Deployment counting as the Deployment (so a rollout keeps the history), a pod without an
owner being its own workload. `UsageHistory` keeps, per workload, a bounded series of the mean
usage of its pods at each sample (cpu in millicores, memory in bytes), as the scheduler samples
the metrics API (`pinnace.scheduler.adapter`), and forecasts what a pod of the workload will
use. It forgets a workload gone from the samples: a pod of its own at once (its name never
comes back), another once its whole series would be older than a current one's (`limit`
samples without it), so that churn does not make it grow without bound.

- `ewma`: the exponentially weighted mean, s_0 = x_0, s_t = alpha x_t + (1 - alpha) s_{t-1}.
- `holt_winters`: additive Holt-Winters (level, trend and a season of `season_length`
  samples) from statsmodels' ExponentialSmoothing, `horizon` samples ahead. statsmodels is an
  optional extra, `pip install 'pinnace[forecast]'`; without it the method raises
  `ForecastUnavailable` saying so.

Plugins and the research environment read forecasts; nothing here talks to the API.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

EWMA = "ewma"
HOLT_WINTERS = "holt-winters"
METHODS = (EWMA, HOLT_WINTERS)
DEFAULT_ALPHA = 0.3
DEFAULT_LIMIT = 2880
"""Samples kept per workload: a day at the scheduler's 30 s sampling."""
_TEMPLATE_HASH = "pod-template-hash"


class ForecastUnavailable(ImportError):
    """The seasonal method's library is not installed."""


def workload_of(pod: Mapping[str, Any]) -> str:
    """`namespace/Kind/name` of the workload controlling `pod` (see the module's doc)."""
    meta = pod.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    owner = next((o for o in meta.get("ownerReferences") or () if o.get("controller")), None)
    if owner is None:
        return f"{namespace}/Pod/{meta.get('name') or ''}"
    kind, name = owner.get("kind") or "", owner.get("name") or ""
    suffix = f"-{(meta.get('labels') or {}).get(_TEMPLATE_HASH, '')}"
    if kind == "ReplicaSet" and len(suffix) > 1 and name.endswith(suffix):
        return f"{namespace}/Deployment/{name[: -len(suffix)]}"
    return f"{namespace}/{kind}/{name}"


def _is_bare_pod(workload: str) -> bool:
    """Whether `workload` (`workload_of`) is a pod without a controller, its own workload."""
    parts = workload.split("/", 2)
    return len(parts) == 3 and parts[1] == "Pod"


def ewma(values: np.ndarray, alpha: float = DEFAULT_ALPHA) -> float:
    """The exponentially weighted mean of `values` (oldest first), the first value as the
    starting level."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    values = np.asarray(values, np.float64)
    n = len(values)
    if n == 0:
        raise ValueError("no values to average")
    weights = alpha * (1 - alpha) ** np.arange(n - 1, -1, -1, dtype=np.float64)
    weights[0] = (1 - alpha) ** (n - 1)
    return float(weights @ values)


def holt_winters(values: np.ndarray, season_length: int, horizon: int = 1) -> np.ndarray:
    """The next `horizon` values of `values` (oldest first, evenly spaced) by additive
    Holt-Winters with a season of `season_length` values; needs two seasons of history."""
    try:
        from statsmodels.tsa.holtwinters import ExponentialSmoothing
    except ImportError:
        raise ForecastUnavailable(
            "the holt-winters forecast needs statsmodels: pip install 'pinnace[forecast]'"
        ) from None
    values = np.asarray(values, np.float64)
    if season_length < 2:
        raise ValueError(f"season_length must be at least 2, got {season_length}")
    if len(values) < 2 * season_length:
        raise ValueError(
            f"holt-winters needs two seasons ({2 * season_length} values), got {len(values)}"
        )
    # A flat series (usage that does not vary) fits exactly: statsmodels then warns of the
    # log of a zero error in its information criteria, once per forecast.
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        model = ExponentialSmoothing(
            values,
            trend="add",
            seasonal="add",
            seasonal_periods=season_length,
            initialization_method="estimated",
        )
        return np.asarray(model.fit().forecast(horizon), np.float64)


class UsageHistory:
    """Per workload, the mean usage of its pods at each sample: (time, cpu millicores, memory
    bytes), the last `limit` samples."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._series: dict[str, deque[tuple[float, float, float]]] = {}
        self._samples = 0
        self._last_sampled: dict[str, int] = {}
        """By workload, the sample (counted from 1) it was last in."""
        # Forecasts asked since the last sample, by workload and method's parameters: a
        # scheduler asks one per cycle, the history changes once per sample.
        self._forecasts: dict[tuple[Any, ...], tuple[float, float] | None] = {}

    def record(self, time: float, pods: Iterable[tuple[str, float, float]]) -> None:
        """One sample: (workload, cpu millicores, memory bytes) of each pod measured."""
        sums: dict[str, list[float]] = {}
        for workload, cpu, memory in pods:
            entry = sums.setdefault(workload, [0.0, 0.0, 0.0])
            entry[0] += cpu
            entry[1] += memory
            entry[2] += 1
        self._samples += 1
        for workload, (cpu, memory, count) in sums.items():
            series = self._series.get(workload)
            if series is None:
                series = self._series[workload] = deque(maxlen=self.limit)
            series.append((time, cpu / count, memory / count))
            self._last_sampled[workload] = self._samples
        gone = [
            workload
            for workload, last in self._last_sampled.items()
            if last < self._samples
            and (_is_bare_pod(workload) or self._samples - last >= self.limit)
        ]
        for workload in gone:
            del self._series[workload], self._last_sampled[workload]
        self._forecasts.clear()

    def workloads(self) -> list[str]:
        return sorted(self._series)

    def series(self, workload: str) -> np.ndarray:
        """The samples of `workload`, oldest first: rows of (time, cpu, memory)."""
        return np.array(self._series.get(workload, ()), np.float64).reshape(-1, 3)

    def forecast(
        self,
        workload: str,
        method: str = EWMA,
        *,
        alpha: float = DEFAULT_ALPHA,
        season_length: int = 0,
        horizon: int = 1,
    ) -> tuple[float, float] | None:
        """What a pod of `workload` is forecast to use (cpu millicores, memory bytes), or None
        without enough history: none, or for Holt-Winters less than two seasons. Holt-Winters
        forecasts `horizon` samples ahead and takes the last. Kept until the next sample is
        recorded."""
        if workload not in self._series:
            # A workload never sampled (a bare pod's is its own): no forecast, and nothing kept
            # for it (a bare pod a cycle would otherwise add a key and an empty series each).
            return None
        key = (workload, method, alpha, season_length, horizon)
        if key in self._forecasts:
            return self._forecasts[key]
        forecast = self._forecast(workload, method, alpha, season_length, horizon)
        self._forecasts[key] = forecast
        return forecast

    def _forecast(
        self, workload: str, method: str, alpha: float, season_length: int, horizon: int
    ) -> tuple[float, float] | None:
        samples = self.series(workload)
        if len(samples) == 0:
            return None
        if method == EWMA:
            return ewma(samples[:, 1], alpha), ewma(samples[:, 2], alpha)
        if method == HOLT_WINTERS:
            if len(samples) < 2 * season_length:
                return None
            cpu = holt_winters(samples[:, 1], season_length, horizon)[-1]
            memory = holt_winters(samples[:, 2], season_length, horizon)[-1]
            return float(cpu), float(memory)
        raise ValueError(f"unknown forecast method {method!r}: one of {', '.join(METHODS)}")
