"""What the volume plugins read of the cluster besides nodes and pods: claims, volumes,
storage classes and CSI nodes by name, kept current by the scheduler's informers (or given
once to a core running apart from the API), as kube-scheduler's listers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.scheduling.volumes import BIND_COMPLETED_ANNOTATION, annotations_of

Obj = Mapping[str, Any]

CLAIMS = "PersistentVolumeClaim"
VOLUMES = "PersistentVolume"
CLASSES = "StorageClass"
CSI_NODES = "CSINode"


class VolumeListers:
    def __init__(self) -> None:
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {
            kind: {} for kind in (CLAIMS, VOLUMES, CLASSES, CSI_NODES)
        }

    @classmethod
    def of(
        cls,
        claims: Iterable[Obj] = (),
        volumes: Iterable[Obj] = (),
        classes: Iterable[Obj] = (),
        csi_nodes: Iterable[Obj] = (),
    ) -> VolumeListers:
        listers = cls()
        given = ((CLAIMS, claims), (VOLUMES, volumes), (CLASSES, classes), (CSI_NODES, csi_nodes))
        for kind, objects in given:
            for obj in objects:
                listers.set(kind, obj)
        return listers

    def set(self, kind: str, obj: Obj) -> None:
        m = obj["metadata"]
        self._objects[kind][m.get("namespace") or "", m["name"]] = obj

    def delete(self, kind: str, obj: Obj) -> None:
        m = obj["metadata"]
        self._objects[kind].pop((m.get("namespace") or "", m["name"]), None)

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._objects[CLAIMS].get((namespace, name))

    def volume(self, name: str) -> Obj | None:
        return self._objects[VOLUMES].get(("", name))

    def volumes(self) -> list[Obj]:
        return list(self._objects[VOLUMES].values())

    def storage_class(self, name: str) -> Obj | None:
        return self._objects[CLASSES].get(("", name))

    def csi_node(self, name: str) -> Obj | None:
        return self._objects[CSI_NODES].get(("", name))

    def claim_bound(self, namespace: str, name: str) -> bool:
        """isPVCFullyBound: the claim names its volume and its binding completed."""
        claim = self.claim(namespace, name)
        if claim is None:
            return False
        spec = claim.get("spec") or {}
        return bool(spec.get("volumeName")) and BIND_COMPLETED_ANNOTATION in annotations_of(claim)
