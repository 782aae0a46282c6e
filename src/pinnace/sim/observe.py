"""What a simulation records while it runs: every pod's lifecycle, and samples of the cluster.

An `Observer` is a client of the cluster like any component: one informer each for Pods (the
controllers' shared one, when the cluster runs them), Nodes and FailedScheduling Events, whose
handlers keep the pods' records (`pinnace.sim.lifecycle`) and the nodes' allocatable and
requested (`pinnace.sim.ledger`) current. Every `interval` seconds of the cluster's clock it
takes a `Sample`: per resource, over the cluster and per node pool (the pinnace.dev/node-pool
label), allocatable, requested and used (the pods' usage, as the metrics API reports it from
the nodes' stats summaries, for cpu and memory); pods by phase; nodes ready and not; the
FailedScheduling reasons since the last sample; and the fragmentation of free capacity on the
ready, schedulable nodes for every pod shape seen so far. Times are seconds of simulated time
since the observer started; start it before the workloads arrive, so that what it sees first
is what happened first.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from pinnace.api import catalog
from pinnace.api.core.event import occurrences
from pinnace.api.objects import Object
from pinnace.client import Informer
from pinnace.kubelet.config import NODE_POOL_LABEL
from pinnace.metrics.fragmentation import Fragmentation, fragmentation, free_capacity
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.schedule_one import FAILED_SCHEDULING
from pinnace.sim.ledger import Amounts, Ledger
from pinnace.sim.lifecycle import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    PodRecord,
    Shape,
    controller_of,
    disruption,
    fit_error_reasons,
    oom_kills,
    requests_of,
    restarts,
    unschedulable,
    workload_of,
)

if TYPE_CHECKING:
    from pinnace.cluster import ControlPlane

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
EVENTS = catalog.kind("", "events")
NANO_PER_MILLI = 1_000_000

Ratios = npt.NDArray[np.float64]
PHASES = (PENDING, RUNNING, "Succeeded", FAILED)


@dataclass(frozen=True)
class Incident:
    """Something a planner looks for on the timeline: a pod evicted (the reason as
    `PodRecord.evicted`), OOMKilled or Failed, a node NotReady, Ready again, added or deleted."""

    time: float
    kind: str
    subject: str
    """namespace/name of a pod, the name of a node."""


@dataclass(frozen=True)
class Sample:
    """The cluster at one moment. Amounts are in the scheduler's units (millicores for cpu);
    rows are the cluster, then each pool of `pools`."""

    time: float
    resources: tuple[str, ...]
    pools: tuple[str, ...]
    allocatable: Amounts
    requested: Amounts
    used: Ratios
    """NaN for the resources the metrics API has no figure for (all but cpu and memory)."""
    pods: Mapping[str, int]
    """By phase (Pending, Running, Succeeded, Failed: the pods that exist), and Unscheduled
    (not bound) and Total."""
    nodes: Mapping[str, int]
    """Ready, NotReady."""
    pool_nodes: Mapping[str, int]
    """The nodes present in each pool (the cluster's, and any a node names)."""
    cost_per_hour: float | None
    """What the nodes present cost an hour, by their pools' costs (None: no pool has one)."""
    failed_scheduling: Mapping[str, int]
    """FailedScheduling reasons since the previous sample (each repeat of an Event counted)."""
    shapes: tuple[str, ...]
    fragmentation: Fragmentation
    """Over the ready, schedulable nodes, for `shapes`."""


@dataclass(frozen=True)
class NodeState:
    """The nodes present now, one row each."""

    names: tuple[str, ...]
    pools: tuple[str, ...]
    resources: tuple[str, ...]
    allocatable: Amounts
    requested: Amounts
    used: Ratios
    ready: npt.NDArray[np.bool_]
    schedulable: npt.NDArray[np.bool_]
    shapes: tuple[str, ...]
    fragmentation: Fragmentation
    """`fits` per node; a node that is not ready or not schedulable has nothing free."""


class Observer:
    """Records `plane` every `interval` seconds of its clock (see the module's docstring).

    observer = Observer(plane, interval=60)
    await observer.start()
    ...                       # the simulation runs
    await observer.stop()     # takes a last sample
    observer.pods, observer.samples, observer.incidents, observer.nodes_now()
    """

    def __init__(
        self,
        plane: ControlPlane,
        interval: float,
        pools: Mapping[str, float | None] | None = None,
    ) -> None:
        """`pools`: the cluster's node pools, each with what a node of it costs an hour (None:
        no cost given); each has a node count in every sample, nodes or not."""
        if interval <= 0:
            raise ValueError("the sampling interval must be positive")
        self.plane = plane
        self.pool_names = sorted(pools or {})
        self.costs = {p: c for p, c in (pools or {}).items() if c is not None}
        self.clock = plane.clock
        self.interval = interval
        self.origin = 0.0
        self.ledger = Ledger()
        self.pods: dict[str, PodRecord] = {}
        """By uid, in the order first seen."""
        self.pending: dict[str, PodRecord] = {}
        """The records of the pods that exist and are Pending, by uid, in the order first seen:
        what is waiting, without a pass over every pod."""
        self.shapes: list[Shape] = []
        self.samples: list[Sample] = []
        self.incidents: list[Incident] = []
        self.failed_scheduling: Counter[str] = Counter()
        """Every FailedScheduling reason of the run, each repeat counted."""
        self.failed_scheduling_events = 0
        """FailedScheduling Events of the run, each repeat counted."""
        self._shape_of: dict[tuple[tuple[str, int], ...], int] = {}
        self._shape_workloads: list[set[str]] = []
        """Each shape's workloads, as a set (a shape of bare pods can have thousands)."""
        self._vectors: dict[int, tuple[int, Amounts]] = {}
        self._phases: Counter[str] = Counter()
        self._unscheduled = 0
        self._since_sample: Counter[str] = Counter()
        self._event_counts: dict[str, int] = {}
        self._nodes_seen: dict[str, tuple[object, str, bool, bool]] = {}
        self._ever_ready: set[str] = set()
        self._synced = False
        client = plane.client()
        # The controllers' shared informer on every pod when the cluster runs them: one watch
        # of every pod fewer to feed.
        shared = None if plane.workloads is None else plane.workloads.informers.informer(PODS)
        self._own_pods = shared is None
        self._pods = (
            Informer(client, PODS, codec=plane.codec, namespace_index=False)
            if shared is None
            else shared
        )
        self._nodes = Informer(client, NODES, namespace_index=False)
        self._events = Informer(
            client, EVENTS, field_selector=f"reason={FAILED_SCHEDULING}", namespace_index=False
        )
        self._task: asyncio.Task[None] | None = None

    # --- running -----------------------------------------------------------------------------

    def elapsed(self) -> float:
        """Seconds of the cluster's clock since the observer started."""
        return self.clock.now() - self.origin

    async def start(self) -> None:
        """Sync the informers, take the first sample, and sample every interval from now."""
        self.origin = self.clock.now()
        self._nodes.add_event_handler(self._on_node, lambda _, n: self._on_node(n), self._gone)
        self._pods.add_event_handler(self._on_pod, lambda _, p: self._on_pod(p), self._deleted)
        self._events.add_event_handler(self._on_event, lambda _, e: self._on_event(e))
        informers = (self._nodes, self._pods, self._events)
        for informer in informers:
            informer.start()
        await asyncio.gather(*(i.wait_for_sync() for i in informers))
        self._synced = True
        self.sample()
        self._task = self.clock.loop.create_task(self._sample_every_interval())

    async def stop(self) -> None:
        """Stop sampling, take a last sample (unless one was just taken), stop the informers."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
            if not self.samples or self.samples[-1].time < self.elapsed():
                self.sample()
        for informer in (self._events, self._pods, self._nodes):
            if informer is not self._pods or self._own_pods:
                await informer.stop()

    async def _sample_every_interval(self) -> None:
        taken = 1
        while True:
            await self.clock.sleep(taken * self.interval - self.elapsed())
            self.sample()
            taken += 1

    # --- nodes -------------------------------------------------------------------------------

    def _on_node(self, node: Object) -> None:
        name = node["metadata"]["name"]
        pool = (node["metadata"].get("labels") or {}).get(NODE_POOL_LABEL, "")
        ready = _is_ready(node)
        schedulable = not (node.get("spec") or {}).get("unschedulable", False)
        seen = ((node.get("status") or {}).get("allocatable"), pool, ready, schedulable)
        before = self._nodes_seen.get(name)
        if seen == before:
            return
        self._nodes_seen[name] = seen
        self.ledger.set_node(node, pool, ready, schedulable)
        if before is None and self._synced:
            self._incident("NodeAdded", name)
        if ready and name not in self._ever_ready:
            self._ever_ready.add(name)
        elif before is not None and before[2] != ready:
            self._incident("NodeReady" if ready else "NodeNotReady", name)

    def _gone(self, node: Object) -> None:
        name = node["metadata"]["name"]
        self._nodes_seen.pop(name, None)
        self.ledger.remove_node(name)
        self._incident("NodeDeleted", name)

    # --- pods --------------------------------------------------------------------------------

    def _on_pod(self, pod: Object) -> None:
        record = self.pods.get(pod["metadata"].get("uid", ""))
        if record is None:
            record = self._record(pod)  # not counted yet
            self._update(record, pod)
            self._account(record, 1)
        else:
            counted = (record.phase, record.node)
            self._update(record, pod)
            if (record.phase, record.node) != counted:  # else its counts stay as they are
                self._move(record, *counted)
        self._note_pending(record)

    def _deleted(self, pod: Object) -> None:
        record = self.pods.get(pod["metadata"].get("uid", ""))
        if record is None:
            return
        self._account(record, -1)
        self._update(record, pod)
        record.deleted = self.elapsed()
        self._account(record, 1)
        self._note_pending(record)

    def _record(self, pod: Object) -> PodRecord:
        meta = pod["metadata"]
        owner_kind, owner_name = controller_of(pod)
        workload = workload_of(pod, owner_kind, owner_name)
        record = PodRecord(
            namespace=meta.get("namespace", ""),
            name=meta["name"],
            uid=meta.get("uid", ""),
            owner_kind=owner_kind,
            owner_name=owner_name,
            workload=workload,
            shape=self._shape(requests_of(pod), workload),
            created=self.elapsed(),
        )
        self.pods[record.uid] = record
        return record

    def _shape(self, requests: dict[str, int], workload: str) -> int:
        key = tuple(requests.items())
        index = self._shape_of.get(key)
        if index is None:
            index = self._shape_of[key] = len(self.shapes)
            self.shapes.append(Shape(requests, [workload]))
            self._shape_workloads.append({workload})
        elif workload not in self._shape_workloads[index]:
            self._shape_workloads[index].add(workload)
            self.shapes[index].workloads.append(workload)
        return index

    def _update(self, record: PodRecord, pod: Object) -> None:
        now = self.elapsed()
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if node and not record.node:
            record.node, record.scheduled = node, now
        phase = (pod.get("status") or {}).get("phase") or PENDING
        if phase == RUNNING and record.running is None:
            record.running = now
        if phase in FINISHED and record.finished is None:
            record.finished = now
        record.phase = phase
        record.unschedulable = record.unschedulable or (not node and unschedulable(pod))
        record.restarts = max(record.restarts, restarts(pod))
        for kill in oom_kills(pod):
            if kill not in record.ooms_seen:
                record.ooms_seen += (kill,)
                record.oom_kills += 1
                self._incident("OOMKilled", record.key)
        reason = disruption(pod)
        if reason and not record.evicted:
            record.evicted, record.evicted_at = reason, now
            self._incident(reason, record.key)
        elif phase == FAILED and record.finished == now and not record.evicted:
            self._incident("PodFailed", record.key)

    def _note_pending(self, record: PodRecord) -> None:
        if record.deleted is None and record.phase == PENDING:
            self.pending.setdefault(record.uid, record)  # a pod never goes back to Pending
        else:
            self.pending.pop(record.uid, None)

    def _account(self, record: PodRecord, sign: int) -> None:
        """Count the record (1) or take it out (-1) of the phases and its node's requests."""
        self._count(record, record.phase, record.node, sign)

    def _count(self, record: PodRecord, phase: str, node: str, sign: int) -> None:
        """`_account` of the record as in `phase` on `node`."""
        if record.deleted is not None:
            return
        self._phases[phase] += sign
        if phase in FINISHED:
            return
        if node:
            self.ledger.charge(node, self._vector(record.shape), sign)
        else:
            self._unscheduled += sign

    def _move(self, record: PodRecord, phase: str, node: str) -> None:
        """Take the record out of the counts as in `phase` on `node` and count it as it is
        now: the node's requests stay as they are when it holds them before and after (a
        pod that starts running, most changes)."""
        if record.deleted is not None:
            return
        held, holds = phase not in FINISHED, record.phase not in FINISHED
        if node and node == record.node and held and holds:
            self._phases[phase] -= 1
            self._phases[record.phase] += 1
            return
        self._count(record, phase, node, -1)
        self._account(record, 1)

    def _vector(self, shape: int) -> Amounts:
        cached = self._vectors.get(shape)
        if cached is None or cached[0] != self.ledger.version:
            vector = self.ledger.vector(self.shapes[shape].requests)
            cached = self._vectors[shape] = (self.ledger.version, vector)
        return cached[1]

    # --- events ------------------------------------------------------------------------------

    def _on_event(self, event: Object) -> None:
        involved = event.get("involvedObject") or {}
        if event.get("reason") != FAILED_SCHEDULING or involved.get("kind") != "Pod":
            return
        meta = event["metadata"]
        key = f"{meta.get('namespace', '')}/{meta['name']}"
        count = occurrences(event)
        last = self._event_counts.get(key, 0)
        # Expired and written again, the Event keeps its name and count: count only what is new.
        new = count - last if count >= last else count
        self._event_counts[key] = count
        if new <= 0:
            return
        message = event.get("message") or ""
        self.failed_scheduling_events += new
        for reason in fit_error_reasons(message):
            self.failed_scheduling[reason] += new
            self._since_sample[reason] += new
        record = self.pods.get(involved.get("uid", ""))
        if record is not None:
            record.failed_scheduling += new
            record.last_failed_scheduling = message

    # --- samples -----------------------------------------------------------------------------

    def _incident(self, kind: str, subject: str) -> None:
        self.incidents.append(Incident(self.elapsed(), kind, subject))

    def pods_now(self) -> dict[str, int]:
        """The pods that exist now, by phase, and Unscheduled (not bound) and Total."""
        return {
            **{phase: self._phases[phase] for phase in PHASES},
            "Unscheduled": self._unscheduled,
            "Total": sum(self._phases.values()),
        }

    def sample(self) -> Sample:
        """Take a sample now (the observer takes one every interval on its own)."""
        ledger = self.ledger
        present = ledger.present
        pools = range(len(ledger.pools))
        groups = np.vstack([present, *(present & (ledger.pool_codes == i) for i in pools)])
        used = self._used()
        frag, shapes = self._fragmentation()
        pool_nodes = dict.fromkeys(self.pool_names, 0)
        for i, pool in enumerate(ledger.pools):
            pool_nodes[pool] = int((present & (ledger.pool_codes == i)).sum())
        sample = Sample(
            time=self.elapsed(),
            resources=tuple(ledger.resources),
            pools=tuple(ledger.pools),
            allocatable=groups.astype(np.int64) @ ledger.allocatable,
            requested=groups.astype(np.int64) @ ledger.requested,
            used=groups.astype(np.float64) @ used,
            pods=self.pods_now(),
            nodes={
                "Ready": int((present & ledger.ready).sum()),
                "NotReady": int((present & ~ledger.ready).sum()),
            },
            pool_nodes=pool_nodes,
            cost_per_hour=(
                round(sum(self.costs.get(p, 0.0) * n for p, n in pool_nodes.items()), 6)
                if self.costs
                else None
            ),
            failed_scheduling=dict(sorted(self._since_sample.items())),
            shapes=shapes,
            fragmentation=frag,
        )
        self._since_sample.clear()
        self.samples.append(sample)
        return sample

    def _used(self) -> Ratios:
        """nodes × resources: what the pods on each node use now (millicores, bytes), as the
        metrics API reports it from the nodes' summaries; NaN for the other resources."""
        ledger = self.ledger
        used = np.full((len(ledger), len(ledger.resources)), np.nan)
        cpu, memory = ledger.resources.index(CPU), ledger.resources.index(MEMORY)
        used[:, [cpu, memory]] = 0.0
        for name, (cpu_nano, memory_bytes) in self.plane.nodes.usage().items():
            row = ledger.rows.get(name)
            if row is not None:
                used[row, cpu] = cpu_nano / NANO_PER_MILLI
                used[row, memory] = memory_bytes
        return used

    def _fragmentation(self) -> tuple[Fragmentation, tuple[str, ...]]:
        """Over every node row (nothing free on one absent, not ready or not schedulable)."""
        ledger = self.ledger
        usable = ledger.present & ledger.ready & ledger.schedulable
        free = free_capacity(ledger.allocatable, ledger.requested) * usable[:, None]
        vectors = [self._vector(i) for i in range(len(self.shapes))]
        width = len(ledger.resources)
        shapes = np.vstack(vectors) if vectors else np.zeros((0, width), dtype=np.int64)
        return fragmentation(free, shapes), tuple(s.name for s in self.shapes)

    def nodes_now(self) -> NodeState:
        """The nodes present now: allocatable, requested, used, and how many more pods of each
        shape each holds."""
        ledger = self.ledger
        rows = np.flatnonzero(ledger.present)
        frag, shapes = self._fragmentation()
        codes = ledger.pool_codes[rows]
        return NodeState(
            names=tuple(ledger.names[r] for r in rows),
            pools=tuple(ledger.pools[c] if c >= 0 else "" for c in codes),
            resources=tuple(ledger.resources),
            allocatable=ledger.allocatable[rows],
            requested=ledger.requested[rows],
            used=self._used()[rows],
            ready=ledger.ready[rows],
            schedulable=ledger.schedulable[rows],
            shapes=shapes,
            fragmentation=replace(frag, fits=frag.fits[rows]),
        )


def _is_ready(node: Object) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )
