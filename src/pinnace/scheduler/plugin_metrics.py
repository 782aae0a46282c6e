"""How long the scheduling framework's extension points and plugins take, as kube-scheduler's
framework runtime records them (pkg/scheduler/framework/runtime/framework.go, v1.32):

- `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}`:
  every run of PreFilter, PostFilter, PreScore, Score and Bind (Filter runs per node in
  kube-scheduler and has no such series), buckets 0.1 ms doubling 12 times;
- `scheduler_plugin_execution_duration_seconds{plugin,extension_point,status}`: each plugin's
  run at each extension point, on a sample of the cycles (pluginMetricsSamplePercent = 10;
  Pinnace samples every tenth cycle, so runs stay deterministic), buckets 10 µs growing by 1.5
  twenty times. A Filter plugin runs once over every candidate node here, so a sampled cycle
  observes one Filter run per plugin, with status Unschedulable when it rejected any node.

Durations come from the scheduler's clock, as the other scheduler metrics' do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import HistogramMetricFamily

from pinnace.scheduler.framework import Code, Status
from pinnace.scheduler.metrics import Histogram, HistogramVec, exponential_buckets

EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
SAMPLE_EVERY = 10

PRE_FILTER = "PreFilter"
FILTER = "Filter"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
BIND = "Bind"

CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}
"""framework.Code's String()."""


class PluginTimer:
    """Times the plugins of one sampled cycle; the Profile's runs ask it when the cycle's state
    carries one."""

    __slots__ = ("_durations", "now")

    def __init__(self, now: Callable[[], float], durations: HistogramVec) -> None:
        self.now = now
        self._durations = durations

    def observe(self, plugin: str, point: str, status: Status | Code, started: float) -> None:
        code = status if isinstance(status, Code) else status.code
        self._durations.observe((plugin, point, CODE_NAMES[code]), self.now() - started)

    def recording(self) -> RecordingTimer:
        """This timer, keeping what it observes to observe again (`failure_memo`)."""
        return RecordingTimer(self.now, self._durations)


PluginRun = tuple[str, str, Code]
"""A plugin's run as a timer observes it: the plugin, the extension point, the code."""


class RecordingTimer(PluginTimer):
    """A timer that keeps the runs it observes, in order, and observes such runs again."""

    __slots__ = ("runs",)

    def __init__(self, now: Callable[[], float], durations: HistogramVec) -> None:
        super().__init__(now, durations)
        self.runs: list[PluginRun] = []

    def observe(self, plugin: str, point: str, status: Status | Code, started: float) -> None:
        code = status if isinstance(status, Code) else status.code
        self.runs.append((plugin, point, code))
        super().observe(plugin, point, code, started)

    def observe_again(self, runs: tuple[PluginRun, ...]) -> None:
        started = self.now()
        for plugin, point, code in runs:
            super().observe(plugin, point, code, started)


class FrameworkMetrics:
    """The two duration families of one scheduler, and which cycles sample plugins."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.extension_points = HistogramVec(EXTENSION_POINT_BUCKETS)
        self.plugins = HistogramVec(PLUGIN_BUCKETS)
        self._timer = PluginTimer(now, self.plugins)
        self._cycles = 0
        # The extension points' series by (point, code, profile): every cycle observes four or
        # five, which then spell no label.
        self._point_series: dict[tuple[str, Code, str], Histogram] = {}

    def timer(self) -> PluginTimer | None:
        """The timer for the next cycle's plugins, on one cycle in SAMPLE_EVERY."""
        self._cycles += 1
        return self._timer if self._cycles % SAMPLE_EVERY == 1 else None

    def extension_point(self, point: str, status: Status, profile: str, started: float) -> float:
        """Observe a run of `point` begun at `started`; the answer: now, when it ended."""
        key = (point, status.code, profile)
        series = self._point_series.get(key)
        if series is None:
            labels = (point, CODE_NAMES[status.code], profile)
            series = self._point_series[key] = self.extension_points.of(labels)
        now = self.now()
        series.observe(now - started)
        return now

    def families(self) -> Iterator[HistogramMetricFamily]:
        yield self.extension_points.family(
            "scheduler_framework_extension_point_duration_seconds",
            "[STABLE] Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
        )
        yield self.plugins.family(
            "scheduler_plugin_execution_duration_seconds",
            "[ALPHA] Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
        )
