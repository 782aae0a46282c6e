"""The scheduler's spine: one pod per cycle, as kube-scheduler's schedule_one.go.

    pop -> PreFilter -> Filter -> (PostFilter) -> PreScore -> Score -> normalise -> select host
        -> assume -> Reserve -> bind (the API side runs PreBind before sending the Binding)

`schedule_one` runs a whole cycle. It is `begin_one` (up to Filter: a `Pending` choice among
the feasible nodes, unless the pod fits nowhere or goes to the node it was nominated to) then
`finish(pending, node)`: Score and selectHost choose the node unless one is given, then assume
and bind. Something outside the scheduler (the research environment, `pinnace.gym`) may choose
the node of a `Pending` cycle itself, among its feasible nodes.

The core is synchronous and talks to no API: an adapter feeds it informer events (`add_pod`,
`update_node`, ...) and turns each `ScheduleResult` into the Scheduled / FailedScheduling event
and the PodScheduled condition; the DefaultBinder's callback creates the Binding.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.clock import Clock
from pinnace.scheduler.cache import Cache
from pinnace.scheduler.events import (
    ADD,
    ASSIGNED_POD,
    ASSIGNED_POD_DELETE,
    DELETE,
    NODE,
    NODE_ADD,
    POD,
    UPDATE,
    UPDATE_POD_LABEL,
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    UPDATE_POD_TOLERATIONS,
    WILDCARD,
    ClusterEvent,
    node_update_events,
)
from pinnace.scheduler.failure_memo import Failure, FailureMemo
from pinnace.scheduler.framework import (
    ERROR_CODE,
    Code,
    CycleState,
    EnqueueExtensions,
    FrameworkUser,
    Plugin,
    Status,
    error,
    unschedulable,
)
from pinnace.scheduler.metrics import SchedulerMetrics
from pinnace.scheduler.nodetable import NodeTable, every_row
from pinnace.scheduler.nominator import (
    Nominator,
    filter_nodes_with_nominated_pods,
    run_filter_with_nominated_pods,
)
from pinnace.scheduler.plugin_metrics import (
    BIND,
    POST_FILTER,
    PRE_FILTER,
    PRE_SCORE,
    SCORE,
    FrameworkMetrics,
    PluginTimer,
    RecordingTimer,
)
from pinnace.scheduler.podinfo import PodInfo, pod_key
from pinnace.scheduler.profile import FilterTrace, Profile, Ranked
from pinnace.scheduler.queue import QueuedPodInfo, SchedulingQueue

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring (numFeasibleNodesToFind): all of a small
    cluster; else `percentage`% (0 means adaptive: 50% less 1% per 125 nodes, at least 5%),
    at least 100."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


_NOT_EVALUATED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


@dataclass
class Diagnosis:
    """Why a pod fits nowhere: each rejected node's status, or the PreFilter rejection (then
    the status of every node, `absent_nodes_status`)."""

    node_statuses: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status = _NOT_EVALUATED
    pre_filter_msg: str = ""
    post_filter_msg: str = ""
    unschedulable_plugins: set[str] = field(default_factory=set)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """FitError.Error(): "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had ...."
    with each reason counted over the nodes and the "count reason" strings sorted as text."""
    message = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        reasons: Counter[str] = Counter()
        # Counted by object first: many nodes share one status, and hashing by value is slow.
        every = diagnosis.node_statuses.values()
        statuses = dict(zip(map(id, every), every, strict=True))
        for status_id, nodes in Counter(map(id, every)).items():
            for reason in statuses[status_id].reasons:
                reasons[reason] += nodes
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        message += f" {diagnosis.post_filter_msg}."
    return message


@dataclass(slots=True)
class ScheduleResult:
    """What one scheduling cycle did with one pod. Read-only; not frozen, as a frozen
    dataclass sets each field through object.__setattr__ (three times the cost of making one,
    and every cycle makes one)."""

    pod: PodInfo
    node_name: str | None  # None: not placed
    status: Status
    message: str  # the event's message
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    nominated_node_name: str | None = None  # from PostFilter (preemption)
    attempts: int = 0  # scheduling attempts of the pod so far, this one included

    @property
    def reason(self) -> str:
        """The event reason: Scheduled or FailedScheduling."""
        return SCHEDULED if self.node_name else FAILED_SCHEDULING


@dataclass
class Pending:
    """A scheduling cycle stopped after Filter, its node not chosen yet.

    `feasible` marks the node table's rows that passed every Filter plugin (and the nominated
    pods' check): the nodes kube-scheduler would accept. `candidates` are the rows Score would
    choose among (percentageOfNodesToScore may leave feasible rows out). Rows are the table's
    when the cycle stopped: finish the cycle before the table changes, or name the node."""

    queued: QueuedPodInfo
    profile: Profile
    state: CycleState
    feasible: np.ndarray
    candidates: np.ndarray
    evaluated: int
    started: float

    @property
    def pod(self) -> PodInfo:
        return self.queued.pod


class _FitError(Exception):
    """The pod was not placed; `rejected_by` names the plugins that rejected it (none for an
    error, which is retried after a backoff instead of waiting for a cluster event)."""

    def __init__(
        self,
        status: Status,
        message: str,
        rejected_by: frozenset[str] = frozenset(),
        diagnosis: Diagnosis | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.rejected_by = rejected_by
        self.diagnosis = diagnosis  # set when plugins rejected the pod (a FitError)


class Scheduler:
    def __init__(
        self,
        profiles: Sequence[Profile],
        clock: Clock,
        *,
        seed: int = 0,
        percentage_of_nodes_to_score: int = 100,
        cache: Cache | None = None,
    ) -> None:
        if not profiles:
            raise ValueError("a scheduler needs at least one profile")
        self.profiles = {p.scheduler_name: p for p in profiles}
        self.cache = cache if cache is not None else Cache()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self._random = random.Random(seed)
        self._next_start_node_index = 0
        self.nominator = Nominator()
        for profile in profiles:
            for plugin in profile.plugins:
                if isinstance(plugin, FrameworkUser):
                    plugin.bind_framework(profile, self.nominator)
        first = profiles[0]
        plugin_events: dict[str, list[ClusterEvent]] = {}
        for profile in profiles:
            # Only plugins that can reject a pod say which events may undo that.
            for plugin in {*profile.pre_enqueue, *profile.pre_filter, *profile.filter}:
                plugin_events[plugin.name] = (
                    list(plugin.events_to_register())
                    if isinstance(plugin, EnqueueExtensions)
                    else [WILDCARD]
                )
        self.queue = SchedulingQueue(
            clock,
            first.queue_sort.sort_key,
            lambda pod: self.profiles[pod.scheduler_name].run_pre_enqueue(pod),
            plugin_events,
        )
        self.clock = clock
        self.framework_metrics = FrameworkMetrics(clock.now)
        self.metrics = SchedulerMetrics(self.queue, self.framework_metrics)
        self.failures: FailureMemo | None = None
        """Failed cycles remembered while the cluster is unchanged (`failure_memo`): set by
        whatever feeds the core when it calls `listers_changed` for every change the plugins'
        listers see."""
        self._listers_version = 0
        self._observed: list[tuple[str, Status]] | None = None

    @property
    def table(self) -> NodeTable:
        return self.cache.table

    def choices(self) -> tuple[Any, int]:
        """What the next cycles' choices depend on besides the cluster: the state of the
        tie-break stream and where the next search for feasible nodes starts. A what-if run
        saves it and gives it back (`restore_choices`) to try alternatives from one state."""
        return self._random.getstate(), self._next_start_node_index

    def restore_choices(self, saved: tuple[Any, int]) -> None:
        state, self._next_start_node_index = saved
        self._random.setstate(state)

    def listers_changed(self) -> None:
        """Something the plugins read besides the cache and the nominations changed (a
        namespace's labels, a claim, a budget): no remembered failure holds any more."""
        self._listers_version += 1

    def _as_of(self) -> tuple[int, ...]:
        return self.cache.version, self.nominator.version, self._listers_version

    # Informer events.
    def add_node(self, node: Mapping[str, Any]) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(NODE_ADD)

    def update_node(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.cache.update_node(new)
        for event in node_update_events(old, new):
            self.queue.move_all_to_active_or_backoff(event)

    def delete_node(self, name: str) -> None:
        self.cache.remove_node(name)
        self.queue.move_all_to_active_or_backoff(ClusterEvent(NODE, DELETE))

    def add_pod(self, pod: Mapping[str, Any]) -> None:
        info = PodInfo.from_pod(pod)
        if _terminal(pod):
            self.delete_pod(pod)  # a finished pod holds no resources
        elif info.node_name:
            self.nominator.delete(info.key)
            self.cache.add_pod(info)
            self.queue.move_all_to_active_or_backoff(ClusterEvent(ASSIGNED_POD, ADD))
        elif info.scheduler_name in self.profiles:
            self._update_nomination(info)
            self.queue.add(info)

    def update_pod(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        known = self.cache.pod(pod_key(new))
        info = PodInfo.from_pod(new) if known is None else known.updated(new)
        if _terminal(new):
            self.delete_pod(new)
        elif info.node_name:
            self.queue.delete(info.key)
            self.nominator.delete(info.key)
            self.cache.update_pod(info)
            self.queue.move_all_to_active_or_backoff(ClusterEvent(ASSIGNED_POD, UPDATE))
        elif info.scheduler_name in self.profiles:
            self._update_nomination(info)
            self.queue.update(info, _pending_pod_update_events(old, new))

    def delete_pod(self, pod: Mapping[str, Any]) -> None:
        info = PodInfo.from_pod(pod)
        self.queue.delete(info.key)
        self.nominator.delete(info.key)
        if self.cache.knows(info.key):
            self.cache.remove_pod(info.key)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE)

    def _update_nomination(self, pod: PodInfo) -> None:
        """A pending pod's status.nominatedNodeName; without one, a nomination made in memory
        stands (the API may not show it yet), kept with the newer pod."""
        node_name = (pod.pod.get("status") or {}).get(
            "nominatedNodeName"
        ) or self.nominator.node_of(pod.key)
        if node_name:
            self.nominator.add(pod, node_name)

    # Scheduling.
    def schedule_one(self) -> ScheduleResult | None:
        """Try the next pod in activeQ; None when there is none."""
        begun = self.begin_one()
        return self.finish(begun) if isinstance(begun, Pending) else begun

    def begin_one(self) -> Pending | ScheduleResult | None:
        """Run the next pod's cycle up to the choice of its node: a `Pending` cycle to
        `finish`, or the result of a cycle already over (the pod fits nowhere, or goes to the
        node it was nominated to); None when activeQ is empty."""
        while (queued := self.queue.pop()) is not None:
            pod = queued.pod
            if self.cache.knows(pod.key) or pod.deleting:
                self.queue.done(pod.key)  # skipPodSchedule: assumed, bound or being deleted
                continue
            started = self.clock.now()
            profile = self.profiles[pod.scheduler_name]
            timer = self.framework_metrics.timer()
            memo = self.failures
            if memo is not None and self.nominator.node_of(pod.key):
                memo = None  # a nominated pod's cycle reads its nomination too
            if memo is not None:
                if timer is not None:
                    timer = timer.recording()
                as_of = self._as_of()
                shape = None if memo.empty_as_of(as_of) else memo.shape(pod)
                failure = None if shape is None else memo.get(as_of, profile.scheduler_name, shape)
                if failure is not None and (timer is None or failure.plugin_runs is not None):
                    result = self._fail_again(queued, profile, failure, timer)
                    return self._account(queued, started, result)
            state = CycleState(timer=timer)
            self._observed = [] if memo is not None else None
            try:
                found = self._find_nodes(profile, state, pod)
            except _FitError as e:
                result = self._fit_error(queued, profile, state, e)
                if memo is not None and result.status.is_rejected():
                    self._remember(memo, profile, pod, result, e, timer)
                return self._account(queued, started, result)
            finally:
                self._observed = None
            if isinstance(found, str):
                result = self._assume(queued, profile, state, found, 1, 1)
                return self._account(queued, started, result)
            feasible, candidates = found
            return Pending(queued, profile, state, feasible, candidates, len(self.table), started)
        return None

    def finish(self, pending: Pending, node_name: str | None = None) -> ScheduleResult:
        """Finish a cycle `begin_one` stopped: on `node_name`, or on the node Score and
        selectHost choose. A node that is not one of the feasible ones fails the cycle as an
        error (the pod is retried after a backoff), as a failing Score plugin would."""
        queued, profile, state = pending.queued, pending.profile, pending.state
        candidates = pending.candidates
        if node_name is not None:
            i = self.table.index.get(node_name)
            if i is None or i >= len(pending.feasible) or not pending.feasible[i]:
                message = f"node {node_name!r} is not among the feasible nodes of {queued.pod.key}"
                result = self._fit_error(queued, profile, state, _FitError(error(message), message))
                return self._account(queued, pending.started, result)
        else:
            try:
                node_name = self._choose(profile, state, queued.pod, candidates)
            except _FitError as e:
                result = self._fit_error(queued, profile, state, e)
                return self._account(queued, pending.started, result)
        result = self._assume(queued, profile, state, node_name, pending.evaluated, len(candidates))
        return self._account(queued, pending.started, result)

    def schedule_pending(self) -> list[ScheduleResult]:
        """Run cycles until activeQ is empty."""
        results = []
        while (result := self.schedule_one()) is not None:
            results.append(result)
        return results

    def _account(
        self, queued: QueuedPodInfo, started: float, result: ScheduleResult
    ) -> ScheduleResult:
        """Count the cycle in the metrics."""
        status = result.status
        outcome = (
            "scheduled"
            if result.node_name
            else "unschedulable"
            if status.is_rejected()
            else "error"
        )
        now = self.clock.now()
        self.metrics.attempted(outcome, result.pod.scheduler_name, now - started)
        if result.node_name and queued.initial_attempt_timestamp is not None:
            self.metrics.scheduled(queued.attempts, now - queued.initial_attempt_timestamp)
        return result

    def _fit_error(
        self, queued: QueuedPodInfo, profile: Profile, state: CycleState, e: _FitError
    ) -> ScheduleResult:
        """The pod fits nowhere (or the cycle failed): PostFilter may nominate a node."""
        pod = queued.pod
        nominated, message = None, e.message
        if e.diagnosis is not None and profile.post_filter:
            self.metrics.preemption_attempts += 1
            started = self.clock.now()
            nominated, status = profile.run_post_filter(state, pod, self.table, e.diagnosis)
            self._observe(POST_FILTER, status, profile, started)
            e.diagnosis.post_filter_msg = status.message
            message = fit_error_message(len(self.table), e.diagnosis)
            if nominated is not None:  # "" clears the nomination
                self.nominator.add(pod, nominated)
        self.queue.add_unschedulable(queued, e.rejected_by)
        return ScheduleResult(
            pod, None, e.status, message, len(self.table), nominated_node_name=nominated
        )

    def _remember(
        self,
        memo: FailureMemo,
        profile: Profile,
        pod: PodInfo,
        result: ScheduleResult,
        e: _FitError,
        timer: PluginTimer | None,
    ) -> None:
        """Remember a failed cycle that changed nothing, for the pods of its shape."""
        assert self._observed is not None
        if result.nominated_node_name:
            return
        replays = profile.post_filter_replays() if e.diagnosis is not None else ()
        shape = memo.shape(pod) if replays is not None else None
        if replays is None or shape is None:
            return
        failure = Failure(
            result.status,
            result.message,
            e.rejected_by,
            result.nominated_node_name,
            tuple(self._observed),
            e.diagnosis is not None and bool(profile.post_filter),
            replays,
            tuple(timer.runs) if isinstance(timer, RecordingTimer) else None,
        )
        memo.put(self._as_of(), profile.scheduler_name, shape, failure)

    def _fail_again(
        self,
        queued: QueuedPodInfo,
        profile: Profile,
        failure: Failure,
        timer: RecordingTimer | None,
    ) -> ScheduleResult:
        """A remembered failure, with what its cycle did besides; `timer`: the sampling one,
        when this cycle samples the plugins' durations."""
        pod = queued.pod
        if timer is not None and failure.plugin_runs is not None:
            timer.observe_again(failure.plugin_runs)
        started = self.clock.now()
        for point, status in failure.observed:
            self._observe(point, status, profile, started)
        if failure.preemption_attempted:
            self.metrics.preemption_attempts += 1
        for replay in failure.replays:
            replay()
        if failure.nominated is not None:
            self.nominator.add(pod, failure.nominated)
        self.queue.add_unschedulable(queued, failure.rejected_by)
        return ScheduleResult(
            pod,
            None,
            failure.status,
            failure.message,
            len(self.table),
            nominated_node_name=failure.nominated,
        )

    def _assume(
        self,
        queued: QueuedPodInfo,
        profile: Profile,
        state: CycleState,
        node_name: str,
        evaluated: int,
        feasible: int,
    ) -> ScheduleResult:
        """Assume the pod on the node and run the Bind plugins."""
        pod = queued.pod
        self.cache.assume(pod, node_name)
        self.nominator.delete(pod.key)
        status = profile.run_reserve(state, pod, node_name)
        if not status.is_success():
            self.cache.forget(pod)
            self.queue.add_unschedulable(queued, {status.plugin} if status.is_rejected() else ())
            message = f'running Reserve plugin "{status.plugin}": {status.message}'
            return ScheduleResult(pod, None, status, message, evaluated, feasible)
        started = self.clock.now()
        status = profile.run_bind(state, pod, node_name)
        self._observe(BIND, status, profile, started)
        if not status.is_success():
            profile.run_unreserve(state, pod, node_name)
            self.cache.forget(pod)
            self.queue.add_unschedulable(queued, ())
            return ScheduleResult(pod, None, status, status.message, evaluated, feasible)
        self.queue.done(pod.key)
        message = f"Successfully assigned {pod.key} to {node_name}"
        return ScheduleResult(
            pod, node_name, status, message, evaluated, feasible, attempts=queued.attempts
        )

    def _find_nodes(
        self, profile: Profile, state: CycleState, pod: PodInfo
    ) -> str | tuple[np.ndarray, np.ndarray]:
        """schedulePod up to Filter: the node the pod was nominated to if it fits there, else
        the feasible rows and those of them to score (raises _FitError when none is)."""
        table = self.table
        n = len(table)
        if n == 0:
            raise _FitError(error(NO_NODES_AVAILABLE), NO_NODES_AVAILABLE)
        started = self.clock.now()
        status = profile.run_pre_filter(state, pod, table)
        self._observe(PRE_FILTER, status, profile, started)
        if status.code == ERROR_CODE:
            raise _FitError(status, status.message)
        if not status.is_success():
            diagnosis = Diagnosis(pre_filter_msg=status.message, absent_nodes_status=status)
            diagnosis.unschedulable_plugins.add(status.plugin)
            message = fit_error_message(n, diagnosis)
            raise _FitError(status, message, frozenset({status.plugin}), diagnosis)
        nominated = self._nominated_node_if_fits(profile, state, pod)
        if nominated is not None:
            return nominated
        feasible, trace = profile.run_filter(state, pod, table)
        passed = feasible
        rejected_with_nominated = filter_nodes_with_nominated_pods(
            profile, self.nominator, state, pod, table, passed, among_feasible=True, explain=False
        )
        if rejected_with_nominated:
            feasible = passed.copy()
            feasible[list(rejected_with_nominated)] = False
        candidates = self._nodes_to_score(profile, feasible, n)
        if len(candidates) == 0:
            explained: dict[int, Status] = {}
            for among_feasible in (True, False):
                explained |= filter_nodes_with_nominated_pods(
                    profile, self.nominator, state, pod, table, passed, among_feasible
                )
            self._raise_fit_error(profile, state, pod, trace, explained)
        return feasible, candidates

    def _choose(
        self, profile: Profile, state: CycleState, pod: PodInfo, candidates: np.ndarray
    ) -> str:
        """schedulePod after Filter: the one candidate, or the best scored (PreScore, Score,
        selectHost)."""
        table = self.table
        if len(candidates) == 1:
            return table.names[int(candidates[0])]
        started = self.clock.now()
        status = profile.run_pre_score(state, pod, table, candidates)
        started = self._observe(PRE_SCORE, status, profile, started)  # Score's start too
        if not status.is_success():
            raise _FitError(status, status.message)
        ranked, status = profile.rank(state, pod, table, candidates)
        self._observe(SCORE, status, profile, started)
        if ranked is None:
            raise _FitError(status, status.message)
        return table.names[self._select_host(candidates, ranked)]

    def _observe(self, point: str, status: Status, profile: Profile, started: float) -> float:
        """Observe the run of an extension point begun at `started`; the answer: when it
        ended."""
        ended = self.framework_metrics.extension_point(
            point, status, profile.scheduler_name, started
        )
        if self._observed is not None:
            self._observed.append((point, status))
        return ended

    def _nominated_node_if_fits(
        self, profile: Profile, state: CycleState, pod: PodInfo
    ) -> str | None:
        """evaluateNominatedNode: a pod nominated to a node (it preempted there) goes there if
        it now fits, without looking at other nodes."""
        node_name = self.nominator.node_of(pod.key)
        i = self.table.index.get(node_name) if node_name else None
        if i is None:
            return None
        status = run_filter_with_nominated_pods(
            profile, self.nominator, state, pod, self.table, i, explain=False
        )
        return node_name if status.is_success() else None

    def _nodes_to_score(self, profile: Profile, feasible: np.ndarray, n: int) -> np.ndarray:
        """The feasible nodes to score: all of them, or with percentageOfNodesToScore below
        100 the first ones found going round from where the last cycle stopped."""
        percentage = profile.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        wanted = num_feasible_nodes_to_find(percentage, n)
        if wanted >= n and np.count_nonzero(feasible) == n:
            return every_row(n)
        found = feasible.nonzero()[0]
        if wanted >= n:
            return found
        start = self._next_start_node_index
        # `found` is in row order: going round from `start` visits its rows from `start` on,
        # then those before it (no sort needed).
        k = int(np.searchsorted(found, start))
        if len(found) - k >= wanted:
            chosen = found[k : k + wanted]
        else:
            chosen = np.concatenate((found[k:], found[: min(k, wanted - (len(found) - k))]))
        processed = (int(chosen[-1]) - start) % n + 1 if len(chosen) == wanted else n
        self._next_start_node_index = (start + processed) % n
        return chosen

    def _select_host(self, candidates: np.ndarray, ranked: Ranked) -> int:
        """selectHost: the highest total score, ties broken uniformly at random (the seeded
        equivalent of kube-scheduler's reservoir sampling)."""
        best = ranked.top()
        pick = best[self._random.randrange(len(best))] if len(best) > 1 else best[0]
        return int(candidates[pick])

    def _raise_fit_error(
        self,
        profile: Profile,
        state: CycleState,
        pod: PodInfo,
        trace: FilterTrace,
        rejected_with_nominated: Mapping[int, Status],
    ) -> None:
        table = self.table
        diagnosis = Diagnosis()
        statuses = profile.node_statuses(state, pod, table, trace, range(len(table)))
        for i, status in rejected_with_nominated.items():
            statuses[i] = status
        diagnosis.node_statuses = dict(zip(table.names, statuses, strict=True))
        plugins = {s.plugin for s in dict(zip(map(id, statuses), statuses, strict=True)).values()}
        diagnosis.unschedulable_plugins.update(plugins - {""})
        message = fit_error_message(len(table), diagnosis)
        rejected_by = frozenset(diagnosis.unschedulable_plugins)
        raise _FitError(unschedulable(message), message, rejected_by, diagnosis)


def all_plugins(core: Scheduler) -> list[Plugin]:
    """The plugins of every profile, each once: those with an API side get their hooks from
    whatever runs the core (the scheduler service, a plan, the research environment)."""
    found = {id(plugin): plugin for p in core.profiles.values() for plugin in p.plugins}
    return list(found.values())


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _pending_pod_update_events(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[ClusterEvent]:
    """What changed in a pending pod that may let it schedule now."""
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    events = []
    if old_spec.get("tolerations") != new_spec.get("tolerations"):
        events.append(ClusterEvent(POD, UPDATE_POD_TOLERATIONS))
    if old_spec.get("schedulingGates") and not new_spec.get("schedulingGates"):
        events.append(ClusterEvent(POD, UPDATE_POD_SCHEDULING_GATES_ELIMINATED))
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        events.append(ClusterEvent(POD, UPDATE_POD_LABEL))
    return events
