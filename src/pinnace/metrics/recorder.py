"""What fills the usage history (`metrics.history`): every `resolution` seconds of the cluster's
clock, a sample of

- usage, as metrics-server reads it from the kubelets' stats summaries: CPU and memory used
  per pod and over the cluster, and the pods running;
- requests and allocatable as the scheduler accounts them (its node table: every pod bound or
  assumed), and the pods waiting in its queue, and the pods it placed since the last sample;
- evictions (the Events of kubelets' node-pressure evictions, the taint manager's and
  preemption's) and OOM kills (the containers' runtimes count them) since the last sample;
- each Deployment's, Job's, DaemonSet's and HPA's replicas wanted and ready, as
  `kubectl get` prints them.

A Prometheus server scraping the cluster keeps the same series; this one is in the process, so
the dashboard (and anything else in it) reads it without one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pinnace.api import catalog
from pinnace.api.core.event import EVENT
from pinnace.api.objects import Object
from pinnace.api.stats import Summary
from pinnace.client import Client, Informer
from pinnace.clock import Clock, Timer
from pinnace.metrics.history import UsageHistory
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.schedule_one import Scheduler

EVICTION_REASONS = frozenset({"Evicted", "TaintManagerEviction", "Preempted"})
WORKLOADS = {
    "deployments": catalog.kind("apps", "deployments"),
    "jobs": catalog.kind("batch", "jobs"),
    "daemonsets": catalog.kind("apps", "daemonsets"),
    "hpas": catalog.kind("autoscaling", "horizontalpodautoscalers"),
}

Summaries = Callable[[], Mapping[str, Summary]]


def replicas(kind: str, obj: Object) -> tuple[float, float]:
    """(wanted, ready) as `kubectl get KIND` shows them."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind == "deployments":
        return spec.get("replicas", 1), status.get("readyReplicas", 0)
    if kind == "jobs":
        return spec.get("completions", 1), status.get("succeeded", 0)
    if kind == "daemonsets":
        return status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
    return status.get("desiredReplicas", 0), status.get("currentReplicas", 0)


class HistoryRecorder:
    """A component that samples the cluster into `history`."""

    def __init__(
        self,
        client: Client,
        history: UsageHistory,
        summaries: Summaries,
        scheduler: Scheduler | None,
        oom_kills: Callable[[], int],
    ) -> None:
        self.clock: Clock = client.clock
        self.history = history
        self.summaries = summaries
        self.scheduler = scheduler
        self.oom_kills = oom_kills
        self.events = Informer(client, EVENT, namespace_index=False)
        self.events.add_event_handler(self._event_added, self._event_updated)
        self.workloads = {kind: Informer(client, k) for kind, k in WORKLOADS.items()}
        self._evictions = 0
        self._last_scheduled = 0
        self._last_oom_kills = 0
        self._timer: Timer | None = None

    async def start(self) -> None:
        for informer in (self.events, *self.workloads.values()):
            informer.start()
        for informer in (self.events, *self.workloads.values()):
            await informer.wait_for_sync()
        self._last_scheduled = self._scheduled()
        self._last_oom_kills = self.oom_kills()
        self._evictions = 0
        self.sample()
        self._timer = self.clock.call_later(self.history.resolution, self._tick)

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for informer in (self.events, *self.workloads.values()):
            await informer.stop()

    def _tick(self) -> None:
        self.sample()
        self._timer = self.clock.call_later(self.history.resolution, self._tick)

    def sample(self) -> None:
        """Take one sample now."""
        cluster: dict[str, float] = {}
        pods: dict[str, tuple[float, float]] = {}
        used_cpu = used_memory = 0.0
        running = 0
        for summary in self.summaries().values():
            used_cpu += summary.node.cpu_usage_nano_cores / 1e9
            used_memory += summary.node.memory_working_set_bytes
            for pod in summary.pods:
                cpu = sum(c.cpu_usage_nano_cores for c in pod.containers) / 1e9
                memory = sum(c.memory_working_set_bytes for c in pod.containers)
                pods[f"{pod.namespace}/{pod.name}"] = (cpu, float(memory))
            running += len(summary.pods)
        cluster |= {"cpu_used": used_cpu, "memory_used": used_memory, "pods_running": running}
        if self.scheduler is not None:
            cluster |= self._scheduler_view(self.scheduler)
        oom_kills = self.oom_kills()
        cluster["oom_kills"] = oom_kills - self._last_oom_kills
        cluster["evictions"] = self._evictions
        self._last_oom_kills, self._evictions = oom_kills, 0
        workloads = {
            f"{kind}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}": replicas(
                kind, obj
            )
            for kind, informer in self.workloads.items()
            for obj in informer.list()
        }
        self.history.record(self.clock.now(), cluster, pods, workloads)

    def _scheduler_view(self, scheduler: Scheduler) -> dict[str, float]:
        table = scheduler.table
        view: dict[str, float] = {}
        for resource, scale in ((CPU, 1e-3), (MEMORY, 1.0)):
            column = table.column(resource)
            view[f"{resource}_requested"] = float(np.sum(table.requested[:, column])) * scale
            view[f"{resource}_allocatable"] = float(np.sum(table.allocatable[:, column])) * scale
        scheduled = self._scheduled()
        view["pods_pending"] = len(scheduler.queue)
        view["pods_scheduled"] = scheduled - self._last_scheduled
        self._last_scheduled = scheduled
        return view

    def _scheduled(self) -> int:
        if self.scheduler is None:
            return 0
        attempts = self.scheduler.metrics.attempts
        return sum(n for (result, _), n in attempts.items() if result == "scheduled")

    def _event_added(self, event: Object) -> None:
        if event.get("reason") in EVICTION_REASONS:
            self._evictions += _count(event)

    def _event_updated(self, old: Object, new: Object) -> None:
        if new.get("reason") in EVICTION_REASONS:
            self._evictions += max(0, _count(new) - _count(old))


def _count(event: Mapping[str, Any]) -> int:
    return int(event.get("count") or 1)
