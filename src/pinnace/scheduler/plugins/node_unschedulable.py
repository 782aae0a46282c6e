"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable): a cordoned node
(spec.unschedulable) takes only pods tolerating the node.kubernetes.io/unschedulable taint."""

from __future__ import annotations

import numpy as np

from pinnace.scheduler.events import NODE, NODE_ADD, UPDATE_NODE_TAINT, ClusterEvent
from pinnace.scheduler.framework import SUCCESS, CycleState, Status, unresolvable
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo

ERR_REASON = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(t.tolerates(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule") for t in pod.tolerations)


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        if not table.unschedulable_nodes or (pod.tolerations and tolerates_unschedulable(pod)):
            return feasible
        return feasible & ~table.unschedulable

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        if not table.unschedulable[i] or tolerates_unschedulable(pod):
            return SUCCESS
        return unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [NODE_ADD, ClusterEvent(NODE, UPDATE_NODE_TAINT)]
