"""What fills the usage history (`metrics.history`): every `resolution` seconds of the cluster's
clock, a sample of

- usage, as metrics-server reads it from the kubelets' stats summaries: CPU and memory used
  per container and over the cluster, and the pods running. The nodes of the process are read
  in it; those of `pinnace agent` processes (the Nodes labelled `pinnace.dev/agent`) are
  scraped (`scrape`: `pinnace.apiserver.agent_summaries`, one request an agent process),
  within an eighth of the resolution: a node whose scrape fails or takes longer (its agent
  gone, or not serving yet) is left out of that sample, as metrics-server leaves out a node it
  could not scrape;
- requests and allocatable as the scheduler accounts them (its node table: every pod bound or
  assumed), and the pods waiting in its queue, and the pods it placed since the last sample;
- evictions (the Events of kubelets' node-pressure evictions, the taint manager's and
  preemption's) and OOM kills (the containers' runtimes count them) since the last sample;
- each Deployment's, StatefulSet's, Job's, DaemonSet's and HPA's replicas wanted and ready, as
  `kubectl get` prints them, and each VerticalPodAutoscaler's target (CPU and memory over its
  containers);
- fragmentation, as the simulation's report measures it (`metrics.fragmentation`): for each
  pod shape the workloads' templates ask for, the share of the free CPU and memory on the
  schedulable nodes (the scheduler's node table) that cannot hold one more pod of it.

A Prometheus server scraping the cluster keeps the same series; this one is in the process, so
the dashboard (and anything else in it) reads it without one.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import numpy as np

from pinnace.api import catalog
from pinnace.api.core.event import EVENT
from pinnace.api.objects import Object
from pinnace.api.stats import NodeMetricsPoint, Summary, resource_metrics_of
from pinnace.client import Client, Informer, object_key
from pinnace.clock import Clock
from pinnace.clock.component import HeldTasks, cancel_and_wait
from pinnace.kubelet.config import AGENT_LABEL
from pinnace.metrics.fragmentation import fragmentation, free_capacity
from pinnace.metrics.history import UsageHistory
from pinnace.resources.lists import parse_quantity, scheduler_value
from pinnace.resources.names import CPU, MEMORY, PODS
from pinnace.resources.pod import pod_requests
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.schedule_one import Scheduler

log = logging.getLogger(__name__)

USED = ("cpu_used", "memory_used", "pods_running")
NODES_PER_SLICE = 50
PACE = 4
EVICTION_REASONS = ("Evicted", "TaintManagerEviction", "Preempted")
WORKLOADS = {
    "deployments": catalog.kind("apps", "deployments"),
    "statefulsets": catalog.kind("apps", "statefulsets"),
    "jobs": catalog.kind("batch", "jobs"),
    "daemonsets": catalog.kind("apps", "daemonsets"),
    "hpas": catalog.kind("autoscaling", "horizontalpodautoscalers"),
}

VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
NODES = catalog.kind("", "nodes")
SCRAPE_SHARE = 1 / (2 * PACE)
"""The share of the resolution a sample waits for agents' nodes to answer (1.25 s of 10 s):
well within what keeps the sampling at its resolution (`PACE`)."""

ResourceMetrics = Callable[[], Mapping[str, NodeMetricsPoint]]
Scrape = Callable[[list[Object], float], Awaitable[Mapping[str, Summary]]]
"""(agent processes' Nodes, seconds) -> the stats summaries of those that answered within the
seconds, by node name, fetched over the network (`AgentSummaries.scrape`, which leaves out
and tells of the others)."""


def replicas(kind: str, obj: Object) -> tuple[float, float]:
    """(wanted, ready) as `kubectl get KIND` shows them."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if kind in ("deployments", "statefulsets"):
        return spec.get("replicas", 1), status.get("readyReplicas", 0)
    if kind == "jobs":
        return spec.get("completions", 1), status.get("succeeded", 0)
    if kind == "daemonsets":
        return status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
    return status.get("desiredReplicas", 0), status.get("currentReplicas", 0)


def recommended(vpa: Object) -> tuple[float, float]:
    """A VerticalPodAutoscaler's target over its containers: CPU (cores) and memory (bytes);
    NaN while it has no recommendation."""
    recommendation = (vpa.get("status") or {}).get("recommendation") or {}
    targets = [c.get("target") or {} for c in recommendation.get("containerRecommendations") or ()]
    if not targets:
        return math.nan, math.nan
    return (
        sum(float(parse_quantity(t.get(CPU, "0")).as_fraction()) for t in targets),
        sum(float(parse_quantity(t.get(MEMORY, "0")).as_fraction()) for t in targets),
    )


class HistoryRecorder:
    """A component that samples the cluster into `history`."""

    def __init__(
        self,
        client: Client,
        history: UsageHistory,
        resource_metrics: ResourceMetrics,
        scheduler: Scheduler | None,
        oom_kills: Callable[[], int],
        scrape: Scrape | None = None,
    ) -> None:
        """`resource_metrics`: the CPU and memory figures of the process's own nodes' summaries;
        `scrape`: how to reach agent processes' nodes (None: they are left out)."""
        self.clock: Clock = client.clock
        self.history = history
        self.resource_metrics = resource_metrics
        self.scrape = scrape
        self.agent_nodes = Informer(client, NODES, label_selector=AGENT_LABEL)
        self.scheduler = scheduler
        self.oom_kills = oom_kills
        # One field-selected watch a reason: the recorder keeps and hears of evictions'
        # Events only, not the cluster's every Event (three a pod started, at least).
        self.evictions = [
            Informer(client, EVENT, field_selector=f"reason={reason}", namespace_index=False)
            for reason in EVICTION_REASONS
        ]
        for informer in self.evictions:
            informer.add_event_handler(self._event_added, self._event_updated)
        self.workloads = {kind: Informer(client, k) for kind, k in WORKLOADS.items()}
        self.vpas = Informer(client, VPAS)
        self._evictions = 0
        self._last_scheduled = 0
        self._last_oom_kills = 0
        self._tasks = HeldTasks()
        self._shapes: dict[tuple[str, str], tuple[str, Shape | None]] = {}

    async def start(self) -> None:
        for informer in self._informers():
            informer.start()
        for informer in self._informers():
            await informer.wait_for_sync()
        self._last_scheduled = self._scheduled()
        self._last_oom_kills = self.oom_kills()
        self._evictions = 0
        self._tasks.hold(asyncio.get_running_loop().create_task(self._sample_every_resolution()))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        for informer in self._informers():
            await informer.stop()

    def _informers(self) -> list[Informer]:
        agents = [self.agent_nodes] if self.scrape is not None else []
        return [*self.evictions, self.vpas, *self.workloads.values(), *agents]

    async def _sample_every_resolution(self) -> None:
        """A sample every `resolution` seconds; when one takes longer than a quarter of that
        (the usage model of thousands of nodes), the next waits four times as long as it took,
        so sampling never takes more than a quarter of the process."""
        while True:
            started = self.clock.now()
            await self.sample()
            took = self.clock.now() - started
            await self.clock.sleep(max(self.history.resolution, PACE * took) - took)

    async def sample(self) -> None:
        """Take one sample, stamped with the time it starts; the nodes' usage is read a slice
        of nodes at a time, so that the API server answers in between."""
        now = self.clock.now()
        pods: dict[str, dict[str, tuple[float, float]]] = {}
        nodes: dict[str, tuple[float, float, float]] = {}
        agents, local = await self._agents_summaries(), self.resource_metrics()
        for i, name in enumerate(itertools.chain(agents, local)):
            if i and i % NODES_PER_SLICE == 0:
                await asyncio.sleep(0)
            summary = agents.get(name)
            point = resource_metrics_of(summary) if summary is not None else local.get(name)
            if point is None:  # gone meanwhile
                continue
            node_cpu = point.cpu_usage_nano_cores / 1e9
            nodes[name] = (node_cpu, float(point.memory_working_set_bytes), float(len(point.pods)))
            for pod in point.pods:
                pods[f"{pod.namespace}/{pod.name}"] = {
                    c: (cpu / 1e9, float(memory)) for c, cpu, memory in pod.containers
                }
        totals = np.sum(list(nodes.values()), axis=0) if nodes else np.zeros(3)
        cluster = dict(zip(USED, totals.tolist(), strict=True))
        if self.scheduler is not None:
            cluster |= self._scheduler_view(self.scheduler)
        oom_kills = self.oom_kills()
        cluster["oom_kills"] = oom_kills - self._last_oom_kills
        cluster["evictions"] = self._evictions
        self._last_oom_kills, self._evictions = oom_kills, 0
        workloads = {
            f"{kind}/{object_key(obj)}": replicas(kind, obj)
            for kind, informer in self.workloads.items()
            for obj in informer.list()
        }
        recommendations = {object_key(vpa): recommended(vpa) for vpa in self.vpas.list()}
        stranded = {} if self.scheduler is None else self._stranded(self.scheduler.table)
        self.history.record(now, cluster, pods, workloads, nodes, recommendations, stranded)

    async def _agents_summaries(self) -> Mapping[str, Summary]:
        """The summaries of the agent processes' nodes scraped now: those that answered
        within SCRAPE_SHARE of the resolution, so that agents slow to answer, or gone, do not
        slow the sampling."""
        nodes = self.agent_nodes.list() if self.scrape is not None else []
        if self.scrape is None or not nodes:
            return {}
        return await self.scrape(nodes, self.history.resolution * SCRAPE_SHARE)

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

    def _stranded(self, table: NodeTable) -> dict[str, tuple[float, float]]:
        """Each template shape's stranded share of the free CPU and memory; a shape asking for
        a resource no node has strands all of it."""
        shapes = self._template_shapes()
        if not shapes or not len(table):
            return {}
        free = free_capacity(table.allocatable, table.requested) * ~table.unschedulable[:, None]
        vectors = np.zeros((len(shapes), len(table.columns)), np.int64)
        unknown = np.zeros(len(shapes), bool)
        for row, requests in enumerate(shapes.values()):
            for resource, amount in requests.items():
                column = table.columns.get(resource)
                if column is None:
                    unknown[row] = True
                else:
                    vectors[row, column] = amount
        share = fragmentation(free, vectors).share
        share[unknown] = 1.0
        cpu, memory = table.columns[CPU], table.columns[MEMORY]
        return {
            name: (float(share[row, cpu]), float(share[row, memory]))
            for row, name in enumerate(shapes)
        }

    def _template_shapes(self) -> dict[str, dict[str, int]]:
        """The pod shapes of the workloads' templates, each named after the first workload
        (in kind, then key order) asking for it. A shape that does not request CPU (memory)
        has no share of it (NaN)."""
        named: dict[Shape, str] = {}
        seen: dict[tuple[str, str], tuple[str, Shape | None]] = {}
        for kind, informer in self.workloads.items():
            for obj in sorted(informer.list(), key=object_key):
                key, version = object_key(obj), obj["metadata"].get("resourceVersion", "")
                cached = self._shapes.get((kind, key))
                shape = cached[1] if cached and cached[0] == version else _template_shape(obj)
                seen[kind, key] = (version, shape)
                if shape is not None:
                    named.setdefault(shape, f"{kind}/{key}")
        self._shapes = seen  # each workload's template read once a version
        return {name: dict(shape) for shape, name in named.items()}

    def _scheduled(self) -> int:
        if self.scheduler is None:
            return 0
        attempts = self.scheduler.metrics.attempts
        return sum(n for (result, _), n in attempts.items() if result == "scheduled")

    def _event_added(self, event: Object) -> None:
        self._evictions += _count(event)

    def _event_updated(self, old: Object, new: Object) -> None:
        self._evictions += max(0, _count(new) - _count(old))


Shape = tuple[tuple[str, int], ...]
"""A pod shape: its requests in the scheduler's units (one pod among them), sorted."""


def _template_shape(workload: Object) -> Shape | None:
    template = (workload.get("spec") or {}).get("template")
    if template is None:
        return None
    requests = pod_requests({"spec": template.get("spec") or {}})
    amounts = {r: scheduler_value(r, q) for r, q in requests.items()}
    return tuple(sorted(({r: v for r, v in amounts.items() if v > 0} | {PODS: 1}).items()))


def _count(event: Mapping[str, Any]) -> int:
    return int(event.get("count") or 1)
