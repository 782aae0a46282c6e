"""NodeVolumeLimits (pkg/scheduler/framework/plugins/nodevolumelimits, csi.go, v1.32): a node
attaches at most its CSINode's `allocatable.count` volumes of each CSI driver.

The pod's new volumes are its claims' CSI volumes (an unbound claim counts as one volume of
its class's provisioner), less those already attached to the node for its other pods; a node
whose count for a driver would pass the limit is rejected: "node(s) exceed max volume count".
A node without a CSINode, or a driver without a count, has no limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from pinnace.scheduler.events import ADD, ASSIGNED_POD_DELETE, NODE, UPDATE, ClusterEvent
from pinnace.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    Status,
    unschedulable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.volume_listers import (
    CLAIMS,
    CLASSES,
    CSI_NODES,
    VOLUMES,
    VolumeListers,
)
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.volumes import claim_class

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_STATE_KEY = "PreFilterNodeVolumeLimits"


def attachable_volumes(
    listers: VolumeListers, namespace: str, claims: Iterable[str]
) -> dict[str, set[str]]:
    """By CSI driver, the volume handles of the claims (filterAttachableVolumes)."""
    found: dict[str, set[str]] = {}
    for name in claims:
        claim = listers.claim(namespace, name)
        if claim is None:
            continue
        volume_name = (claim.get("spec") or {}).get("volumeName")
        volume = listers.volume(volume_name) if volume_name else None
        if volume is None:
            storage_class = listers.storage_class(claim_class(claim))
            driver = (storage_class or {}).get("provisioner")
            if driver:
                found.setdefault(driver, set()).add(f"{driver}-{namespace}/{name}")
            continue
        csi = (volume.get("spec") or {}).get("csi")
        if isinstance(csi, Mapping) and csi.get("driver"):
            driver = str(csi["driver"])
            found.setdefault(driver, set()).add(f"{driver}-{csi.get('volumeHandle')}")
    return found


def volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    limits = {}
    for driver in ((csi_node or {}).get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if isinstance(count, int):
            limits[str(driver.get("name"))] = count
    return limits


class NodeVolumeLimits:
    name = "NodeVolumeLimits"

    def __init__(self) -> None:
        self.volume_listers: VolumeListers | None = None
        # Filter runs over every node for every pod with claims: what a node's CSINode allows
        # is kept, not re-read (a pod's claims are in its PodInfo).
        self._limits: dict[str, tuple[Mapping[str, Any] | None, dict[str, int]]] = {}

    def _node_limits(self, listers: VolumeListers, node_name: str) -> dict[str, int]:
        csi_node = listers.csi_node(node_name)
        known = self._limits.get(node_name)
        if known is None or known[0] is not csi_node:
            known = self._limits[node_name] = (csi_node, volume_limits(csi_node))
        return known[1]

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        names = pod.all_claim_names
        listers = self.volume_listers
        if not names or listers is None:
            return SKIP
        state.write(_STATE_KEY, attachable_volumes(listers, pod.namespace, names))
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        wanted = state.read(_STATE_KEY)
        if not wanted:
            return feasible
        result = feasible.copy()
        for i in np.flatnonzero(feasible).tolist():
            if not self._fits(wanted, table, i):
                result[i] = False
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        if self._fits(state.read(_STATE_KEY), table, i):
            return SUCCESS
        return unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)

    def _fits(self, wanted: dict[str, set[str]], table: NodeTable, i: int) -> bool:
        if not wanted:
            return True
        listers = self.volume_listers or VolumeListers()
        limits = self._node_limits(listers, table.names[i])
        if not limits:
            return True
        pods = table.pods[i].values()
        most = sum(len(other.claims) for other in pods)
        if all(most + len(wanted[d]) <= limit for d, limit in limits.items() if d in wanted):
            return True  # even were every claim on the node a volume of the driver
        attached: dict[str, set[str]] = {}
        for other in pods:
            names = other.all_claim_names
            for driver, handles in attachable_volumes(listers, other.namespace, names).items():
                attached.setdefault(driver, set()).update(handles)
        for driver, handles in wanted.items():
            limit = limits.get(driver)
            if limit is None:
                continue
            already = attached.get(driver, set())
            if len(already) + len(handles - already) > limit:
                return False
        return True

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent(CSI_NODES, ADD),
            ClusterEvent(CSI_NODES, UPDATE),
            ASSIGNED_POD_DELETE,
            ClusterEvent(CLAIMS, ADD),
            ClusterEvent(VOLUMES, ADD),
            ClusterEvent(CLASSES, ADD),
            ClusterEvent(NODE, ADD),
        ]
