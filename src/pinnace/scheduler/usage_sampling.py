"""The scheduler's samples of usage, for the plugins (and the placer) reading it
(`ReadsNodeUsage`): as scheduler-plugins' Trimaran collector (pkg/trimaran/collector.go) keeps
the load watcher's node metrics, each sample goes into the node table, which averages them over
the plugins' window (`NodeTable.record_usage`); for those reading forecasts
(`ReadsWorkloadUsage`) the pods' usage goes into one `pinnace.forecast.UsageHistory` per
workload too.

Where the stats summaries come from, and when, is the caller's: the scheduler service
(`pinnace.scheduler.adapter`) reads them from the node agents in its process or from the
metrics API every sample interval; the research environment's scheduler-only engine from its
model of the node agents' stats.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pinnace.api.objects import Object
from pinnace.api.stats import Summary
from pinnace.clock import Clock
from pinnace.forecast import UsageHistory, workload_of
from pinnace.scheduler.framework import ReadsNodeUsage, ReadsWorkloadUsage
from pinnace.scheduler.loop import Placer
from pinnace.scheduler.plugins.trimaran import PodsMetricLoad
from pinnace.scheduler.schedule_one import Scheduler, all_plugins

PodOf = Callable[[str], Object | None]
""""namespace/name" -> the pod as the scheduler's informer holds it (None: it holds none)."""


class UsageSampling:
    """Usage sampled for `core`'s readers: made by `of`, fed by `record`."""

    def __init__(self, core: Scheduler, clock: Clock, readers: list[Any]) -> None:
        first = readers[0]  # they agree on the window: the configuration checks
        core.table.track_usage(first.usage_window, first.usage_interval, clock.now)
        self.table = core.table
        self.clock = clock
        self.interval: float = first.usage_interval
        self.load_metric: PodsMetricLoad | None = getattr(first, "load_metric", None)
        """The custom metric node cpu is read from, when the plugins ask for one."""
        self.workload_usage: UsageHistory | None = None
        """The pods' usage per workload, when a reader reads forecasts."""
        forecasting = [r for r in readers if isinstance(r, ReadsWorkloadUsage)]
        if forecasting:
            self.workload_usage = UsageHistory()
            for reader in forecasting:
                reader.workload_usage = self.workload_usage

    @classmethod
    def of(cls, core: Scheduler, clock: Clock, placer: Placer | None) -> UsageSampling | None:
        """The sampling `core`'s plugins and `placer` read, None when none reads usage."""
        readers: list[Any] = [p for p in all_plugins(core) if isinstance(p, ReadsNodeUsage)]
        if isinstance(placer, ReadsNodeUsage):
            readers.append(placer)
        return cls(core, clock, readers) if readers else None

    def record(
        self,
        summaries: Mapping[str, Summary],
        pod_of: PodOf,
        loads: Mapping[str, float] | None = None,
    ) -> None:
        """Record what every node (and pod, for forecasts) uses now, by their `summaries`;
        with `loads` (node -> custom metric load), a node's cpu is its load's share of the
        capacity the CustomMetrics provider gives, in millicores of the node's CPU capacity."""
        table = self.table
        now = self.clock.now()
        measured = [(name, summaries[name]) for name in table.names if name in summaries]
        node_cpu = {name: s.node.cpu_usage_nano_cores / 1e6 for name, s in measured}
        if loads is not None and self.load_metric is not None:
            capacity = self.load_metric.node_capacity
            for name in node_cpu:
                share = loads.get(name, 0.0) / capacity
                node_cpu[name] = share * float(table.capacity[table.index[name], 0])
        table.record_usage(
            now,
            {
                name: (node_cpu[name], float(s.node.memory_working_set_bytes))
                for name, s in measured
            },
        )
        if self.workload_usage is not None:
            pods = []
            for _, summary in measured:
                for stats in summary.pods:
                    pod = pod_of(f"{stats.namespace}/{stats.name}")
                    if pod is not None:
                        cpu = stats.cpu_usage_nano_cores / 1e6
                        pods.append((workload_of(pod), cpu, float(stats.memory_working_set_bytes)))
            self.workload_usage.record(now, pods)
