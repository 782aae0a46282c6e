"""The VPA recommender's model against vectors worked out from its algorithm
(kubernetes/autoscaler vertical-pod-autoscaler/pkg/recommender: histograms with buckets 5 %
wider each, 24 h half-life decay, percentiles, the 15 % margin, the confidence multipliers,
the pod minimums)."""

from __future__ import annotations

import math

import pytest

from pinnace.controllers.vpa_model import (
    CPU_BUCKETS,
    MEMORY_BUCKETS,
    AggregateContainerState,
    ContainerState,
    DecayingHistogram,
    RecommenderConfig,
    estimate,
)

DAY = 86400.0
T0 = 1_735_689_600.0  # 2025-01-01T00:00:00Z, a whole number of days after Go's zero time
MIB = 1024 * 1024


def start(bucket: int, first: float) -> float:
    """Where exponential bucket `bucket` starts: first * (1.05**bucket - 1) / 0.05."""
    return first * (1.05**bucket - 1) / 0.05


def test_bucket_scheme_is_upstreams() -> None:
    # ceil(log_1.05(max * 0.05 / first + 1)) + 1
    assert CPU_BUCKETS.count == math.ceil(math.log(1000 * 0.05 / 0.01 + 1, 1.05)) + 1 == 176
    assert MEMORY_BUCKETS.count == math.ceil(math.log(1e12 * 0.05 / 1e7 + 1, 1.05)) + 1 == 176
    assert CPU_BUCKETS.find(0.0) == 0 and CPU_BUCKETS.find(0.009) == 0
    assert CPU_BUCKETS.find(0.5) == 25  # int(log_1.05(0.5 * 0.05 / 0.01 + 1)) = int(25.68)
    assert CPU_BUCKETS.start(26) == pytest.approx(start(26, 0.01))
    assert CPU_BUCKETS.find(1e6) == 175  # everything above the maximum goes in the last


def test_percentile_is_the_end_of_the_bucket_reaching_it() -> None:
    histogram = DecayingHistogram(CPU_BUCKETS)
    for cores in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        histogram.add_sample(cores, 1.0, T0)
    for percentile, cores in ((0.5, 0.5), (0.9, 0.9), (0.95, 1.0), (1.0, 1.0)):
        bucket = CPU_BUCKETS.find(cores)
        assert histogram.percentile(percentile) == pytest.approx(start(bucket + 1, 0.01))
    assert DecayingHistogram(CPU_BUCKETS).percentile(0.9) == 0.0


def test_a_sample_a_half_life_later_weighs_twice_as_much() -> None:
    decayed = DecayingHistogram(CPU_BUCKETS)
    decayed.add_sample(0.1, 1.0, T0)
    decayed.add_sample(1.0, 1.0, T0 + DAY)
    # weights 1 and 2: the median (1.5 of 3) lies in the later sample's bucket
    assert decayed.percentile(0.5) == pytest.approx(start(CPU_BUCKETS.find(1.0) + 1, 0.01))
    same_time = DecayingHistogram(CPU_BUCKETS)
    same_time.add_sample(0.1, 1.0, T0)
    same_time.add_sample(1.0, 1.0, T0)
    assert same_time.percentile(0.5) == pytest.approx(start(CPU_BUCKETS.find(0.1) + 1, 0.01))


def test_memory_keeps_one_peak_per_aggregation_interval() -> None:
    aggregate = AggregateContainerState()
    container = ContainerState(aggregate)
    for i, used in enumerate((100 * MIB, 300 * MIB, 200 * MIB)):
        assert container.add_memory_sample(used, T0 + i)
    peaks = aggregate.memory_peaks
    # One peak (300Mi) for the window ending a day after the first sample, weighing 1 then.
    assert peaks.total == pytest.approx(1.0)
    assert peaks.percentile(0.5) == pytest.approx(start(MEMORY_BUCKETS.find(300 * MIB) + 1, 1e7))
    container.add_memory_sample(50 * MIB, T0 + 3600)  # lower, same window: no change
    assert peaks.total == pytest.approx(1.0)
    container.add_memory_sample(50 * MIB, T0 + DAY)  # the next window's peak weighs 2
    assert peaks.total == pytest.approx(3.0)
    assert peaks.percentile(0.5) == pytest.approx(start(MEMORY_BUCKETS.find(50 * MIB) + 1, 1e7))
    assert peaks.percentile(1.0) == pytest.approx(start(MEMORY_BUCKETS.find(300 * MIB) + 1, 1e7))


def _steady(cores: float, memory: float, minutes: int) -> AggregateContainerState:
    """A sample a minute for `minutes` minutes, from T0."""
    aggregate = AggregateContainerState()
    container = ContainerState(aggregate)
    for minute in range(minutes + 1):
        container.add_cpu_sample(cores, T0 + 60 * minute)
        container.add_memory_sample(memory, T0 + 60 * minute)
    return aggregate


def _with_margin(value: float) -> int:
    """The percentile as a ResourceAmount plus the 15 % margin, each truncated."""
    base = int(value)
    return base + int(base * 0.15)


def test_target_and_bounds_after_a_day_of_history() -> None:
    aggregate = _steady(0.5, 300 * MIB, 24 * 60)
    found = estimate(aggregate, 1, RecommenderConfig())
    cpu = _with_margin(start(CPU_BUCKETS.find(0.5) + 1, 0.01) * 1000)
    memory = _with_margin(start(MEMORY_BUCKETS.find(300 * MIB) + 1, 1e7))
    assert found.target == {"cpu": cpu, "memory": memory} == {"cpu": 587, "memory": 380258472}
    # a day of history, 1441 samples: confidence min(1 day, 1441/1440) = 1
    assert found.upper == {"cpu": int(cpu * 2.0), "memory": int(memory * 2.0)}
    assert found.lower == {"cpu": int(cpu * 1.001**-2), "memory": int(memory * 1.001**-2)}


def test_short_history_widens_the_bounds() -> None:
    aggregate = _steady(0.5, 300 * MIB, 30)
    found = estimate(aggregate, 1, RecommenderConfig())
    confidence = min(1800 / DAY, 31 / 1440)  # 30 minutes, 31 samples
    cpu = 587
    assert found.upper["cpu"] == int(cpu * (1 + 1 / confidence))
    assert found.lower["cpu"] == max(int(cpu * (1 + 0.001 / confidence) ** -2), 25)
    assert found.target["cpu"] == cpu  # the target takes no multiplier


def test_no_history_leaves_the_upper_bound_unbounded_and_the_lower_at_the_minimum() -> None:
    found = estimate(AggregateContainerState(), 1, RecommenderConfig())
    assert found.upper == {"cpu": 25, "memory": 250 * MIB}  # 0 * inf is nothing: the minimums
    single = _steady(0.5, 300 * MIB, 0)  # one sample: lifespan 0, confidence 0
    found = estimate(single, 1, RecommenderConfig())
    assert found.upper == {"cpu": 10**14, "memory": 10**14}
    assert found.lower == {"cpu": 25, "memory": 250 * MIB}


def test_the_pod_minimums_are_shared_among_its_containers() -> None:
    idle = _steady(0.001, 1 * MIB, 60)
    assert estimate(idle, 1, RecommenderConfig()).target == {"cpu": 25, "memory": 250 * MIB}
    assert estimate(idle, 2, RecommenderConfig()).target == {"cpu": 12, "memory": 125 * MIB}


def test_a_shorter_confidence_interval_gains_confidence_sooner() -> None:
    aggregate = _steady(0.5, 300 * MIB, 10)
    minute = RecommenderConfig(confidence_interval_cpu=60.0, confidence_interval_memory=60.0)
    found = estimate(aggregate, 1, minute)
    confidence = min(600 / 60, 11 / 1)  # 10 intervals of history, 11 samples a minute each
    assert found.upper["cpu"] == int(587 * (1 + 1 / confidence))
