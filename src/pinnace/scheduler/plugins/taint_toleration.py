"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration): a node's NoSchedule and
NoExecute taints must all be tolerated (Filter); untolerated PreferNoSchedule taints lower the
score (Score, normalised reversed so the fewest such taints scores 100).

Nodes sharing a set of taints share a taint group in the node table, so tolerations are matched
once per group, not once per node.
"""

from __future__ import annotations

import numpy as np

from pinnace.scheduler.events import (
    NODE,
    NODE_ADD,
    POD,
    UPDATE_NODE_TAINT,
    UPDATE_POD_TOLERATIONS,
    ClusterEvent,
)
from pinnace.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    CycleState,
    Status,
    default_normalize_score,
    unresolvable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.taints import PREFER_NO_SCHEDULE, Toleration, first_untolerated


def _prefer_no_schedule_tolerations(pod: PodInfo) -> tuple[Toleration, ...]:
    return tuple(t for t in pod.tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


class TaintToleration:
    name = "TaintToleration"

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        groups = table.taint_groups
        if len(groups) == 1:  # no node has ever had a taint
            return feasible
        tolerated = np.array(
            [first_untolerated(taints, pod.tolerations) is None for taints in groups]
        )
        if tolerated.all():
            return feasible
        return feasible & tolerated[table.hard_taint_group]

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        taints = table.taint_groups[table.hard_taint_group[i]]
        taint = first_untolerated(taints, pod.tolerations)
        if taint is None:
            return SUCCESS
        return unresolvable(f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        groups = table.taint_groups
        if len(groups) == 1:
            return np.zeros(len(nodes), np.int64)
        tolerations = _prefer_no_schedule_tolerations(pod)
        counts = np.array(
            [sum(not any(t.tolerates(*taint) for t in tolerations) for taint in g) for g in groups],
            np.int64,
        )
        return counts[table.soft_taint_group[nodes]]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)

    def uniform_score(self, state: CycleState, pod: PodInfo, table: NodeTable) -> int | None:
        """Without PreferNoSchedule taints every node counts none, which normalises to 100."""
        soft = any(t.effect == PREFER_NO_SCHEDULE for taints in table.taint_groups for t in taints)
        return None if soft else MAX_NODE_SCORE

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            NODE_ADD,
            ClusterEvent(NODE, UPDATE_NODE_TAINT),
            ClusterEvent(POD, UPDATE_POD_TOLERATIONS),
        ]
