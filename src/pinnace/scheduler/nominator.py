"""Nominated pods, and filtering one node with them accounted (kube-scheduler's PodNominator
and RunFilterPluginsWithNominatedPods).

A pod that preempted others is nominated to the node it freed (status.nominatedNodeName) and
waits for its victims to go. Meanwhile a pod of lower priority must not take that room: when
a node has pods of higher or equal priority nominated to it, its filters run twice, first with
those pods added to the node (the room is reserved for them), then without them (affinity to a
nominated pod that may never land must not count). Both must pass.

Plugins that keep PreFilter results in the cycle state learn of each pod added to or removed
from a node by `pre_filter_add_pod(state, pod, pod_info_to_add, table, i) -> Status` and
`pre_filter_remove_pod(...)` (kube-scheduler's PreFilterExtensions); plugins reading the node
table directly need neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from pinnace.scheduler.framework import SUCCESS, Code, CycleState, PreFilterExtensions, Status
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile

_REJECTED = Status(Code.UNSCHEDULABLE)
PER_NODE_FILTERS = frozenset(
    (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    )
)
"""In-tree Filters whose verdict on a node depends on that node and its pods alone, and which
only find a node fuller with more pods on it."""


class Nominator:
    """Which pending pods are nominated to which node."""

    def __init__(self) -> None:
        self._node_of: dict[str, str] = {}
        self._pods: dict[str, dict[str, PodInfo]] = {}  # node name -> pod key -> pod
        self.version = 0
        """Counts the changes to the nominations."""

    def add(self, pod: PodInfo, node_name: str) -> None:
        """Nominate `pod` to `node_name` (an empty name clears its nomination)."""
        self.delete(pod.key)
        if node_name:
            self.version += 1
            self._node_of[pod.key] = node_name
            self._pods.setdefault(node_name, {})[pod.key] = pod

    def delete(self, key: str) -> None:
        node_name = self._node_of.pop(key, None)
        if node_name is not None:
            self.version += 1
            pods = self._pods[node_name]
            del pods[key]
            if not pods:
                del self._pods[node_name]

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def pods_for_node(self, node_name: str) -> tuple[PodInfo, ...]:
        return tuple(self._pods.get(node_name, {}).values())

    def nodes(self) -> tuple[str, ...]:
        return tuple(self._pods)


def pods_to_reserve_for(nominator: Nominator, pod: PodInfo, node_name: str) -> list[PodInfo]:
    """The pods nominated to the node that `pod` must leave room for: those of higher or equal
    priority, other than itself."""
    return [
        p
        for p in nominator.pods_for_node(node_name)
        if p.key != pod.key and p.priority >= pod.priority
    ]


def run_filter_on_node(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    i: int,
    *,
    explain: bool = True,
) -> Status:
    """RunFilterPlugins on node row `i` alone: the first rejection, with its plugin (and its
    reasons if `explain`: asking for them costs more than the verdict)."""
    feasible = np.zeros(len(table), bool)
    feasible[i] = True
    for plugin in profile.filter:
        if plugin.name in state.skip_filter_plugins:
            continue
        if not plugin.filter(state, pod, table, feasible)[i]:
            if not explain:
                return _REJECTED.with_plugin(plugin.name)
            return plugin.node_status(state, pod, table, i).with_plugin(plugin.name)
    return SUCCESS


def run_filter_with_nominated_pods(
    profile: Profile,
    nominator: Nominator,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    i: int,
    *,
    explain: bool = True,
) -> Status:
    """RunFilterPluginsWithNominatedPods on node row `i`: with the reserved pods added, then,
    if there were any and they fit, once more without them."""
    reserved = pods_to_reserve_for(nominator, pod, table.names[i])
    if reserved:
        status = _run_filter_with_pods_added(profile, state, pod, table, i, reserved, explain)
        if not status.is_success():
            return status
    return run_filter_on_node(profile, state, pod, table, i, explain=explain)


def _run_filter_with_pods_added(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    i: int,
    pods: list[PodInfo],
    explain: bool = True,
) -> Status:
    copy = state.clone()
    added: list[PodInfo] = []
    try:
        for p in pods:
            added.append(p)
            status = add_pod(profile, copy, pod, table, i, p)
            if not status.is_success():
                return status
        return run_filter_on_node(profile, copy, pod, table, i, explain=explain)
    finally:
        for p in added:
            table.remove_pod(p.key, table.names[i])


def add_pod(
    profile: Profile, state: CycleState, pod: PodInfo, table: NodeTable, i: int, added: PodInfo
) -> Status:
    """Account `added` on node row `i` in the table and in the plugins' cycle state."""
    table.add_pod(added, table.names[i])
    return _run_extensions(
        profile, state, lambda p: p.pre_filter_add_pod(state, pod, added, table, i)
    )


def remove_pod(
    profile: Profile, state: CycleState, pod: PodInfo, table: NodeTable, i: int, removed: PodInfo
) -> Status:
    """Take `removed` off node row `i` in the table and in the plugins' cycle state."""
    table.remove_pod(removed.key, table.names[i])
    return _run_extensions(
        profile, state, lambda p: p.pre_filter_remove_pod(state, pod, removed, table, i)
    )


def _run_extensions(
    profile: Profile, state: CycleState, run: Callable[[PreFilterExtensions], Status]
) -> Status:
    for plugin in profile.pre_filter_extensions:
        if plugin.name in state.skip_filter_plugins:
            continue
        status = run(plugin)
        if not status.is_success():
            return status.with_plugin(plugin.name)
    return SUCCESS


def filter_nodes_with_nominated_pods(
    profile: Profile,
    nominator: Nominator,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    feasible: np.ndarray,
    among_feasible: bool,
    *,
    explain: bool = True,
) -> dict[int, Status]:
    """The first pass of RunFilterPluginsWithNominatedPods over the nodes with pods to leave
    room for (the second pass is the plain Filter run, `feasible`), among those `feasible` or
    among the others (whose rejection only matters to explain it): the rows it rejects, with
    the rejection, which is the one reported for them (with its reasons if `explain`)."""
    reserving = {}
    for node_name in nominator.nodes():
        i = table.index.get(node_name)
        if i is None or bool(feasible[i]) != among_feasible:
            continue
        reserved = pods_to_reserve_for(nominator, pod, node_name)
        if reserved:
            reserving[i] = reserved
    if len(reserving) > 1 and per_node_filters_only(profile, state):
        # One vectorised run for all of them: no node's verdict depends on another's pods.
        added = [(table.names[i], p) for i, pods in reserving.items() for p in pods]
        for node_name, p in added:
            table.add_pod(p, node_name)
        try:
            rows = list(reserving)
            passed = filter_rows(profile, state, pod, table, rows)
            failed = [i for i in rows if not passed[i]]
            if not explain:
                return dict.fromkeys(failed, _REJECTED)
            statuses = filter_statuses(profile, state, pod, table, failed)
            return dict(zip(failed, statuses, strict=True))
        finally:
            for node_name, p in added:
                table.remove_pod(p.key, node_name)
    rejected = {}
    for i, reserved in reserving.items():
        status = _run_filter_with_pods_added(profile, state, pod, table, i, reserved, explain)
        if not status.is_success():
            rejected[i] = status
    return rejected


def per_node_filters_only(profile: Profile, state: CycleState) -> bool:
    """Whether every Filter that runs for the pod is one of PER_NODE_FILTERS."""
    return all(
        plugin.name in PER_NODE_FILTERS
        for plugin in profile.filter
        if plugin.name not in state.skip_filter_plugins
    )


def filter_rows(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    rows: Sequence[int] | np.ndarray,
) -> np.ndarray:
    """The Filter verdicts on node `rows` (False elsewhere), in one vectorised run."""
    return profile.run_filter(state, pod, table, rows)[0]


def filter_statuses(
    profile: Profile, state: CycleState, pod: PodInfo, table: NodeTable, rows: list[int]
) -> list[Status]:
    """run_filter_on_node's answer for each of `rows`, from one vectorised run."""
    _, trace = profile.run_filter(state, pod, table, rows)
    return profile.node_statuses(state, pod, table, trace, rows)
