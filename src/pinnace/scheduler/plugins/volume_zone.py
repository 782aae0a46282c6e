"""VolumeZone (pkg/scheduler/framework/plugins/volumezone, v1.32): the zone and region labels
of the volumes bound to a pod's claims must be the node's.

PreFilter gathers the topology labels of the pod's bound volumes (a claim still unbound is
skipped when its class waits for the first consumer, VolumeBinding provisions it in the
right place; otherwise the pod cannot be placed yet, and the status says why). Filter
rejects a node that has any topology label but not one of each volume's values for it:
"node(s) had no available volume zone". A node without topology labels takes any volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pinnace.scheduler.events import ADD, NODE, UPDATE, UPDATE_NODE_LABEL, ClusterEvent
from pinnace.scheduler.framework import SKIP, SUCCESS, CycleState, Status, unresolvable
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.volume_listers import CLAIMS, CLASSES, VOLUMES, VolumeListers
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.volumes import claim_class

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
_STATE_KEY = "PreFilterVolumeZone"


def _zones(value: str) -> frozenset[str]:
    """LabelZonesToSet: several zones joined by "__"."""
    return frozenset(value.split("__"))


class VolumeZone:
    name = "VolumeZone"

    def __init__(self) -> None:
        self.volume_listers: VolumeListers | None = None

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        names = pod.claim_names
        listers = self.volume_listers
        if not names or listers is None:
            return SKIP
        topologies: list[tuple[str, frozenset[str]]] = []
        for name in names:
            claim = listers.claim(pod.namespace, name)
            if claim is None:
                return unresolvable(f'persistentvolumeclaim "{name}" not found')
            volume_name = (claim.get("spec") or {}).get("volumeName")
            if not volume_name:
                class_name = claim_class(claim)
                if not class_name:
                    return unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                storage_class = listers.storage_class(class_name)
                if storage_class is None:
                    return unresolvable(f'storageclasses.storage.k8s.io "{class_name}" not found')
                mode = storage_class.get("volumeBindingMode")
                if not mode:
                    return unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"'
                    )
                if mode == "WaitForFirstConsumer":
                    continue
                return unresolvable("PersistentVolume had no name")
            volume = listers.volume(volume_name)
            if volume is None:
                return unresolvable(f'persistentvolume "{volume_name}" not found')
            labels = (volume.get("metadata") or {}).get("labels") or {}
            topologies += [(key, _zones(labels[key])) for key in TOPOLOGY_LABELS if key in labels]
        if not topologies:
            return SKIP
        state.write(_STATE_KEY, tuple(topologies))
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        topologies = state.read(_STATE_KEY)
        result = feasible.copy()
        for i in np.flatnonzero(feasible).tolist():
            if not _fits(topologies, table.labels[i]):
                result[i] = False
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        if _fits(state.read(_STATE_KEY), table.labels[i]):
            return SUCCESS
        return unresolvable(ERR_REASON_CONFLICT)

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent(CLASSES, ADD),
            ClusterEvent(NODE, ADD),
            ClusterEvent(NODE, UPDATE_NODE_LABEL),
            ClusterEvent(CLAIMS, ADD),
            ClusterEvent(CLAIMS, UPDATE),
            ClusterEvent(VOLUMES, ADD),
            ClusterEvent(VOLUMES, UPDATE),
        ]


def _fits(topologies: tuple[tuple[str, frozenset[str]], ...], labels: Mapping[str, Any]) -> bool:
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return True
    for key, values in topologies:
        value = labels.get(key)
        if value is None:
            value = labels.get(_GA.get(key, key))
        if value is None or value not in values:
            return False
    return True
