"""Preemption: which lower-priority pods to evict so that a pod that fits nowhere can run
(kube-scheduler v1.32's pkg/scheduler/framework/preemption with DefaultPreemption's policy).

1. Eligibility: a pod with preemptionPolicy Never does not preempt; nor does a pod nominated to
   a node where lower-priority pods are still terminating because of an earlier preemption
   (it waits for them), unless that node now rejects it for good.
2. Candidates: only nodes whose rejection removing pods may resolve (Unschedulable, not
   UnschedulableAndUnresolvable), visited from a random offset until enough candidates are found.
3. Victims on a node: every lower-priority pod removed, the pod's filters re-run; then as many
   as possible reprieved, those whose eviction would violate a PodDisruptionBudget first, each
   group from the highest priority down. Removal is simulated on the node table itself and
   undone afterwards.
4. The candidate kept: fewest PDB violations, then the lowest highest victim priority, the
   smallest sum of priorities, the fewest victims, the latest start of the highest-priority
   victims, then the first found.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pinnace.api.labels import LabelSelector, SelectorError, selector_from_dict
from pinnace.clock.rfc3339 import parse_time
from pinnace.scheduler.framework import (
    SUCCESS,
    Code,
    CycleState,
    FilterPlugin,
    Status,
    Verdicts,
    error,
    unresolvable,
    unschedulable,
)
from pinnace.scheduler.nodetable import PODS_COLUMN, NodeTable
from pinnace.scheduler.nominator import (
    Nominator,
    add_pod,
    filter_rows,
    filter_statuses,
    per_node_filters_only,
    pods_to_reserve_for,
    remove_pod,
    run_filter_with_nominated_pods,
)
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.schedule_one import Diagnosis, fit_error_message

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_CANDIDATE = "no candidate node for preemption"
PREEMPT_NEVER = "Never"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_NO_VICTIMS = unresolvable(NO_VICTIMS)
NODE_RESOURCES_FIT = "NodeResourcesFit"
_MAX_INT32 = 2**31 - 1
_MIN_BATCH = 16


@dataclass(frozen=True)
class Candidate:
    """A node where preemption lets the pod fit, and whom it evicts (highest priority first)."""

    node_name: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int


@dataclass(frozen=True)
class Preemption:
    """The decision for the API adapter to carry out: mark each victim with the
    `disruption_condition()` and delete it gracefully (recording a Preempted event with
    `victim_event_message()`), clear status.nominatedNodeName of `nominations_to_clear`, and set
    the preemptor's status.nominatedNodeName to `node_name`."""

    preemptor: PodInfo
    node_name: str
    victims: tuple[PodInfo, ...]
    num_pdb_violations: int
    nominations_to_clear: tuple[PodInfo, ...] = ()

    def disruption_condition(self) -> dict[str, str]:
        return {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": (
                f"{self.preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
            ),
        }

    def victim_event_message(self) -> str:
        """The Preempted event's message on each victim (reason Preempted, action Preempting)."""
        return f"Preempted by pod {self.preemptor.uid} on node {self.node_name}"


@dataclass
class Outcome:
    """What Preempt answers: the node to nominate ("" clears a nomination, None leaves it),
    the status whose message goes after "preemption: ", and the decision if there is one."""

    nominated_node_name: str | None
    status: Status
    preemption: Preemption | None = None


@dataclass
class Evaluator:
    """One preemption attempt's context (kube-scheduler's Evaluator)."""

    profile: Profile
    nominator: Nominator
    table: NodeTable
    pod_disruption_budgets: Sequence[Mapping[str, Any]]
    num_candidates: Callable[[int], int]
    rng: random.Random
    drawn_from: int = 0
    """How many nodes the search's random start was drawn among (0: none was drawn)."""

    def preempt(
        self,
        state: CycleState,
        pod: PodInfo,
        node_statuses: Mapping[str, Status],
        absent_nodes_status: Status,
    ) -> Outcome:
        """Preempt: `node_statuses` are the filters' verdicts per node; nodes not in it share
        `absent_nodes_status` (a PreFilter rejection)."""
        table = self.table
        nominated_node = self.nominator.node_of(pod.key) or (pod.pod.get("status") or {}).get(
            "nominatedNodeName"
        )
        if nominated_node:
            nominated_status = node_statuses.get(nominated_node, absent_nodes_status)
        else:
            nominated_status = SUCCESS
        refusal = self._ineligibility(pod, nominated_node or "", nominated_status)
        if refusal:
            return Outcome(None, unschedulable(refusal))
        every = list(map(node_statuses.get, table.names, repeat(absent_nodes_status)))
        distinct = dict(zip(map(id, every), every, strict=True))
        resolvable = [k for k, s in distinct.items() if s.code == Code.UNSCHEDULABLE]
        ids = np.fromiter(map(id, every), np.int64, len(every))
        potential = np.flatnonzero(np.isin(ids, resolvable)).tolist()
        candidates, statuses = self._dry_run(state, pod, potential)
        if not candidates:
            errors = [s for s in statuses.values() if s.code == Code.ERROR]
            if errors:
                return Outcome(None, errors[0])
            return Outcome("", unschedulable(_fit_error(table, statuses)))
        best = select_candidate(candidates)
        lower_nominated = tuple(
            p for p in self.nominator.pods_for_node(best.node_name) if p.priority < pod.priority
        )
        decision = Preemption(
            pod, best.node_name, best.victims, best.num_pdb_violations, lower_nominated
        )
        return Outcome(best.node_name, SUCCESS, decision)

    def _ineligibility(self, pod: PodInfo, nominated_node: str, nominated_status: Status) -> str:
        """PodEligibleToPreemptOthers: why `pod` may not preempt now ("" if it may)."""
        if (pod.pod.get("spec") or {}).get("preemptionPolicy") == PREEMPT_NEVER:
            return NOT_ELIGIBLE_NEVER
        if not nominated_node or nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        i = self.table.index.get(nominated_node)
        if i is not None and any(
            p.priority < pod.priority and terminating_by_preemption(p)
            for p in self.table.pods[i].values()
        ):
            return NOT_ELIGIBLE_TERMINATING
        return ""

    def _dry_run(
        self, state: CycleState, pod: PodInfo, potential: list[int]
    ) -> tuple[list[Candidate], dict[str, Status]]:
        """DryRunPreemption: candidates (non-violating ones first) and the statuses of the
        nodes that are not."""
        statuses: dict[str, Status] = {}
        if not potential:
            return [], statuses
        count = self.num_candidates(len(potential))
        offset = self.rng.randrange(len(potential))
        self.drawn_from = len(potential)
        lower = self.table.lower_priority_pods(pod.priority)
        if not lower[potential].any():
            # No node has a pod to evict: the first thing SelectVictimsOnNode finds on each.
            names = map(self.table.names.__getitem__, potential)
            return [], dict.fromkeys(names, _NO_VICTIMS)
        budgets = _Budgets(self.pod_disruption_budgets)
        order = potential[offset:] + potential[:offset]
        batched = per_node_filters_only(self.profile, state)
        by_requests = _RequestsOnly.prepare(self, state, pod, order) if batched else None
        if by_requests is not None:
            hopeless = by_requests.hopeless
            names = map(self.table.names.__getitem__, hopeless)
            statuses.update(zip(names, hopeless.values(), strict=True))
            order = [i for i in order if i not in hopeless]
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        start = 0
        while start < len(order):
            # A batch of as many nodes as candidates are still wanted: usually the last one.
            wanted = count - len(non_violating) - len(violating)
            size = max(wanted, _MIN_BATCH) if batched else 1
            rows = order[start : start + size]
            start += size
            if by_requests is not None:
                simple = [i for i in rows if i in by_requests.room]
                found = dict(zip(simple, by_requests.select_victims(simple, budgets), strict=True))
                rest = [i for i in rows if i not in by_requests.room]
                outcomes_of_rest = self._select_victims_batch(state, pod, rest, budgets, lower)
                found.update(zip(rest, outcomes_of_rest, strict=True))
                outcomes = [found[i] for i in rows]
            elif batched:
                outcomes = self._select_victims_batch(state, pod, rows, budgets, lower)
            else:
                outcomes = [self._select_victims(state.clone(), pod, rows[0], budgets, lower)]
            for i, (victims, violations, status) in zip(rows, outcomes, strict=True):
                name = self.table.names[i]
                if status.is_success() and victims:
                    group = violating if violations else non_violating
                    if len(group) < count:
                        group.append(Candidate(name, victims, violations))
                    if non_violating and len(non_violating) + len(violating) >= count:
                        return non_violating + violating, statuses
                    continue
                if status.is_success():
                    status = error(f'expected at least one victim pod on node "{name}"')
                statuses[name] = status
        return non_violating + violating, statuses

    def _select_victims(
        self, state: CycleState, pod: PodInfo, i: int, budgets: _Budgets, lower: np.ndarray
    ) -> tuple[tuple[PodInfo, ...], int, Status]:
        """SelectVictimsOnNode on node row `i`: the fewest victims, highest priority first,
        and how many of them violate a PodDisruptionBudget. `lower`: each row's count of pods
        of lower priority than `pod`'s."""
        table, profile = self.table, self.profile
        potential = _lower_priority_pods(table, i, pod, lower)
        if not potential:
            return (), 0, unresolvable(NO_VICTIMS)
        removed: dict[str, PodInfo] = {}
        try:
            for p in potential:
                removed[p.key] = p
                status = remove_pod(profile, state, pod, table, i, p)
                if not status.is_success():
                    return (), 0, error(status.message)
            status = run_filter_with_nominated_pods(profile, self.nominator, state, pod, table, i)
            if not status.is_success():
                return (), 0, status
            potential.sort(key=_importance)
            violating, non_violating = budgets.split(potential)
            victims: list[PodInfo] = []
            num_violating = 0
            for group in (violating, non_violating):
                for p in group:
                    del removed[p.key]
                    status = add_pod(profile, state, pod, table, i, p)
                    if status.is_success():
                        status = run_filter_with_nominated_pods(
                            profile, self.nominator, state, pod, table, i, explain=False
                        )
                    if status.is_success():
                        continue  # reprieved
                    if status.code == Code.ERROR:
                        return (), 0, status
                    removed[p.key] = p
                    status = remove_pod(profile, state, pod, table, i, p)
                    if not status.is_success():
                        return (), 0, error(status.message)
                    victims.append(p)
                    num_violating += group is violating
            if violating and non_violating:
                victims.sort(key=_importance)
            return tuple(victims), num_violating, SUCCESS
        finally:
            for p in removed.values():
                table.add_pod(p, table.names[i])

    def _select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        rows: list[int],
        budgets: _Budgets,
        lower: np.ndarray,
    ) -> list[tuple[tuple[PodInfo, ...], int, Status]]:
        """SelectVictimsOnNode on many node rows at once, when every Filter that runs judges a
        node by that node alone (PER_NODE_FILTERS): the same victims as node by node, each
        node reprieving its pods in its own order, one pod per node per round, each round
        judged by one vectorised Filter run. PER_NODE_FILTERS only find a node fuller with more
        pods, so passing with the nominated pods added also passes without them."""
        table = self.table
        outcomes: list[tuple[tuple[PodInfo, ...], int, Status] | None] = [None] * len(rows)
        removed: list[dict[str, PodInfo]] = [{} for _ in rows]
        orders: list[list[PodInfo]] = [[] for _ in rows]
        num_violating_first = [0] * len(rows)
        reserved: list[tuple[str, PodInfo]] = []
        try:
            for k, i in enumerate(rows):
                name = table.names[i]
                potential = _lower_priority_pods(table, i, pod, lower)
                if not potential:
                    outcomes[k] = ((), 0, unresolvable(NO_VICTIMS))
                    continue
                for p in pods_to_reserve_for(self.nominator, pod, name):
                    table.add_pod(p, name)
                    reserved.append((name, p))
                for p in potential:
                    table.remove_pod(p.key, name)
                    removed[k][p.key] = p
                potential.sort(key=_importance)
                violating, non_violating = budgets.split(potential)
                orders[k] = violating + non_violating
                num_violating_first[k] = len(violating)
            live = [k for k, outcome in enumerate(outcomes) if outcome is None]
            fits = filter_rows(self.profile, state, pod, table, [rows[k] for k in live])
            unfit = [k for k in live if not fits[rows[k]]]
            unfit_rows = [rows[k] for k in unfit]
            statuses = filter_statuses(self.profile, state, pod, table, unfit_rows)
            for k, status in zip(unfit, statuses, strict=True):
                outcomes[k] = ((), 0, status)
            live = [k for k in live if outcomes[k] is None]
            victims: dict[int, list[PodInfo]] = {k: [] for k in live}
            violations = dict.fromkeys(live, 0)
            for r in range(max((len(orders[k]) for k in live), default=0)):
                this_round = [k for k in live if r < len(orders[k])]
                for k in this_round:
                    p = orders[k][r]
                    table.add_pod(p, table.names[rows[k]])
                    del removed[k][p.key]
                fits = filter_rows(self.profile, state, pod, table, [rows[k] for k in this_round])
                for k in this_round:
                    if fits[rows[k]]:
                        continue  # reprieved
                    p = orders[k][r]
                    table.remove_pod(p.key, table.names[rows[k]])
                    removed[k][p.key] = p
                    victims[k].append(p)
                    violations[k] += r < num_violating_first[k]
            for k in live:
                if 0 < num_violating_first[k] < len(orders[k]):
                    victims[k].sort(key=_importance)
                outcomes[k] = (tuple(victims[k]), violations[k], SUCCESS)
            return [outcome for outcome in outcomes if outcome is not None]
        finally:
            for k, i in enumerate(rows):
                for p in removed[k].values():
                    table.add_pod(p, table.names[i])
            for name, p in reserved:
                table.remove_pod(p.key, name)


@runtime_checkable
class _ResourcesFit(FilterPlugin, Protocol):
    """What preemption asks NodeResourcesFit besides Filter: what it checks for the pod, and
    its verdicts on rows given other requests than theirs."""

    def checked(self, state: CycleState) -> tuple[tuple[str, int, int], ...]: ...

    def node_statuses(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Sequence[int] | np.ndarray,
        requested: np.ndarray | None = None,
    ) -> Verdicts: ...


@dataclass
class _RequestsOnly:
    """SelectVictimsOnNode worked out by arithmetic on the rows where only NodeResourcesFit
    can tell: every Filter that runs is one of PER_NODE_FILTERS, the pod asks for no host
    port (so NodePorts passes), no pod is nominated to the node, and every Filter other than
    NodeResourcesFit passes (those ignore pods). There, evicting a pod frees its requests,
    and reprieving it takes them back, with no need to simulate either on the node table.

    `hopeless`: rows with no lower-priority pod, or too little room even with every one of
    them evicted, with the verdict the simulation would reach. `room`: the other rows, each
    with its line of `free`: what is left for the pod once every lower-priority pod is gone
    (the pod count, then each resource the pod requests)."""

    pod: PodInfo
    table: NodeTable
    checked: tuple[tuple[str, int, int], ...]
    hopeless: dict[int, Status]
    room: dict[int, int]
    free: np.ndarray

    @classmethod
    def prepare(
        cls, evaluator: Evaluator, state: CycleState, pod: PodInfo, rows: list[int]
    ) -> _RequestsOnly | None:
        profile, table = evaluator.profile, evaluator.table
        fit = next(
            (
                p
                for p in profile.filter
                if p.name == NODE_RESOURCES_FIT and isinstance(p, _ResourcesFit)
            ),
            None,
        )
        if fit is None or NODE_RESOURCES_FIT in state.skip_filter_plugins or pod.host_ports:
            return None
        # Thousands of rows: converted to an index array once, not by every lookup.
        index = np.asarray(rows, np.intp)
        found = (table.index.get(name) for name in evaluator.nominator.nodes())
        nominated = [i for i in found if i is not None]
        if nominated:
            index = index[~np.isin(index, nominated)]
        kept = table.requested_at_or_above(pod.priority)[index]
        allocatable = table.allocatable[index]
        lower = table.requested[index, PODS_COLUMN] - kept[:, PODS_COLUMN]
        verdicts = fit.node_statuses(state, pod, table, index, requested=kept)
        verdicts = verdicts.with_plugin(NODE_RESOURCES_FIT)
        without_fit = CycleState(
            state.data, state.skip_filter_plugins | {NODE_RESOURCES_FIT}, state.skip_score_plugins
        )
        others_pass = filter_rows(profile, without_fit, pod, table, index)[index]
        fits = verdicts.success()
        no_victims = lower == 0
        hopeless = dict.fromkeys(index[no_victims].tolist(), _NO_VICTIMS)
        too_small = np.flatnonzero(~no_victims & ~fits)
        distinct = verdicts.distinct
        too_small_rows = index[too_small].tolist()
        for i, j in zip(too_small_rows, verdicts.which[too_small].tolist(), strict=True):
            hopeless[i] = distinct[j]
        simple = np.flatnonzero(~no_victims & fits & others_pass)
        checked = tuple(fit.checked(state))
        columns = [PODS_COLUMN, *(column for _, column, _ in checked)]
        free = allocatable[simple][:, columns] - kept[simple][:, columns]
        room = dict(zip(index[simple].tolist(), range(len(simple)), strict=True))
        return cls(pod, table, checked, hopeless, room, free)

    def select_victims(
        self, rows: list[int], budgets: _Budgets
    ) -> list[tuple[tuple[PodInfo, ...], int, Status]]:
        """SelectVictimsOnNode on each of `rows`: every lower-priority pod evicted, then each
        reprieved in turn (those a budget protects first, each group most important first)
        while the pod still fits beside it."""
        outcomes = []
        wanted = [value for _, _, value in self.checked]
        for i in rows:
            potential = [p for p in self.table.pods[i].values() if p.priority < self.pod.priority]
            potential.sort(key=_importance)
            violating, non_violating = budgets.split(potential)
            pods_room, *free = self.free[self.room[i]].tolist()
            victims: list[PodInfo] = []
            num_violating = 0
            for group in (violating, non_violating):
                for p in group:
                    taken = [p.requests.get(name, 0) for name, _, _ in self.checked]
                    if pods_room > 1 and all(
                        f - t >= w for f, t, w in zip(free, taken, wanted, strict=True)
                    ):
                        pods_room -= 1
                        free = [f - t for f, t in zip(free, taken, strict=True)]
                        continue  # reprieved
                    victims.append(p)
                    num_violating += group is violating
            if violating and non_violating:
                victims.sort(key=_importance)
            outcomes.append((tuple(victims), num_violating, SUCCESS))
        return outcomes


def select_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """pickOneNodeForPreemption: each criterion keeps the best-scoring candidates; the first
    left wins."""
    criteria: tuple[Callable[[Candidate], float], ...] = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        # Shifted by 2^31 so that many pods of negative priority do not look cheaper than few.
        lambda c: -sum(p.priority + _MAX_INT32 + 1 for p in c.victims),
        lambda c: -len(c.victims),
        _earliest_start_of_highest_priority,
    )
    left = list(candidates)
    for score in criteria:
        if len(left) == 1:
            break
        scores = [score(c) for c in left]
        best = max(scores)
        left = [c for c, s in zip(left, scores, strict=True) if s == best]
    return left[0]


def num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """calculateNumCandidates: `percentage`% of the nodes, at least `absolute`, at most all."""
    return min(max(num_nodes * percentage // 100, absolute), num_nodes)


def terminating_by_preemption(pod: PodInfo) -> bool:
    """Being deleted, with the scheduler's DisruptionTarget condition."""
    if not pod.deleting:
        return False
    for condition in (pod.pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def start_time(pod: PodInfo) -> float:
    """GetPodStartTime: status.startTime; a pod not started counts as starting now, later than
    any that did."""
    text = (pod.pod.get("status") or {}).get("startTime")
    return parse_time(text) if text else math.inf


def _importance(pod: PodInfo) -> tuple[int, float, str]:
    """MoreImportantPod as a sort key, most important first: higher priority, then earlier
    start; kube-scheduler leaves ties in no particular order, Pinnace orders them by name so
    that a decision does not depend on how the pods happen to be stored."""
    return -pod.priority, start_time(pod), pod.key


def _earliest_start_of_highest_priority(candidate: Candidate) -> float:
    """GetEarliestPodStartTime over the victims of the highest priority; later scores higher."""
    top = candidate.victims[0].priority
    return min(start_time(p) for p in candidate.victims if p.priority == top)


class _Budgets:
    """The PodDisruptionBudgets as filterPodsWithPDBViolation reads them: namespace, selector,
    status.disruptionsAllowed and status.disruptedPods."""

    def __init__(self, budgets: Sequence[Mapping[str, Any]]) -> None:
        self._budgets: list[tuple[str, LabelSelector, int, Mapping[str, Any]]] = []
        for pdb in budgets:
            meta, spec, status = (pdb.get(k) or {} for k in ("metadata", "spec", "status"))
            try:
                selector = selector_from_dict(spec.get("selector"))
            except (SelectorError, ValueError):
                continue  # an invalid selector matches no pod
            if selector.empty:
                continue  # a nil or empty selector matches nothing here
            self._budgets.append(
                (
                    meta.get("namespace") or "default",
                    selector,
                    int(status.get("disruptionsAllowed") or 0),
                    status.get("disruptedPods") or {},
                )
            )

    def split(self, pods: Sequence[PodInfo]) -> tuple[list[PodInfo], list[PodInfo]]:
        """The pods whose eviction, in this order, would exceed a matching budget's allowed
        disruptions, and the others."""
        allowed = [budget[2] for budget in self._budgets]
        violating: list[PodInfo] = []
        non_violating: list[PodInfo] = []
        for pod in pods:
            violated = False
            if pod.labels:
                for k, (namespace, selector, _, disrupted) in enumerate(self._budgets):
                    if namespace != pod.namespace or not selector.matches(pod.labels):
                        continue
                    if pod.name in disrupted:
                        continue  # already being disrupted: the API server counted it
                    allowed[k] -= 1
                    violated |= allowed[k] < 0
            (violating if violated else non_violating).append(pod)
        return violating, non_violating


def _lower_priority_pods(
    table: NodeTable, i: int, pod: PodInfo, lower: np.ndarray
) -> list[PodInfo]:
    """The pods on row `i` of lower priority than `pod`, not looked for where `lower` (each
    row's count of them) says there are none."""
    if not lower[i]:
        return []
    return [p for p in table.pods[i].values() if p.priority < pod.priority]


def _fit_error(table: NodeTable, statuses: Mapping[str, Status]) -> str:
    """FitError.Error() over the dry run's statuses, every other node counted as one where
    preemption is not helpful."""
    not_helpful = unresolvable(NOT_HELPFUL)
    every = map(statuses.get, table.names, repeat(not_helpful))
    every_node = dict(zip(table.names, every, strict=True))
    return fit_error_message(len(table), Diagnosis(every_node))
