"""kube-scheduler's metrics (pkg/scheduler/metrics/metrics.go, v1.32), served by `pinnace up`
at `/metrics/scheduler` (kube-scheduler is a process of its own with its own /metrics):

- `scheduler_schedule_attempts_total{result,profile}`: scheduled, unschedulable or error
- `scheduler_scheduling_attempt_duration_seconds{result,profile}`: the scheduling cycle,
  buckets 1 ms doubling 15 times
- `scheduler_pending_pods{queue}`: active, backoff, unschedulable, gated
- `scheduler_preemption_attempts_total`: each time a pod that fits nowhere runs PostFilter
- `scheduler_preemption_victims`: the victims of each preemption, buckets 1 doubling 7 times
  (served from the start, with nothing counted before the first)
- `scheduler_pod_scheduling_sli_duration_seconds{attempts}`: from a pod's first attempt to the
  attempt that placed it, buckets 10 ms doubling 20 times
- the framework's extension point and plugin durations (`scheduler.plugin_metrics`)

Durations come from the scheduler's clock: on the virtual clock a cycle takes no time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from pinnace.api.gofloat import format_float
from pinnace.scheduler.queue import SchedulingQueue

if TYPE_CHECKING:
    from pinnace.scheduler.plugin_metrics import FrameworkMetrics


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus' ExponentialBuckets, each bound the previous times `factor` as Go's are (so
    the bounds, and the `le` labels, are kube-scheduler's to the last bit)."""
    bounds = []
    for _ in range(count):
        bounds.append(start)
        start *= factor
    return tuple(bounds)


ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)
SLI_BUCKETS = exponential_buckets(0.01, 2, 20)
VICTIM_BUCKETS = exponential_buckets(1, 2, 7)
QUEUES = ("active", "backoff", "unschedulable", "gated")


class Histogram:
    """One series of a histogram: counts per bucket, their sum and count."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        """The observations per bucket, the last above every bound (+Inf's only)."""
        self.total = 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.total += amount

    @property
    def observations(self) -> int:
        return sum(self.counts)

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, out = 0, []
        for bound, count in zip(self.bounds, self.counts, strict=False):  # counts has +Inf's too
            cumulative += count
            out.append((format_float(bound), float(cumulative)))
        out.append(("+Inf", float(self.observations)))
        return out


class HistogramVec:
    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = bounds
        self.series: dict[tuple[str, ...], Histogram] = {}

    def observe(self, labels: tuple[str, ...], amount: float) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = Histogram(self.bounds)
        series.observe(amount)

    def of(self, labels: tuple[str, ...]) -> Histogram:
        """The series of `labels`, started (empty) the first time it is asked for."""
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = Histogram(self.bounds)
        return series

    def family(self, name: str, documentation: str, labels: Sequence[str]) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, documentation, labels=labels)
        for values, series in self.series.items():
            family.add_metric(list(values), series.buckets(), series.total)
        return family


class SchedulerMetrics(Collector):
    """The metrics of one scheduler; its cycles report to it."""

    def __init__(self, queue: SchedulingQueue, framework: FrameworkMetrics) -> None:
        self.queue = queue
        self.framework = framework
        self.attempt_durations = HistogramVec(ATTEMPT_BUCKETS)
        """By result and profile; its observations are the attempts counted."""
        self.sli = HistogramVec(SLI_BUCKETS)
        self.preemption_attempts = 0
        self.victims = Histogram(VICTIM_BUCKETS)

    @property
    def attempts(self) -> dict[tuple[str, ...], int]:
        """The attempts by result and profile (`scheduler_schedule_attempts_total`)."""
        return {labels: s.observations for labels, s in self.attempt_durations.series.items()}

    def attempted(self, result: str, profile: str, seconds: float) -> None:
        self.attempt_durations.observe((result, profile), seconds)

    def scheduled(self, attempts: int, seconds_since_first_attempt: float) -> None:
        self.sli.observe((str(attempts),), seconds_since_first_attempt)

    def preempted(self, victims: int) -> None:
        self.victims.observe(victims)

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        attempts = CounterMetricFamily(
            "scheduler_schedule_attempts",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a "
            "pod could not be scheduled, while 'error' means an internal scheduler problem.",
            labels=["result", "profile"],
        )
        for labels, count in self.attempts.items():
            attempts.add_metric(list(labels), count)
        yield attempts
        yield self.attempt_durations.family(
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
        )
        pending = GaugeMetricFamily(
            "scheduler_pending_pods",
            "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            labels=["queue"],
        )
        counts = self.queue.pending_counts()
        for queue in QUEUES:
            pending.add_metric([queue], counts.get(queue, 0))
        yield pending
        preemptions = CounterMetricFamily(
            "scheduler_preemption_attempts",
            "[STABLE] Total preemption attempts in the cluster till now",
        )
        preemptions.add_metric([], self.preemption_attempts)
        yield preemptions
        # A histogram without labels is served before its first observation, as
        # component-base's are.
        victims = HistogramMetricFamily(
            "scheduler_preemption_victims", "[STABLE] Number of selected preemption victims"
        )
        victims.add_metric([], self.victims.buckets(), self.victims.total)
        yield victims
        yield self.sli.family(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"],
        )
        yield from self.framework.families()
