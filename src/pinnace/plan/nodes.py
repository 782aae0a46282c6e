"""`pinnace plan nodes WORKLOADS… --pool NAME [--spare N]`: the least number of nodes of a pool
to add so that everything schedules: the new workloads' pods, the pods the cluster has pending,
and the replacements of any pod they preempt.

A count is tried by adding that many nodes of the pool (copies of its template, each with the
pods of the DaemonSets that would run there, copied from a pod of the DaemonSet and pinned to
the node as the DaemonSet controller pins them) and letting kube-scheduler place every pod
(`pinnace.plan.placement`); then the cluster is put back as it was.

Two lower bounds come first. From the resource totals: for each resource, what the pods ask for
beyond what the cluster has free (on Ready, uncordoned nodes), over what one new node offers once
its daemon pods are placed, rounded up; the pod count is one of the resources. Shape by shape:
the pods of one workload and shape that the cluster's nodes cannot hold, counted as `plan
headroom` counts copies (for a shape whose count it computes), over how many one new node holds,
rounded up; and request by request, the pods to place (new or pending, of any workload) asking
for at least as much of every resource, less as many as the free room of the cluster's nodes
holds, over how many one new node holds, rounded up; where a pod to place may preempt, what
preemption could take counts as free (docs/planning.md). No fewer nodes can hold the pods
whatever the scheduler does. From the larger it
gallops (bound, then steps of a 32nd of it, at least 1, doubling; after a count whose pods left
over would fill at least m more new nodes by what they ask for, m more, or steps from 1,
doubling, when larger) to the first count that fits, then halves the gap between it and the
last count that did not. This takes for granted that more
nodes never make a pod fit less, which holds for the default plugins' filters (a node more only
adds room) though a scorer's choices could in principle differ.

With `--spare N`, the count must also survive the loss of any N nodes: after the pods are
placed, N nodes are taken away and the pods on them that have a controller (the ones that come
back) must all be placed on the rest; DaemonSet pods go with their nodes and bare pods are lost.
"Any N" is checked on every combination of N nodes when there are at most
EXHAUSTIVE_COMBINATIONS of them, else on the sets whose loss hurts most: the N nodes with the
most requested (by their largest share of the cluster's allocatable of any resource), the N
largest (by their share of the allocatable), and the N with the most pods. The search for the
spare count starts at the count without spare plus N, and gallops and halves as above.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api.objects import Object
from pinnace.controllers.controller_utils import controller_ref
from pinnace.controllers.daemonset_util import DaemonPlacement, bind_to_node
from pinnace.plan import report
from pinnace.plan.cluster import (
    PlanError,
    Snapshot,
    is_ready,
    merged,
    new_node,
    quantity,
)
from pinnace.plan.fragments import shapes_of, workload
from pinnace.plan.headroom import computed_copies
from pinnace.plan.materialize import materialize
from pinnace.plan.placement import Outcome, Placer, pod_key
from pinnace.plan.report import PlanReport, Table
from pinnace.resources.lists import parse_resource_list, scheduler_value
from pinnace.resources.names import PODS
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.scheduler.nodetable import PODS_COLUMN
from pinnace.scheduler.podinfo import PodInfo
from pinnace.sim.wording import counted

DEFAULT_MAX_NODES = 10_000
EXHAUSTIVE_COMBINATIONS = 64
GALLOP_FRACTION = 32
NEW_NODE_INFIX = "plan"
"""New nodes are named `<pool>-plan-<n>`."""


FIT = "fit"
SPARE = "spare"


@dataclass
class Trial:
    nodes: int
    check: str
    """FIT (everything placed) or SPARE (and placed again after losing nodes)."""
    fits: bool
    unschedulable: list[tuple[str, str]] = field(default_factory=list)
    """(pod, FailedScheduling message) of the pods that did not fit."""
    lost: tuple[str, ...] = ()
    """The nodes taken away for a spare check that failed."""
    short: int = 0
    """How many more new nodes the pods that did not fit would fill at least, by what they
    ask for (0 when unknown: a spare check)."""


def nodes_needed(
    snapshot: Snapshot,
    manifests: Sequence[Object],
    pool: str,
    *,
    spare: int = 0,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> PlanReport:
    """How many nodes of `pool` to add; see the module's docstring."""
    if spare < 0:
        raise PlanError("--spare must be at least 0")
    template = snapshot.template(pool)
    made = materialize(manifests, nodes=snapshot.nodes, state=snapshot.objects, seed=seed)
    cluster = merged(snapshot, made.objects)
    search = _Search(cluster, made.pods, pool, template, seed, config)
    bound = search.lower_bound()
    shape_bound = max(bound, search.shape_bound())
    too_large = search.too_large()
    needed = None if too_large else search.smallest(shape_bound, max_nodes, search.fits)
    with_spare = None
    if needed is not None and spare:
        with_spare = search.smallest(needed + spare, max_nodes, lambda k: search.survives(k, spare))
    final = with_spare if with_spare is not None else needed
    search.keep(final if final is not None else 0)
    body = {
        "pool": pool,
        "template": {"allocatable": search.template_allocatable()},
        "lowerBound": bound,
        "shapeBound": shape_bound,
        "nodesToAdd": needed,
        "spare": spare,
        "nodesToAddWithSpare": with_spare if spare else needed,
        "spareMethod": search.spare_method(spare),
        "newPods": len(made.pods),
        "tried": [{"nodes": t.nodes, "check": t.check, "fits": t.fits} for t in search.tried],
        "unschedulable": too_large or _failures(search.last_failure),
        "lostNodes": list(search.last_failure.lost) if search.last_failure else [],
        "skipped": made.skipped,
    }
    shapes = shapes_of([*made.pods, *snapshot.pods])
    doc = report.document(
        "nodes", cluster, {**body, **report.cluster_sections(search.placer, shapes)}
    )
    # No count, or none that survives the loss of `spare` nodes.
    answered_no = needed is None or (spare > 0 and with_spare is None)
    return PlanReport(doc, _headline(doc, max_nodes), _tables(doc), answered_no=answered_no)


@dataclass(frozen=True)
class _Preemptible:
    every: np.ndarray
    bare: np.ndarray


class _Search:
    def __init__(
        self,
        cluster: Snapshot,
        new_pods: list[Object],
        pool: str,
        template: Object,
        seed: int,
        config: SchedulerConfiguration | None,
    ) -> None:
        self.cluster = cluster
        self.pool = pool
        self.template = template
        self.new_pods = new_pods
        self.placer = Placer(cluster, seed=seed, config=config)
        self.pending = cluster.pending_pods()
        self.daemons = _daemons(cluster, new_pods)
        self.tried: list[Trial] = []
        self.last_failure: Trial | None = None
        self._open: Trial | None = None
        self._spare_method = ""
        self._made: list[Object] = []

    # --- the bound -----------------------------------------------------------------------------

    def too_large(self) -> list[dict[str, str]]:
        """The pods asking for more of a resource than a new node offers once its daemon pods
        are placed: no count of nodes makes them fit."""
        offered = self._per_new_node()
        found = []
        for pod in [*self.new_pods, *self.pending]:
            for resource, value in PodInfo.from_pod(pod).requests.items():
                if value > offered.get(resource, 0):
                    have = quantity(resource, max(offered.get(resource, 0), 0))
                    message = (
                        f"asks for {quantity(resource, value)} {resource}; a node of pool "
                        f"{self.pool} has {have} once its daemon pods are placed"
                    )
                    found.append({"pod": pod_key(pod), "message": message})
                    break
        return found

    def lower_bound(self) -> int:
        """ceil((asked - free) / per new node), the most over the resources; 0 at least."""
        table = self.placer.core.table
        asked: dict[str, int] = {}
        for pod in [*self.new_pods, *self.pending]:
            for resource, value in {**PodInfo.from_pod(pod).requests, PODS: 1}.items():
                asked[resource] = asked.get(resource, 0) + value
        usable = self._usable()
        offered = self._per_new_node()
        lost = self._preemptible.bare
        bound = 0
        for resource, total in asked.items():
            column = table.column(resource)
            free = table.allocatable[:, column] - table.requested[:, column] + lost[:, column]
            short = total - int(np.maximum(free, 0)[usable].sum())
            if short <= 0:
                continue
            per_node = offered.get(resource, 0)
            if per_node > 0:  # else too_large() names the pods no count helps
                bound = max(bound, math.ceil(short / per_node))
        return bound

    def shape_bound(self) -> int:
        """A tighter bound, shape by shape: the pods of one shape that the cluster's nodes
        cannot hold (counted as `plan headroom` counts copies) over how many one new node
        holds, rounded up; the most over the shapes (0 for a shape whose count only placing
        copies tells), and over the requests of the pods to place (`_requests_bound`)."""
        offered = self._per_new_node()
        bound = self._requests_bound(offered)
        if self._preemptible.every.any():
            return bound  # copies counted in the free room alone could undercount the room
        for pods in _by_shape(self.new_pods).values():
            held = computed_copies(self.placer, pods[0])
            if held is None:
                continue
            requests = {**PodInfo.from_pod(pods[0]).requests, PODS: 1}
            per_node = min(offered.get(r, 0) // v for r, v in requests.items())
            short = len(pods) - int(held.per_node.sum())
            if short > 0 and per_node > 0:
                bound = max(bound, math.ceil(short / per_node))
        return bound

    def _requests_bound(self, offered: Mapping[str, int]) -> int:
        """For the requests of each pod to place (new or pending, not yet bound, one this
        scheduler will try): the pods asking for at least as much of every resource, less as
        many as the free room of the cluster's Ready, uncordoned nodes holds, over how many one
        new node holds, rounded up; the most over the requests. Whatever their workloads and
        constraints, such pods each take at least those requests from the node they go to."""
        infos = [PodInfo.from_pod(p) for p in [*self.new_pods, *self.pending]]
        profiles = self.placer.core.profiles
        asked = [
            {**info.requests, PODS: 1}
            for info in infos
            if not info.node_name and info.scheduler_name in profiles and not info.scheduling_gates
        ]
        resources = sorted({r for a in asked for r in a})
        if not resources:
            return 0
        matrix = np.array([[a.get(r, 0) for r in resources] for a in asked], dtype=np.int64)
        table = self.placer.core.table
        kept = table.requested - self._preemptible.every
        free = np.maximum(table.allocatable - kept, 0)[self._usable()]
        bound = 0
        for row in np.unique(matrix, axis=0):
            requests = {i: int(v) for i, v in enumerate(row) if v}
            per_node = min(offered.get(resources[i], 0) // v for i, v in requests.items())
            if per_node <= 0:
                continue  # too_large() names the pods no count helps
            held = np.full(len(free), np.iinfo(np.int64).max)
            for i, value in requests.items():
                column = table.columns.get(resources[i])
                room = free[:, column] if column is not None else np.zeros(len(free), np.int64)
                held = np.minimum(held, room // value)
            short = int((matrix >= row).all(axis=1).sum()) - int(held.sum())
            if short > 0:
                bound = max(bound, math.ceil(short / per_node))
        return bound

    @functools.cached_property
    def _preemptible(self) -> _Preemptible:
        """What the pods to place could take from the cluster's pods by preemption: every pod
        of lower priority than the highest a pod to place preempts with (a replacement of
        one with a controller comes back, though maybe elsewhere), and the bare ones among
        them (lost for good), as `requested` columns."""
        table = self.placer.core.table
        bare = np.zeros_like(table.requested)
        top = max(
            (
                int(p["spec"].get("priority") or 0)
                for p in [*self.new_pods, *self.pending]
                if p["spec"].get("preemptionPolicy") != "Never"
            ),
            default=None,
        )
        if top is None:
            return _Preemptible(np.zeros_like(bare), bare)
        every = table.requested - table.requested_at_or_above(top)
        for row in np.flatnonzero(table.lower_priority_pods(top)).tolist():
            for info in table.pods[row].values():
                if info.priority < top and controller_ref(info.pod) is None:
                    for resource, value in info.requests.items():
                        bare[row, table.columns[resource]] += value
                    bare[row, PODS_COLUMN] += 1
        return _Preemptible(every, bare)

    def _usable(self) -> np.ndarray:
        """Which of the scheduler's nodes are Ready and uncordoned."""
        nodes = self.placer.core.table.nodes
        return np.array(
            [is_ready(n) and not (n.get("spec") or {}).get("unschedulable") for n in nodes],
            dtype=bool,
        )

    def _per_new_node(self) -> dict[str, int]:
        """What one new node offers once its daemon pods are placed."""
        offered = dict(self.template_amounts())
        for pod in self._daemon_pods(new_node(self.template, f"{self.pool}-bound")):
            for resource, value in {**PodInfo.from_pod(pod).requests, PODS: 1}.items():
                offered[resource] = offered.get(resource, 0) - value
        return offered

    def template_amounts(self) -> dict[str, int]:
        listed = parse_resource_list(
            (self.template.get("status") or {}).get("allocatable"), "allocatable"
        )
        return {r: scheduler_value(r, q) for r, q in listed.items()}

    def template_allocatable(self) -> dict[str, str]:
        return {r: quantity(r, v) for r, v in self.template_amounts().items()}

    # --- trials --------------------------------------------------------------------------------

    def smallest(self, start: int, most: int, works: Any) -> int | None:
        """The smallest count from `start` up to `most` that `works`: gallop (steps from a
        32nd of `start`, doubling; after a count whose left-over pods say how many more nodes
        they would fill at least, that many more, or steps from 1 when larger), then halve."""
        failed, step, k = start - 1, max(1, start // GALLOP_FRACTION), start
        guided = False
        while True:
            k = min(k, most)
            if works(k):
                break
            failed = k
            if k >= most:
                return None
            short = self.tried[-1].short
            if short:
                step = step * 2 if guided else 1
                guided = True
                k += max(short, step)
            else:
                k, step = k + step, step * 2
        found = k
        while found - failed > 1:
            middle = (failed + found) // 2
            if works(middle):
                found = middle
            else:
                failed = middle
        return found

    def fits(self, k: int) -> bool:
        """Whether everything fits with `k` nodes added; the trial stays open (undone when
        the next begins) so that `keep` can take it as it is."""
        self._close()
        self.placer.begin()
        trial = self._place(k)
        self._open = trial
        return self._note(trial)

    def survives(self, k: int, spare: int) -> bool:
        self._close()
        for lost in self._losses(k, spare):
            self.placer.begin()
            try:
                trial = self._place(k)
                if trial.fits:
                    trial = self._lose(k, lost)
            finally:
                self.placer.restore()
            if not trial.fits:
                return self._note(trial)
        return self._note(Trial(k, SPARE, True))

    def keep(self, k: int) -> None:
        """Place everything with `k` nodes and keep it so (the plan's nodes)."""
        open_trial = self._open
        if open_trial is not None and open_trial.nodes == k and open_trial.check == FIT:
            self._open = None
            self.placer.commit()
            return
        self._close()
        self.placer.begin()
        self._place(k)
        self.placer.commit()

    def _close(self) -> None:
        if self._open is not None:
            self._open = None
            self.placer.restore()

    def _note(self, trial: Trial) -> bool:
        self.tried.append(trial)
        last = self.last_failure
        if not trial.fits and (last is None or trial.nodes >= last.nodes):
            self.last_failure = trial
        return trial.fits

    def _new_nodes(self, k: int) -> list[Object]:
        """The first `k` new nodes: made once, and the same objects in every trial (nothing
        changes a node once made, and thousands of copies of the template are not cheap)."""
        made = self._made
        made += [
            new_node(self.template, f"{self.pool}-{NEW_NODE_INFIX}-{i}")
            for i in range(len(made) + 1, k + 1)
        ]
        return made[:k]

    def _place(self, k: int) -> Trial:
        placer = self.placer
        nodes = self._new_nodes(k)
        for node in nodes:
            placer.add_node(node)
        daemons = [pod for node in nodes for pod in self._daemon_pods(node)]
        outcomes = placer.place([*daemons, *self.new_pods])
        failed = [o for o in outcomes if not o.node]
        others = [pod_key(p) for p in self.pending]
        others += [p.replacement for p in placer.preemptions if p.replacement]
        # a pending pod no profile here serves gets no outcome: it is not this scheduler's
        tried = [placer.outcomes[k] for k in others if k in placer.outcomes]
        failed += [o for o in tried if not o.node]
        return Trial(k, FIT, not failed, _said(failed), short=self._short(failed))

    def _short(self, failed: list[Outcome]) -> int:
        """ceil(what the pods that did not fit ask for / what a new node offers), the most
        over the resources (the pod count among them)."""
        asked: dict[str, int] = {}
        for outcome in failed:
            for resource, value in {**PodInfo.from_pod(outcome.pod).requests, PODS: 1}.items():
                asked[resource] = asked.get(resource, 0) + value
        offered = self._per_new_node()
        return max(
            (math.ceil(v / offered[r]) for r, v in asked.items() if offered.get(r, 0) > 0),
            default=0,
        )

    def _lose(self, k: int, lost: tuple[str, ...]) -> Trial:
        placer = self.placer
        moving = []
        for name in lost:
            for pod in placer.remove_node(name):
                if controller_ref(pod) is not None and not _is_daemon(pod):
                    moving.append(placer.replacement(pod))
        outcomes = placer.place(moving)
        failed = [o for o in outcomes if not o.node]
        return Trial(k, SPARE, not failed, _said(failed), lost)

    def _losses(self, k: int, spare: int) -> Iterator[tuple[str, ...]]:
        """The sets of `spare` nodes whose loss to check, with `k` nodes added."""
        names = [*self.placer.nodes, *(n["metadata"]["name"] for n in self._new_nodes(k))]
        if math.comb(len(names), spare) <= EXHAUSTIVE_COMBINATIONS:
            self._spare_method = f"every combination of {counted(spare, 'node')}"
            yield from itertools.combinations(sorted(names), spare)
            return
        self._spare_method = (
            f"the {spare} most requested, the {spare} largest and the {spare} fullest nodes"
        )
        self._close()
        self.placer.begin()
        try:
            self._place(k)
            table = self.placer.core.table
            allocatable = table.allocatable.astype(float)
            total = np.maximum(allocatable.sum(axis=0), 1)
            loaded = (table.requested / total).max(axis=1)
            largest = (allocatable / total).max(axis=1)
            pods = table.requested[:, table.column(PODS)]
            rankings = [loaded, largest, pods]
            sets = [
                tuple(table.names[i] for i in np.argsort(-r, kind="stable")[:spare])
                for r in rankings
            ]
        finally:
            self.placer.restore()
        yield from dict.fromkeys(sets)

    def spare_method(self, spare: int) -> str:
        return self._spare_method if spare else ""

    def _daemon_pods(self, node: Object) -> list[Object]:
        pods = []
        for placement, sample in self.daemons:
            if placement.should_run(node)[0]:
                pod = self.placer.replacement(sample)
                bind_to_node(pod["spec"], node["metadata"]["name"])
                pods.append(pod)
        return pods


def _daemons(cluster: Snapshot, new_pods: Sequence[Object]) -> list[tuple[DaemonPlacement, Object]]:
    """Each DaemonSet with a pod of it to copy (one without a pod anywhere is left out)."""
    by_uid: dict[str, Object] = {}
    for pod in [*cluster.pods, *new_pods]:
        ref = controller_ref(pod)
        if ref is not None and ref.get("kind") == "DaemonSet":
            by_uid.setdefault(ref.get("uid", ""), pod)
    found = []
    for ds in cluster.of("daemonsets"):
        sample = by_uid.get(ds["metadata"].get("uid", ""))
        if sample is not None:
            found.append((DaemonPlacement.of(ds), sample))
    return found


def _by_shape(pods: Sequence[Object]) -> dict[tuple[str, str], list[Object]]:
    """The pods by workload and requests (pods of one template ask alike)."""
    found: dict[tuple[str, str], list[Object]] = {}
    for pod in pods:
        if not _is_daemon(pod):
            found.setdefault((workload(pod), repr(PodInfo.from_pod(pod).requests)), []).append(pod)
    return found


def _is_daemon(pod: Object) -> bool:
    ref = controller_ref(pod)
    return ref is not None and ref.get("kind") == "DaemonSet"


def _said(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    """What the outcomes say now (the next trial reuses them)."""
    return [(o.key, o.message) for o in outcomes]


def _failures(trial: Trial | None) -> list[dict[str, Any]]:
    if trial is None:
        return []
    return [{"pod": key, "message": message} for key, message in trial.unschedulable]


def _headline(doc: Mapping[str, Any], max_nodes: int) -> list[str]:
    pool, needed, bound = doc["pool"], doc["nodesToAdd"], doc["lowerBound"]
    if needed is None and not doc["tried"]:
        return [f"No number of nodes of pool {pool} makes everything fit: some pods are larger."]
    if needed is None:
        return [
            f"Even {counted(max_nodes, 'more node')} of pool {pool} "
            f"{'does' if max_nodes == 1 else 'do'} not make everything fit "
            f"(lower bound from the resource totals: {bound})."
        ]
    lines = [
        f"Add {counted(needed, 'node')} of pool {pool} (lower bound from the resource totals: "
        f"{bound}; shape by shape: {doc['shapeBound']}) for the "
        f"{counted(doc['newPods'], 'new pod')} and everything pending to schedule."
    ]
    if doc["spare"]:
        with_spare = doc["nodesToAddWithSpare"]
        if with_spare is None:
            lines.append(
                f"No count up to {max_nodes} survives the loss of {counted(doc['spare'], 'node')}."
            )
        else:
            lines.append(
                f"With {doc['spare']} spare: add {counted(with_spare, 'node')} (checked on "
                f"{doc['spareMethod']})."
            )
    return lines


def _tables(doc: Mapping[str, Any]) -> list[Table]:
    tried = Table(
        "Counts tried",
        ["NODES ADDED", "CHECK", "FITS"],
        [[str(t["nodes"]), t["check"], "yes" if t["fits"] else "no"] for t in doc["tried"]],
    )
    failed = Table(
        "Pods that did not fit at the largest count that failed"
        + (f" (nodes lost: {', '.join(doc['lostNodes'])})" if doc["lostNodes"] else ""),
        ["POD", "REASON"],
        [[f["pod"], f["message"]] for f in doc["unschedulable"]],
    )
    return [tried, failed, report.node_table(doc), report.fragmentation_table(doc)]
