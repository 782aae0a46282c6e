"""NodePorts (pkg/scheduler/framework/plugins/nodeports): a pod's host ports must be free on
the node (`pinnace.scheduling.hostports.conflicts`: HostPortInfo.CheckConflict)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pinnace.scheduler.events import ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent
from pinnace.scheduler.framework import SKIP, SUCCESS, CycleState, Status, unschedulable
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.hostports import HostPort, conflicts

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def fits(pod: PodInfo, used: Mapping[HostPort, int]) -> bool:
    return not used or not any(conflicts(wanted, used) for wanted in pod.host_ports)


class NodePorts:
    name = "NodePorts"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        return SUCCESS if pod.host_ports else SKIP

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        result = feasible
        for i, used in enumerate(table.host_ports):
            if used and feasible[i] and not fits(pod, used):
                if result is feasible:
                    result = feasible.copy()
                result[i] = False
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        return SUCCESS if fits(pod, table.host_ports[i]) else unschedulable(ERR_REASON)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ASSIGNED_POD_DELETE, NODE_ADD]
