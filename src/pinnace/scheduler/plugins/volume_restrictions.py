"""VolumeRestrictions (pkg/scheduler/framework/plugins/volumerestrictions, v1.32): volumes two
pods may not share.

- A claim with the ReadWriteOncePod access mode may be used by one pod only: while another
  scheduled pod uses it, no node takes the pod ("node has pod using PersistentVolumeClaim with
  the same name and ReadWriteOncePod access mode").
- The in-tree disks a node can attach once (NoDiskConflict): a GCE persistent disk of the same
  name unless both pods mount it read-only, an AWS EBS volume of the same id, an iSCSI target
  of the same IQN unless both are read-only, an RBD image of the same pool and image sharing a
  monitor unless both are read-only: "node(s) had no available disk".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pinnace.api.core.persistentvolume import READ_WRITE_ONCE_POD
from pinnace.scheduler.events import ADD, ASSIGNED_POD_DELETE, UPDATE, ClusterEvent
from pinnace.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    Status,
    unresolvable,
    unschedulable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.volume_listers import CLAIMS, VolumeListers
from pinnace.scheduler.podinfo import PodInfo

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_DISKS = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
_STATE_KEY = "PreFilterVolumeRestrictions"


def _disks(pod: PodInfo) -> list[Mapping[str, Any]]:
    volumes = (pod.pod.get("spec") or {}).get("volumes") or ()
    # Every pod is looked at: a dict is told apart without Mapping's ABC check, and a volume
    # with none of the disks' fields (most) without a look at each.
    return [
        v
        for v in volumes
        if (type(v) is dict or isinstance(v, Mapping))
        and not v.keys().isdisjoint(_DISKS)
        and any(v.get(k) for k in _DISKS)
    ]


def is_volume_conflict(volume: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    """isVolumeConflict: `volume` of the new pod against `other` of a pod on the node."""
    gce, other_gce = volume.get("gcePersistentDisk"), other.get("gcePersistentDisk")
    if gce and other_gce and gce.get("pdName") == other_gce.get("pdName"):
        return not _both_read_only(gce, other_gce)
    ebs, other_ebs = volume.get("awsElasticBlockStore"), other.get("awsElasticBlockStore")
    if ebs and other_ebs and ebs.get("volumeID") == other_ebs.get("volumeID"):
        return True
    iscsi, other_iscsi = volume.get("iscsi"), other.get("iscsi")
    if iscsi and other_iscsi and iscsi.get("iqn") == other_iscsi.get("iqn"):
        return not _both_read_only(iscsi, other_iscsi)
    rbd, other_rbd = volume.get("rbd"), other.get("rbd")
    if rbd and other_rbd:
        shared = set(rbd.get("monitors") or ()) & set(other_rbd.get("monitors") or ())
        same = rbd.get("pool", "rbd") == other_rbd.get("pool", "rbd") and rbd.get(
            "image"
        ) == other_rbd.get("image")
        if shared and same and not _both_read_only(rbd, other_rbd):
            return True
    return False


def _both_read_only(source: Mapping[str, Any], other: Mapping[str, Any]) -> bool:
    return bool(source.get("readOnly") and other.get("readOnly"))


class VolumeRestrictions:
    name = "VolumeRestrictions"

    def __init__(self) -> None:
        self.volume_listers: VolumeListers | None = None

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        names = pod.claim_names
        disks = _disks(pod)
        listers = self.volume_listers
        if (not names and not disks) or listers is None:
            return SKIP
        once_pod = set()
        for name in names:
            claim = listers.claim(pod.namespace, name)
            if claim is None:
                return unresolvable(f'persistentvolumeclaim "{name}" not found')
            if READ_WRITE_ONCE_POD in ((claim.get("spec") or {}).get("accessModes") or ()):
                once_pod.add(name)
        conflicting = 0
        if once_pod:
            for pods in table.pods:
                for other in pods.values():
                    if other.key != pod.key and other.namespace == pod.namespace:
                        conflicting += len(once_pod & set(other.claim_names))
        state.write(_STATE_KEY, (conflicting, disks))
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        conflicting, disks = state.read(_STATE_KEY)
        if conflicting:
            return np.zeros_like(feasible)
        if not disks:
            return feasible
        result = feasible.copy()
        for i in np.flatnonzero(feasible).tolist():
            if not self.node_status(state, pod, table, i).is_success():
                result[i] = False
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        conflicting, disks = state.read(_STATE_KEY)
        if conflicting:
            return unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        for volume in disks:
            for other in table.pods[i].values():
                if any(is_volume_conflict(volume, v) for v in _disks(other)):
                    return unschedulable(ERR_REASON_DISK_CONFLICT)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ASSIGNED_POD_DELETE, ClusterEvent(CLAIMS, ADD), ClusterEvent(CLAIMS, UPDATE)]
