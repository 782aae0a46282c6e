"""A scheduling profile: the plugins serving each extension point, in order, with score weights,
and the framework's way of running them (kube-scheduler's frameworkImpl, vectorised)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.scheduler.failure_memo import Replay, ReplaysPostFilter
from pinnace.scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    SKIP_CODE,
    SUCCESS,
    SUCCESS_CODE,
    UNRESOLVABLE_CODE,
    UNSCHEDULABLE_CODE,
    BindPlugin,
    Code,
    CycleState,
    FilterPlugin,
    NodeStatusesPlugin,
    Plugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    RowScores,
    RowScoresPlugin,
    ScoreExtensions,
    ScoreFailed,
    ScorePlugin,
    Status,
    UniformScorePlugin,
    Verdicts,
    error,
    extension_points,
)
from pinnace.scheduler.nodetable import NodeTable, RowCache, Rows, everywhere, gather
from pinnace.scheduler.plugin_metrics import (
    BIND,
    FILTER,
    POST_FILTER,
    PRE_FILTER,
    PRE_SCORE,
    SCORE,
)
from pinnace.scheduler.podinfo import DEFAULT_SCHEDULER_NAME, PodInfo


@dataclass(slots=True)
class FilterTrace:
    """Which plugin rejected which nodes in one Filter run: the feasible mask after each.
    Read-only (not frozen, as `ScheduleResult`: every cycle makes one)."""

    plugins: tuple[FilterPlugin, ...]
    masks: tuple[np.ndarray, ...]

    def rejecting_plugin(self, i: int) -> FilterPlugin | None:
        for plugin, mask in zip(self.plugins, self.masks, strict=True):
            if not mask[i]:
                return plugin
        return None


class Profile:
    def __init__(
        self,
        plugins: Sequence[Plugin],
        weights: Mapping[str, int] | None = None,
        *,
        scheduler_name: str = DEFAULT_SCHEDULER_NAME,
        percentage_of_nodes_to_score: int | None = None,
        points: Mapping[str, Set[str]] | None = None,
    ) -> None:
        """`points`: by plugin name, the extension points a plugin runs at when the
        configuration disabled some it serves (it runs at all it serves otherwise)."""
        weights = weights or {}
        self.scheduler_name = scheduler_name
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.plugins = tuple(plugins)
        only = points or {}
        served: list[tuple[Plugin, set[str]]] = []
        for plugin in self.plugins:
            serves = extension_points(plugin)
            if plugin.name in only:
                serves &= only[plugin.name]
            served.append((plugin, serves))

        def serving(point: str) -> list[Plugin]:
            return [plugin for plugin, points in served if point in points]

        # extension_points() checked each plugin has the methods of the points it serves: the
        # isinstance tests below only tell the type checker.
        self.pre_enqueue = tuple(
            p for p in serving("pre_enqueue") if isinstance(p, PreEnqueuePlugin)
        )
        sorts = [p for p in serving("queue_sort") if isinstance(p, QueueSortPlugin)]
        if len(sorts) != 1:
            raise ValueError(f"a profile needs exactly one QueueSort plugin, has {len(sorts)}")
        self.queue_sort = sorts[0]
        self.pre_filter = tuple(p for p in serving("pre_filter") if isinstance(p, PreFilterPlugin))
        self.pre_filter_extensions = tuple(
            p for p in self.pre_filter if isinstance(p, PreFilterExtensions)
        )
        self.filter = tuple(p for p in serving("filter") if isinstance(p, FilterPlugin))
        # By id: an isinstance test against a Protocol costs microseconds, every failed cycle.
        self._explain_at_once = {id(p): p for p in self.filter if isinstance(p, NodeStatusesPlugin)}
        self._post_filter_ran: tuple[PostFilterPlugin, ...] = ()
        self.post_filter = tuple(
            p for p in serving("post_filter") if isinstance(p, PostFilterPlugin)
        )
        self.pre_score = tuple(p for p in serving("pre_score") if isinstance(p, PreScorePlugin))
        self.score = tuple(
            (p, int(weights.get(p.name, 1))) for p in serving("score") if isinstance(p, ScorePlugin)
        )
        self._scorers = tuple(
            (
                p,
                weight,
                p.uniform_score if isinstance(p, UniformScorePlugin) else None,
                p.row_scores if isinstance(p, RowScoresPlugin) else None,
                p.normalize_score if isinstance(p, ScoreExtensions) else None,
            )
            for p, weight in self.score
        )
        self._row_totals = RowCache()
        # The last `_summed_row_scores`' plugins' row scores, and its key and functions: pods
        # of one shape get the very same row scores, and so the same sum.
        self._last_summed: tuple[list[tuple[str, int, RowScores]], Any] = ([], None)
        self.reserve = tuple(p for p in serving("reserve") if isinstance(p, ReservePlugin))
        self.pre_bind = tuple(p for p in serving("pre_bind") if isinstance(p, PreBindPlugin))
        self.bind = tuple(p for p in serving("bind") if isinstance(p, BindPlugin))
        if not self.bind:
            raise ValueError("a profile needs at least one Bind plugin")

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        timer = state.timer
        for plugin in self.pre_filter:
            started = timer.now() if timer else 0.0
            status = plugin.pre_filter(state, pod, table)
            if timer:
                timer.observe(plugin.name, PRE_FILTER, status, started)
            if status.code == SKIP_CODE:
                state.skip_filter_plugins.add(plugin.name)
            elif status.code != SUCCESS_CODE:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, FilterTrace]:
        """The Filter verdicts on every node, or on `rows` only (False elsewhere)."""
        if rows is None:
            feasible = everywhere(len(table))  # plugins return new arrays, never write it
        else:
            feasible = np.zeros(len(table), bool)
            feasible[np.asarray(rows, np.intp)] = True
        ran: list[FilterPlugin] = []
        masks: list[np.ndarray] = []
        timer = state.timer
        for plugin in self.filter:
            if plugin.name in state.skip_filter_plugins:
                continue
            started = timer.now() if timer else 0.0
            before = feasible
            feasible = plugin.filter(state, pod, table, feasible)
            if timer:
                rejected = np.count_nonzero(before) != np.count_nonzero(feasible)
                code = UNSCHEDULABLE_CODE if rejected else SUCCESS_CODE
                timer.observe(plugin.name, FILTER, code, started)
            ran.append(plugin)
            masks.append(feasible)
        return feasible, FilterTrace(tuple(ran), tuple(masks))

    def node_status(
        self, state: CycleState, pod: PodInfo, table: NodeTable, trace: FilterTrace, i: int
    ) -> Status:
        """Why node `i` was filtered out, from the first plugin that rejected it."""
        plugin = trace.rejecting_plugin(i)
        if plugin is None:
            return SUCCESS
        return plugin.node_status(state, pod, table, i).with_plugin(plugin.name)

    def node_statuses(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        trace: FilterTrace,
        rows: Sequence[int],
    ) -> list[Status]:
        """node_status of many rows: each plugin explains the rows it rejected first, all at
        once where it can (`node_statuses(state, pod, table, rows) -> Verdicts`), else one by
        one."""
        if not trace.plugins or not len(rows):
            return [SUCCESS] * len(rows)
        index = np.asarray(rows, np.intp)
        passed = np.stack([mask[index] for mask in trace.masks])
        first = np.where(passed.all(axis=0), -1, np.argmin(passed, axis=0))
        statuses = np.full(len(rows), SUCCESS, object)
        for p, plugin in enumerate(trace.plugins):
            positions = np.flatnonzero(first == p)
            if not len(positions):
                continue
            mine = index[positions].tolist()
            at_once = self._explain_at_once.get(id(plugin))
            if at_once is not None:
                verdicts = at_once.node_statuses(state, pod, table, mine)
            else:
                verdicts = Verdicts.of([plugin.node_status(state, pod, table, i) for i in mine])
            named = verdicts.with_plugin(plugin.name)
            distinct = np.empty(len(named.distinct), object)
            distinct[:] = named.distinct
            statuses[positions] = distinct[named.which]
        return statuses.tolist()

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Any
    ) -> tuple[str | None, Status]:
        """RunPostFilterPlugins: the first plugin to succeed (or to find the pod unresolvable)
        decides; otherwise every plugin's reasons, attributed to the first that failed."""
        reasons: list[str] = []
        rejector = ""
        result = None  # a rejecting plugin may still clear the nomination ("")
        timer = state.timer
        self._post_filter_ran = ()
        for plugin in self.post_filter:
            started = timer.now() if timer else 0.0
            self._post_filter_ran += (plugin,)
            nominated, status = plugin.post_filter(state, pod, table, diagnosis)
            if timer:
                timer.observe(plugin.name, POST_FILTER, status, started)
            if status.is_success():
                return nominated, status
            if status.code == UNRESOLVABLE_CODE:
                return nominated, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, error(status.message).with_plugin(plugin.name)
            if nominated is not None:
                result = nominated
            reasons += status.reasons
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), rejector)

    def post_filter_replays(self) -> tuple[Replay, ...] | None:
        """What the PostFilter plugins of the last `run_post_filter` did besides deciding, to
        do again (`failure_memo`); None when one of them cannot say, or preempted."""
        replays = []
        for plugin in self._post_filter_ran:
            replay = plugin.replay_last() if isinstance(plugin, ReplaysPostFilter) else None
            if replay is None:
                return None
            replays.append(replay)
        return tuple(replays)

    def run_pre_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> Status:
        timer = state.timer
        for plugin in self.pre_score:
            started = timer.now() if timer else 0.0
            status = plugin.pre_score(state, pod, table, nodes)
            if timer:
                timer.observe(plugin.name, PRE_SCORE, status, started)
            if status.code == SKIP_CODE:
                state.skip_score_plugins.add(plugin.name)
            elif status.code != SUCCESS_CODE:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> tuple[np.ndarray | None, Status]:
        """The weighted sum of every Score plugin's normalised scores over `nodes`."""
        ranked, status = self.rank(state, pod, table, nodes)
        return (None if ranked is None else ranked.totals()), status

    def rank(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> tuple[Ranked | None, Status]:
        """`run_score`, as the totals and the positions among `nodes` of the highest."""
        total = None
        uniform = 0  # the weighted scores plugins give every node alike
        by_row: list[tuple[str, int, RowScores]] = []
        skipped = state.skip_score_plugins
        timer = state.timer
        for plugin, weight, same_everywhere, row_scores, normalize in self._scorers:
            if skipped and plugin.name in skipped:
                continue
            started = timer.now() if timer else 0.0
            if same_everywhere is not None:
                score = same_everywhere(state, pod, table)
                if score is not None:
                    if timer:
                        timer.observe(plugin.name, SCORE, SUCCESS, started)
                    if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                        return None, _invalid_score(plugin.name, score)
                    uniform += score * weight
                    continue
            if row_scores is not None:
                rows = row_scores(state, pod, table)
                if rows is not None:
                    if timer:  # the rows' scores are computed together, below
                        timer.observe(plugin.name, SCORE, SUCCESS, started)
                    by_row.append((plugin.name, weight, rows))
                    continue
            try:
                scores = plugin.score(state, pod, table, nodes)
            except ScoreFailed as e:
                if timer:
                    timer.observe(plugin.name, SCORE, Code.ERROR, started)
                return None, e.cycle_status(plugin.name)
            if normalize is not None:
                scores = normalize(state, pod, scores)
            if timer:
                timer.observe(plugin.name, SCORE, SUCCESS, started)
            scores = np.asarray(scores, np.int64)
            invalid = _invalid_scores(plugin.name, scores)
            if invalid is not None:
                return None, invalid
            if total is None:
                total = scores * weight if weight != 1 else scores.copy()
            elif weight == 1:
                np.add(total, scores, out=total)
            else:
                total += scores * weight
        if by_row:
            try:
                every, key = self._summed_row_scores(table, by_row)
            except _InvalidScores as e:
                return None, e.status
            summed = gather(every, nodes)
            if total is None:
                # `summed` may be the cache's vector itself: then so are its highest rows.
                top = self._row_totals.top(key) if summed is every else None
                return Ranked(summed, uniform, top), SUCCESS
            np.add(total, summed, out=total)
        if total is None:
            return Ranked(np.full(len(nodes), uniform, np.int64), 0), SUCCESS
        return Ranked(total, uniform), SUCCESS

    def _summed_row_scores(
        self, table: NodeTable, by_row: list[tuple[str, int, RowScores]]
    ) -> tuple[np.ndarray, Hashable]:
        """The weighted sum of row-wise scores over every row (shared, not to be changed), and
        its key in `_row_totals`."""
        last_by_row, made = self._last_summed
        if by_row != last_by_row:
            made = self._row_sum(by_row)
            self._last_summed = by_row, made
        key, compute, compute_one = made
        return self._row_totals.get(table, key, compute, compute_one), key

    @staticmethod
    def _row_sum(
        by_row: list[tuple[str, int, RowScores]],
    ) -> tuple[Hashable, Callable[[Rows], np.ndarray], Callable[[int], int]]:
        """The key in `_row_totals` of the weighted sum of `by_row`'s scores, and the
        functions that work it out on many rows and on one."""

        def compute(rows: Rows) -> np.ndarray:
            total = None
            for name, weight, scores in by_row:
                values = np.asarray(scores.compute(rows), np.int64)
                invalid = _invalid_scores(name, values)
                if invalid is not None:
                    raise _InvalidScores(invalid)
                weighted = values * weight if weight != 1 else values
                total = weighted.copy() if total is None else np.add(total, weighted, out=total)
            assert total is not None  # by_row is never empty
            return total

        def compute_one(i: int) -> int:
            total = 0
            for name, weight, scores in by_row:
                value = scores.compute_one(i)
                if not MIN_NODE_SCORE <= value <= MAX_NODE_SCORE:
                    raise _InvalidScores(_invalid_score(name, value))
                total += value * weight
            return total

        key = tuple((name, weight, scores.key) for name, weight, scores in by_row)
        return key, compute, compute_one

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """RunReservePluginsReserve; a failure unreserves every Reserve plugin."""
        for plugin in self.reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success():
                self.run_unreserve(state, pod, node_name)
                return status.with_plugin(plugin.name)
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """RunReservePluginsUnreserve: in the reverse order."""
        for plugin in reversed(self.reserve):
            plugin.unreserve(state, pod, node_name)

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        timer = state.timer
        for plugin in self.bind:
            started = timer.now() if timer else 0.0
            status = plugin.bind(state, pod, node_name)
            if timer:
                timer.observe(plugin.name, BIND, status, started)
            if not status.is_skip():
                return status.with_plugin(plugin.name)
        return error(f"no bind plugin bound pod {pod.key}")


@dataclass(slots=True)
class Ranked:
    """Score's outcome over the nodes scored: each one's total is its `scores` entry (which
    may be a cache's vector: read only) plus `offset`; `known_top`, when given, holds the
    positions of the highest in order. Read it before the node table changes. Read-only (not
    frozen, as `ScheduleResult`: every cycle makes one)."""

    scores: np.ndarray
    offset: int
    known_top: Sequence[int] | None = None

    def totals(self) -> np.ndarray:
        return self.scores + self.offset  # a new array

    def top(self) -> Sequence[int]:
        """The positions of the highest totals, in order."""
        if self.known_top is not None:
            return self.known_top
        scores = self.scores
        return (scores == np.maximum.reduce(scores)).nonzero()[0]


class _InvalidScores(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def _invalid_scores(plugin: str, scores: np.ndarray) -> Status | None:
    # Seen unsigned, a negative score is huge: one reduction checks both bounds.
    if len(scores) and scores.view(np.uint64).max() > MAX_NODE_SCORE:
        return _invalid_score(
            plugin, int(scores.max() if scores.max() > MAX_NODE_SCORE else scores.min())
        )
    return None


def _invalid_score(plugin: str, score: int) -> Status:
    return error(
        f"plugin {plugin!r} returns an invalid score {score}, it should in the range of "
        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    ).with_plugin(plugin)
