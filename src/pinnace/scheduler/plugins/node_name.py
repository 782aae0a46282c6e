"""NodeName (pkg/scheduler/framework/plugins/nodename): a pod naming a node in spec.nodeName
fits only that node."""

from __future__ import annotations

import numpy as np

from pinnace.scheduler.events import NODE_ADD, ClusterEvent
from pinnace.scheduler.framework import SUCCESS, CycleState, Status, unresolvable
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        if not pod.node_name:
            return feasible
        wanted = np.zeros_like(feasible)
        i = table.index.get(pod.node_name)
        if i is not None:
            wanted[i] = feasible[i]
        return wanted

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        if not pod.node_name or pod.node_name == table.names[i]:
            return SUCCESS
        return unresolvable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [NODE_ADD]
