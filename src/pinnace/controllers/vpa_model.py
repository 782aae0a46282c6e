"""The Vertical Pod Autoscaler recommender's model, as kubernetes/autoscaler's
vertical-pod-autoscaler/pkg/recommender (util/histogram.go, util/decaying_histogram.go,
util/histogram_options.go, model/aggregate_container_state.go, model/container.go and
logic/estimator.go, logic/recommender.go).

A container's usage goes into two decaying histograms with exponential buckets (each 5 %
wider than the one before): CPU samples in cores, weighted by 0.1, and memory peaks in bytes,
one per aggregation interval (24 h). A sample's weight doubles every half-life (24 h) after a
reference time, which is the same as older samples decaying. The estimates are percentiles of
them (target 90th, lower bound 50th, upper bound 95th) plus a 15 % safety margin, the bounds
widened while the history is short, and at least 25m CPU and 250Mi memory per pod.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

HOUR = 3600.0
MIN_SAMPLE_WEIGHT = 0.1
EPSILON = 0.001 * MIN_SAMPLE_WEIGHT
BUCKET_SIZE_GROWTH = 0.05
HALF_LIFE = 24 * HOUR
MEMORY_AGGREGATION_INTERVAL = 24 * HOUR
MAX_DECAY_EXPONENT = 100
SAFETY_MARGIN = 0.15
POD_MIN_CPU_MILLICORES = 25.0
POD_MIN_MEMORY_MB = 250.0
CONFIDENCE_INTERVAL = 24 * HOUR
TARGET_PERCENTILE = 0.9
LOWER_BOUND_PERCENTILE = 0.5
UPPER_BOUND_PERCENTILE = 0.95


@dataclass(frozen=True)
class ExponentialBuckets:
    """Bucket i starts at first * (ratio**i - 1) / (ratio - 1); the last one is unbounded."""

    max_value: float
    first: float
    ratio: float = 1.0 + BUCKET_SIZE_GROWTH
    epsilon: float = EPSILON

    @property
    def count(self) -> int:
        ratio = self.ratio
        return math.ceil(math.log(self.max_value * (ratio - 1) / self.first + 1, ratio)) + 1

    def find(self, value: float) -> int:
        if value < self.first:
            return 0
        bucket = int(math.log(value * (self.ratio - 1) / self.first + 1, self.ratio))
        return min(bucket, self.count - 1)

    def start(self, bucket: int) -> float:
        if bucket == 0:
            return 0.0
        return self.first * (self.ratio**bucket - 1) / (self.ratio - 1)


CPU_BUCKETS = ExponentialBuckets(1000.0, 0.01)
"""Cores, from 10m up to 1000 cores."""
MEMORY_BUCKETS = ExponentialBuckets(1e12, 1e7)
"""Bytes, from 10 MB up to 1 TB."""


class Histogram:
    """histogram.go: bucket weights and the range of buckets holding any."""

    def __init__(self, buckets: ExponentialBuckets) -> None:
        self.buckets = buckets
        self.weights = [0.0] * buckets.count
        self.total = 0.0
        self.min_bucket = buckets.count - 1
        self.max_bucket = 0

    def add(self, value: float, weight: float) -> None:
        bucket = self.buckets.find(value)
        self.weights[bucket] += weight
        self.total += weight
        if bucket < self.min_bucket and self.weights[bucket] >= self.buckets.epsilon:
            self.min_bucket = bucket
        if bucket > self.max_bucket and self.weights[bucket] >= self.buckets.epsilon:
            self.max_bucket = bucket

    def subtract(self, value: float, weight: float) -> None:
        bucket = self.buckets.find(value)
        self.total = _safe_subtract(self.total, weight, self.buckets.epsilon)
        self.weights[bucket] = _safe_subtract(self.weights[bucket], weight, self.buckets.epsilon)
        self._update_range()

    def is_empty(self) -> bool:
        return self.weights[self.min_bucket] < self.buckets.epsilon

    def percentile(self, percentile: float) -> float:
        """The end of the first bucket at which the weights reach `percentile` of the total
        (the start of the last bucket if that is the one)."""
        if self.is_empty():
            return 0.0
        threshold = percentile * self.total
        partial = 0.0
        bucket = self.min_bucket
        while bucket < self.max_bucket:
            partial += self.weights[bucket]
            if partial >= threshold:
                break
            bucket += 1
        if bucket < self.buckets.count - 1:
            return self.buckets.start(bucket + 1)
        return self.buckets.start(bucket)

    def scale(self, factor: float) -> None:
        for bucket in range(self.min_bucket, self.max_bucket + 1):
            self.weights[bucket] *= factor
        self.total *= factor
        self._update_range()

    def _update_range(self) -> None:
        epsilon, last = self.buckets.epsilon, self.buckets.count - 1
        while self.weights[self.min_bucket] < epsilon and self.min_bucket < last:
            self.min_bucket += 1
        while self.weights[self.max_bucket] < epsilon and self.max_bucket > 0:
            self.max_bucket -= 1


def _safe_subtract(value: float, sub: float, epsilon: float) -> float:
    value -= sub
    return 0.0 if value < epsilon else value


class DecayingHistogram(Histogram):
    """decaying_histogram.go: a sample at time t weighs weight * 2**((t - reference) /
    half_life); the reference moves forward (scaling every weight down) when a sample would
    otherwise weigh more than 2**100 times."""

    def __init__(self, buckets: ExponentialBuckets, half_life: float = HALF_LIFE) -> None:
        super().__init__(buckets)
        self.half_life = half_life
        self.reference = 0.0

    def add_sample(self, value: float, weight: float, time: float) -> None:
        self.add(value, weight * self._decay_factor(time))

    def subtract_sample(self, value: float, weight: float, time: float) -> None:
        self.subtract(value, weight * self._decay_factor(time))

    def _decay_factor(self, time: float) -> float:
        if time > self.reference + self.half_life * MAX_DECAY_EXPONENT:
            self._shift_reference(time)
        return 2.0 ** ((time - self.reference) / self.half_life)

    def _shift_reference(self, time: float) -> None:
        # Go's Time.Round(halfLife) on an absolute time: a multiple of the half-life (Unix
        # time 0 is a whole number of days after Go's zero time).
        new_reference = _round(time / self.half_life) * self.half_life
        self.scale(math.ldexp(1.0, _round((self.reference - new_reference) / self.half_life)))
        self.reference = new_reference


def _round(x: float) -> int:
    return math.floor(x + 0.5)


@dataclass
class AggregateContainerState:
    """aggregate_container_state.go: the usage of one container of the pods a VPA controls."""

    cpu: DecayingHistogram = field(default_factory=lambda: DecayingHistogram(CPU_BUCKETS))
    memory_peaks: DecayingHistogram = field(
        default_factory=lambda: DecayingHistogram(MEMORY_BUCKETS)
    )
    first_sample_start: float | None = None
    last_sample_start: float = 0.0
    total_samples: int = 0

    def add_cpu_sample(self, cores: float, time: float) -> None:
        self.cpu.add_sample(cores, MIN_SAMPLE_WEIGHT, time)
        self.last_sample_start = max(self.last_sample_start, time)
        if self.first_sample_start is None or time < self.first_sample_start:
            self.first_sample_start = time
        self.total_samples += 1


@dataclass
class ContainerState:
    """container.go: one container of one pod; its memory samples become one peak per
    aggregation interval in the aggregate."""

    aggregate: AggregateContainerState
    last_cpu_sample: float | None = None
    memory_peak: float = 0.0
    window_end: float | None = None
    last_memory_sample: float | None = None
    interval: float = MEMORY_AGGREGATION_INTERVAL

    def add_cpu_sample(self, cores: float, time: float) -> bool:
        if cores < 0 or (self.last_cpu_sample is not None and time <= self.last_cpu_sample):
            return False  # invalid, duplicate or out of order
        self.aggregate.add_cpu_sample(cores, time)
        self.last_cpu_sample = time
        return True

    def add_memory_sample(self, used: float, time: float) -> bool:
        if used < 0 or (self.last_memory_sample is not None and time < self.last_memory_sample):
            return False
        self.last_memory_sample = time
        if self.window_end is None:
            self.window_end = time
        peaks = self.aggregate.memory_peaks
        new_peak = False
        if time < self.window_end:
            if self.memory_peak != 0 and used > self.memory_peak:
                peaks.subtract_sample(self.memory_peak, 1.0, self.window_end)
                new_peak = True
        else:
            passed = (time - self.window_end) // self.interval * self.interval
            self.window_end += passed + self.interval
            self.memory_peak = 0.0
            new_peak = True
        if new_peak:
            peaks.add_sample(used, 1.0, self.window_end)
            self.memory_peak = used
        return True


@dataclass(frozen=True)
class RecommenderConfig:
    """The recommender's flags that shape its estimates."""

    safety_margin: float = SAFETY_MARGIN
    pod_min_cpu_millicores: float = POD_MIN_CPU_MILLICORES
    pod_min_memory_mb: float = POD_MIN_MEMORY_MB
    confidence_interval_cpu: float = CONFIDENCE_INTERVAL
    confidence_interval_memory: float = CONFIDENCE_INTERVAL


MAX_RESOURCE_AMOUNT = 10**14


def amount(value: float) -> int:
    """resourceAmountFromFloat: truncated to an integer, within [0, 1e14] (NaN, from an
    empty histogram's 0 times an infinite multiplier, as 0)."""
    if math.isnan(value):
        return 0
    if value > MAX_RESOURCE_AMOUNT:
        return MAX_RESOURCE_AMOUNT
    return int(max(value, 0.0))


@dataclass(frozen=True)
class Estimate:
    """Millicores and bytes ("cpu", "memory"), for the target, lower and upper bound of one
    container."""

    target: dict[str, int]
    lower: dict[str, int]
    upper: dict[str, int]


def _confidence(state: AggregateContainerState, interval: float) -> float:
    """History length in confidence intervals (days by default), or the samples in
    intervals' minutes if fewer: a sample a minute over the interval makes 1."""
    lifespan = state.last_sample_start - (state.first_sample_start or 0.0)
    return min(lifespan / interval, state.total_samples / (interval / 60.0))


def _confidence_factor(multiplier: float, exponent: float, confidence: float) -> float:
    if confidence == 0:
        return math.inf if exponent > 0 else 0.0  # Go's float division by zero
    return float((1.0 + multiplier / confidence) ** exponent)


def _estimates(
    percentiles: tuple[float, ...], margin: float, confidence: float
) -> tuple[int, int, int]:
    """(target, lower, upper) of one resource: a percentile each, plus the safety margin, the
    bounds scaled by the confidence multipliers; each step truncates as ResourceAmount does."""
    target, lower, upper = (amount(p) for p in percentiles)
    target, lower, upper = (v + amount(v * margin) for v in (target, lower, upper))
    upper = amount(upper * _confidence_factor(1.0, 1.0, confidence))
    lower = amount(lower * _confidence_factor(0.001, -2.0, confidence))
    return target, lower, upper


def estimate(
    state: AggregateContainerState, containers: int, config: RecommenderConfig
) -> Estimate:
    """estimateContainerResources for a pod with `containers` containers recommended for:
    the pod's minimum resources are shared among them."""
    fraction = 1.0 / containers
    minimum = {
        "cpu": amount(amount(config.pod_min_cpu_millicores) * fraction),
        "memory": amount(amount(config.pod_min_memory_mb * 1024 * 1024) * fraction),
    }
    cpu = _estimates(
        tuple(state.cpu.percentile(p) * 1000.0 for p in _PERCENTILES),
        config.safety_margin,
        _confidence(state, config.confidence_interval_cpu),
    )
    memory = _estimates(
        tuple(state.memory_peaks.percentile(p) for p in _PERCENTILES),
        config.safety_margin,
        _confidence(state, config.confidence_interval_memory),
    )
    target, lower, upper = (
        {"cpu": max(cpu[i], minimum["cpu"]), "memory": max(memory[i], minimum["memory"])}
        for i in range(3)
    )
    return Estimate(target, lower, upper)


_PERCENTILES = (TARGET_PERCENTILE, LOWER_BOUND_PERCENTILE, UPPER_BOUND_PERCENTILE)
