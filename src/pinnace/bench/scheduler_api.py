"""`pinnace bench scheduler --through-api`: the same workloads as `pinnace bench scheduler`, but
end to end through the API server, as kube-scheduler's scheduler_perf measures them: every pod
is created through the in-process API server (decoding, defaulting, admission, validation,
managedFields, the store and its watch fan-out) and bound by the scheduler service through the
binding subresource, which also records its Scheduled event.

The cluster is the `ControlPlane` on the simulated mode's store (`simulated_store`: its
latest changes and every live object's latest kept as written, no key settled) and the
virtual clock, with the scheduler and no controllers, node agents, dashboard or
kube-state-metrics (a simulation goes without their informers too, and scheduler_perf runs
none): nodes are bare Node objects with their capacity in their status, as scheduler_perf's
hollow nodes are. Every node is scored, as in the core benchmark.
Nodes, namespaces and a workload's initial pods are created and bound first (not timed); then
the measured pods are created one after another. pods/s counts the measured pods, from the
first create call to the last binding committed; a pod's latency runs from its create call's
return to its binding's commit (queueing included, as scheduler_perf's
scheduling_sli_duration does). CPU per pod is the process's CPU time from the first create
call until the last measured pod is bound, over the measured pods: other work on the machine
does not change it, where it does pods/s. Churn pods come one after every `churn_every`
measured pods created, and preemption victims (terminationGracePeriodSeconds 0, as
scheduler_perf's) go at once. scheduler_perf's API server runs without the Priority admission
plugin, so its pods may set spec.priority; Pinnace's always admits through it, so such a pod
names a PriorityClass of that value instead, which comes to the same.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api import catalog
from pinnace.bench import Figures, per_second, percentile
from pinnace.bench.scheduler import MEASURED_PREFIX, WORKLOADS, BenchError, Workload
from pinnace.client import LocalClient
from pinnace.clock import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane, settle_garbage_collection
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.sim.simulation import simulated_store
from pinnace.store import WatchEvent

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
NAMESPACES = catalog.kind("", "namespaces")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")
CSI_NODES = catalog.kind("storage.k8s.io", "csinodes")
WORKLOAD_NAMESPACES = ("sched-test", "sched-setup")
SETTLE = 1.0
"""Virtual seconds the cluster gets after the set-up, before the timing starts."""
CHURN_SETTLE = 100.0
"""Virtual seconds the churn pods left waiting get to land, after the measured pods."""


def run(names: list[str], nodes: int | None, pods: int | None, seed: int = 0) -> dict[str, Figures]:
    return {name: measure(WORKLOADS[name], nodes, pods, seed) for name in names}


def measure(workload: Workload, nodes: int | None, pods: int | None, seed: int) -> Figures:
    node_count = workload.nodes if nodes is None else nodes
    pod_count = workload.pods if pods is None else pods
    with VirtualClock() as clock:
        return clock.run(_measure(workload, node_count, pod_count, seed, clock))


@dataclass
class _Bindings:
    """Every binding the store commits, seen as it commits: when each pod got its node."""

    at: dict[str, float] = field(default_factory=dict)
    """By pod name, the perf_counter time of its binding."""
    measured: int = 0
    """The measured pods among them."""
    waiting_for: Callable[[], bool] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def observe(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type != "MODIFIED" or obj.get("kind") != "Pod":
            return
        if not obj["spec"].get("nodeName") or (event.prev_object or {})["spec"].get("nodeName"):
            return
        name = obj["metadata"]["name"]
        if name in self.at:
            return
        self.at[name] = time.perf_counter()
        self.measured += name.startswith(MEASURED_PREFIX)
        if self.waiting_for is not None and self.waiting_for():
            self.done.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        if condition():
            return
        self.done.clear()
        self.waiting_for = condition
        try:
            await self.done.wait()
        finally:
            self.waiting_for = None

    def forget(self) -> None:
        self.at.clear()
        self.measured = 0


@dataclass
class _PodCreator:
    """Creates a workload's pods, each with the priority its spec asks for given by a
    PriorityClass of that value (made the first time it is needed), and after its volume and
    claim when the workload has them."""

    client: LocalClient
    volumes: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None
    """Makes each pod's volume and claim, created before it."""
    classes: set[int] = field(default_factory=set)

    async def create(self, pod: dict[str, Any]) -> None:
        if self.volumes is not None:
            volume, claim = self.volumes(pod)
            await self.client.create(PVS, "", volume)
            await self.client.create(PVCS, claim["metadata"]["namespace"], claim)
        spec = pod["spec"]
        priority = spec.pop("priority", None)
        if priority is not None:
            spec["priorityClassName"] = name = f"scheduler-perf-{priority}"
            if priority not in self.classes:
                body = {"metadata": {"name": name}, "value": priority}
                await self.client.create(PRIORITY_CLASSES, "", body)
                self.classes.add(priority)
        await self.client.create(PODS, pod["metadata"]["namespace"], pod)


async def _measure(
    workload: Workload, node_count: int, pod_count: int, seed: int, clock: VirtualClock
) -> Figures:
    config = SchedulerConfiguration(percentage_of_nodes_to_score=100)
    options = ClusterOptions(
        scheduler_config=config,
        controllers=False,
        kube_state_metrics=False,
        dashboard=False,
        seed=seed,
    )
    plane = ControlPlane(simulated_store(), clock, options)
    bindings = _Bindings()
    stop_observing = plane.store.observe(bindings.observe)
    await plane.start()
    try:
        client = plane.client()
        creator = _PodCreator(client, workload.volumes)
        await _set_up(workload, node_count, client, creator, bindings)
        # Virtual time passes only once every task has had its turn: by then the scheduler's
        # informers have listed or watched the nodes and pods set up.
        await asyncio.sleep(SETTLE)
        settle_garbage_collection()
        measured = [workload.pod(i) for i in range(pod_count)]  # the request bodies: not timed
        created: dict[str, float] = {}
        start, cpu = time.perf_counter(), time.process_time()
        churned = 0
        for i, pod in enumerate(measured, 1):
            await creator.create(pod)
            created[pod["metadata"]["name"]] = time.perf_counter()
            if workload.churn_pod is not None and i % workload.churn_every == 0:
                churned += 1
                churn = workload.churn_pod(churned)
                await creator.create(churn)
        try:
            async with asyncio.timeout(_virtual_limit(pod_count)):
                await bindings.until(lambda: bindings.measured == pod_count)
        except TimeoutError:
            bound = bindings.measured
            raise BenchError(
                f"{workload.name}: {bound} of {pod_count} pods were scheduled on {node_count} nodes"
            ) from None
        cpu = time.process_time() - cpu
        seconds = max(bindings.at.values()) - start
        latencies = [bindings.at[name] - at for name, at in created.items()]
        await _check_churn(workload, churned, bindings, clock)
    finally:
        stop_observing()
        await plane.stop()
    return {
        "nodes": node_count,
        "pods": pod_count,
        "pods_per_second": per_second(pod_count, seconds),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "cpu_ms_per_pod": cpu * 1000 / pod_count,
    }


async def _set_up(
    workload: Workload,
    node_count: int,
    client: LocalClient,
    creator: _PodCreator,
    bindings: _Bindings,
) -> None:
    for namespace in WORKLOAD_NAMESPACES:
        await client.create(NAMESPACES, "", {"metadata": {"name": namespace}})
    for i in range(node_count):
        await client.create(NODES, "", workload.node(i))
        if workload.csi_node is not None:
            await client.create(CSI_NODES, "", workload.csi_node(i))
    if workload.init_pod is None:
        return
    init_count = math.ceil(workload.init_pods_per_node * node_count)
    names = set()
    for i in range(init_count):
        pod = workload.init_pod(i)
        names.add(pod["metadata"]["name"])
        await creator.create(pod)
    try:
        async with asyncio.timeout(_virtual_limit(init_count)):
            await bindings.until(lambda: names <= bindings.at.keys())
    except TimeoutError:
        bound = len(names & bindings.at.keys())
        raise BenchError(
            f"{workload.name}: {bound} of {init_count} init pods were scheduled "
            f"on {node_count} nodes"
        ) from None
    bindings.forget()


async def _check_churn(
    workload: Workload, churned: int, bindings: _Bindings, clock: VirtualClock
) -> None:
    """Churn pods that fit must all land (given a while to back off and retry); those that
    fit no node must never be bound."""

    def churn_bound() -> int:
        return len(bindings.at) - bindings.measured

    if not churned:
        return
    if not workload.churn_schedulable:
        if churn_bound():
            raise BenchError(f"{workload.name}: {churn_bound()} pods that fit no node were bound")
        return
    try:
        async with asyncio.timeout(CHURN_SETTLE):
            await bindings.until(lambda: churn_bound() >= churned)
    except TimeoutError:
        left = churned - churn_bound()
        raise BenchError(f"{workload.name}: {left} preemptor pods were never scheduled") from None


def _virtual_limit(pods: int) -> float:
    """Virtual seconds a phase may take: time stands still while the scheduler works, so only
    its waits (flushes, backoffs) count; a phase that never ends is a pod that never fits."""
    return 60.0 + pods / 10
