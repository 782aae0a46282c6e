"""The scheduling framework: statuses, cycle state and the extension points plugins implement
(kube-scheduler's pkg/scheduler/framework/interface.go, made vectorised).

A plugin is any object with a `name` and the methods of the extension points it serves; one
object may serve several, as in kube-scheduler. Each extension point, and each optional hook
below, is a runtime-checkable Protocol the framework asks with isinstance, so a type checker
catches a misspelt method. Filter and Score plugins see every candidate node at once through
the `NodeTable`:

- `PreFilter.pre_filter(state, pod, table) -> Status`: Success, Skip (this plugin's Filter is
  not run for the pod) or a rejection of the pod on every node.
- `Filter.filter(state, pod, table, feasible) -> bool array`: a NEW array, `feasible` with the
  nodes this plugin rejects turned False (only nodes still feasible need evaluating; a node
  stops at its first rejecting plugin, as in kube-scheduler).
  `Filter.node_status(state, pod, table, i) -> Status` says why node `i` was rejected; it is
  asked lazily, only when a message must be written; a plugin may also answer for many
  nodes at once with `Filter.node_statuses(state, pod, table, rows) -> Verdicts`.
- `PreScore.pre_score(state, pod, table, nodes) -> Status` (Skip: no Score for the pod).
- `Score.score(state, pod, table, nodes) -> int64 array` over the feasible node rows `nodes`
  (raising `ScoreFailed(status)` for Go's Score returning an error status), and optionally
  `normalize_score(state, pod, scores) -> int64 array`. Two optional shortcuts
  let a scheduling cycle skip `score` (explanations still ask it):
  `uniform_score(state, pod, table) -> int | None`, the normalised score of every node when it
  is the same on all of them; and `row_scores(state, pod, table) -> RowScores | None`, when
  each node's score depends on its own row alone and needs no normalising: the framework then
  keeps the weighted sum of such plugins' scores over every row, per combination of their
  keys, and recomputes only the rows that changed.
- `PreEnqueue.pre_enqueue(pod) -> Status`, `QueueSort.sort_key(queued) -> tuple`,
  `PostFilter.post_filter(state, pod, table, diagnosis) -> (node name | None, Status)`,
  `Bind.bind(state, pod, node_name) -> Status`.
- `Reserve.reserve(state, pod, node_name) -> Status` once the pod is assumed on its node, and
  `Reserve.unreserve(state, pod, node_name)` when its scheduling or binding fails after that.
- `PreBind.pre_bind(pod, node_name) -> Awaitable[Status]`: the binding cycle's work before
  the Binding is sent (the scheduler's API side awaits it; a failure fails the binding).
- `events_to_register() -> list[ClusterEvent]`: what can make a pod this plugin rejected
  schedulable again (see `pinnace.scheduler.events`).

`NodePlugin` lets a plugin be written one node at a time in plain Python (`filter_node`,
`score_node`); the framework loops over the nodes for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from pinnace.scheduler.nodetable import NodeInfo, NodeTable, Rows
from pinnace.scheduler.podinfo import PodInfo

if TYPE_CHECKING:
    from pinnace.scheduler.events import ClusterEvent
    from pinnace.scheduler.nominator import Nominator
    from pinnace.scheduler.plugin_metrics import PluginTimer
    from pinnace.scheduler.profile import Profile

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    """framework.Code of v1.32, same order."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


# Python 3.11's EnumType has a __getattr__, which makes every read of a member through its
# class (`Code.SUCCESS`) a call into Python, several times a cheap comparison: a scheduling
# cycle tests codes dozens of times, so its hot paths read them from these names instead.
SUCCESS_CODE = Code.SUCCESS
ERROR_CODE = Code.ERROR
UNSCHEDULABLE_CODE = Code.UNSCHEDULABLE
UNRESOLVABLE_CODE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SKIP_CODE = Code.SKIP
_REJECTED_CODES = (UNSCHEDULABLE_CODE, UNRESOLVABLE_CODE)


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == SUCCESS_CODE

    def is_skip(self) -> bool:
        return self.code == SKIP_CODE

    def is_rejected(self) -> bool:
        return self.code in _REJECTED_CODES

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


class ScoreFailed(Exception):
    """Raised by a Score plugin's `score` to fail the cycle with `status` (kube-scheduler's
    Score returning a non-success status; a vectorised score has no status to return)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status

    def cycle_status(self, plugin: str) -> Status:
        """The status the scheduling cycle fails with (RunScorePlugins' wording)."""
        message = f'running Score plugins: plugin "{plugin}" failed with: {self.status.message}'
        return error(message).with_plugin(plugin)


@dataclass(frozen=True)
class Verdicts:
    """The statuses of many nodes, each distinct one made once: node k's is
    `distinct[which[k]]`. Plugins explaining many nodes at once (`node_statuses`) answer so,
    because building and hashing thousands of equal statuses would cost more than the filter."""

    which: np.ndarray
    distinct: tuple[Status, ...]

    @classmethod
    def of(cls, statuses: list[Status]) -> Verdicts:
        """Verdicts from one status per node (equal statuses are shared by identity)."""
        index: dict[int, int] = {}
        distinct: list[Status] = []
        which = []
        for status in statuses:
            j = index.get(id(status))
            if j is None:
                j = index[id(status)] = len(distinct)
                distinct.append(status)
            which.append(j)
        return cls(np.asarray(which, np.intp), tuple(distinct))

    def with_plugin(self, plugin: str) -> Verdicts:
        return Verdicts(self.which, tuple(s.with_plugin(plugin) for s in self.distinct))

    def success(self) -> np.ndarray:
        """Per node, whether its status is a success."""
        return np.array([s.is_success() for s in self.distinct], bool)[self.which]

    def statuses(self) -> list[Status]:
        return list(map(self.distinct.__getitem__, self.which.tolist()))


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


def error(*reasons: str) -> Status:
    return Status(Code.ERROR, reasons)


@dataclass
class CycleState:
    """Data plugins share within one scheduling cycle of one pod."""

    data: dict[str, Any] = field(default_factory=dict)
    skip_filter_plugins: set[str] = field(default_factory=set)
    skip_score_plugins: set[str] = field(default_factory=set)
    timer: PluginTimer | None = None
    """Set on the cycles whose plugins are timed (ShouldRecordPluginMetrics)."""

    def read(self, key: str) -> Any:
        return self.data[key]

    def write(self, key: str, value: Any) -> None:
        self.data[key] = value

    def clone(self) -> CycleState:
        """A copy to simulate on (preemption, nominated pods): values with a `clone()` method
        are cloned, the others are shared as read-only."""
        data = {k: v.clone() if hasattr(v, "clone") else v for k, v in self.data.items()}
        return CycleState(
            data, set(self.skip_filter_plugins), set(self.skip_score_plugins), self.timer
        )


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: PodInfo) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def sort_key(self, queued: Any) -> tuple[Any, ...]:
        """Smaller keys are popped first (QueueSort's Less as a key); a plugin's keys are all
        of one length."""
        ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray: ...

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, diagnosis: Any
    ) -> tuple[str | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray: ...


class RowScores(NamedTuple):
    """A pod's scores from a plugin whose score of a node depends on the node's row alone:
    pods with equal `key`s score alike; `compute(rows)` scores many rows at once and
    `compute_one(row)` one. They must lie in [0, 100] (they are checked as computed)."""

    key: Hashable
    compute: Callable[[Rows], np.ndarray]
    compute_one: Callable[[int], int]


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, pod: PodInfo, node_name: str) -> Awaitable[Status]: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


# Optional hooks: a plugin has them or not; the framework asks with isinstance.


@runtime_checkable
class PreFilterExtensions(Plugin, Protocol):
    """PreFilterExtensions: update the cycle state as if a pod were added to or removed from
    node row `i` (nominated pods, preemption victims)."""

    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, i: int
    ) -> Status: ...

    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, i: int
    ) -> Status: ...


@runtime_checkable
class NodeStatusesPlugin(Plugin, Protocol):
    """A Filter plugin that explains many rejected rows at once."""

    def node_statuses(
        self, state: CycleState, pod: PodInfo, table: NodeTable, rows: Sequence[int]
    ) -> Verdicts: ...


@runtime_checkable
class ScoreExtensions(Plugin, Protocol):
    def normalize_score(
        self, state: CycleState, pod: PodInfo, scores: np.ndarray
    ) -> np.ndarray: ...


@runtime_checkable
class UniformScorePlugin(Plugin, Protocol):
    def uniform_score(self, state: CycleState, pod: PodInfo, table: NodeTable) -> int | None: ...


@runtime_checkable
class RowScoresPlugin(Plugin, Protocol):
    def row_scores(self, state: CycleState, pod: PodInfo, table: NodeTable) -> RowScores | None: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    def events_to_register(self) -> list[ClusterEvent]: ...


@runtime_checkable
class FrameworkUser(Plugin, Protocol):
    """A plugin that needs its profile and the nominator (kube-scheduler hands plugins a
    framework.Handle when it builds them; here the scheduler binds them once built)."""

    def bind_framework(self, profile: Profile, nominator: Nominator) -> None: ...


@runtime_checkable
class ReadsNodeUsage(Plugin, Protocol):
    """A plugin reading the nodes' usage from the node table (`NodeTable.usage_mean` ...):
    the scheduler samples the metrics API for it every `usage_interval` seconds and averages
    over `usage_window` seconds."""

    usage_window: float
    usage_interval: float


@runtime_checkable
class ReadsWorkloadUsage(Plugin, Protocol):
    """A plugin reading usage forecasts per workload: the scheduler records the pods' usage
    at each sample into `workload_usage` (a `pinnace.forecast.UsageHistory`)."""

    workload_usage: Any


@runtime_checkable
class DeclaresExtensionPoints(Plugin, Protocol):
    """A plugin that says which extension points it serves instead of being asked by its
    methods (a plugin written node by node, or one restricted by the configuration)."""

    def extension_points(self) -> set[str]: ...


def default_normalize_score(
    scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE
) -> np.ndarray:
    """helper.DefaultNormalizeScore: scale to [0, max_priority] by the highest score (integer
    division), optionally reversed; all zero stays zero (or becomes max_priority reversed)."""
    highest = int(scores.max()) if len(scores) else 0
    if highest == 0:
        return np.full_like(scores, max_priority) if reverse else scores
    scaled = max_priority * scores // highest
    return max_priority - scaled if reverse else scaled


class NodePlugin:
    """Base for plugins written one node at a time; override `filter_node` and/or
    `score_node` (and `normalize_score` if the raw scores need it). The framework loops over
    the nodes, so this is for policies, not for speed."""

    name = "NodePlugin"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def extension_points(self) -> set[str]:
        cls = type(self)
        points = set()
        if cls.filter_node is not NodePlugin.filter_node:
            points.add("filter")
        if cls.score_node is not NodePlugin.score_node:
            points.add("score")
        return points

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        result = feasible.copy()
        for i in np.flatnonzero(feasible).tolist():
            if not self.filter_node(state, pod, table.node_info(i)).is_success():
                result[i] = False
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        return self.filter_node(state, pod, table.node_info(i))

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        return np.array(
            [self.score_node(state, pod, table.node_info(i)) for i in nodes.tolist()], np.int64
        )


_EXTENSION_POINTS = {
    "pre_enqueue": PreEnqueuePlugin,
    "queue_sort": QueueSortPlugin,
    "pre_filter": PreFilterPlugin,
    "filter": FilterPlugin,
    "post_filter": PostFilterPlugin,
    "pre_score": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "pre_bind": PreBindPlugin,
    "bind": BindPlugin,
}


def extension_points(plugin: Plugin) -> set[str]:
    """The extension points `plugin` serves: those it declares, else those it has the methods
    of. A declared point must have its methods."""
    served = {
        point for point, protocol in _EXTENSION_POINTS.items() if isinstance(plugin, protocol)
    }
    if not isinstance(plugin, DeclaresExtensionPoints):
        return served
    declared = set(plugin.extension_points())
    missing = declared - served
    if missing:
        raise TypeError(
            f"plugin {plugin.name!r} declares {', '.join(sorted(missing))} without the methods"
        )
    return declared
