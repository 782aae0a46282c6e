"""The pvc-protection and pv-protection controllers (pkg/controller/volume/pvcprotection and
pvprotection, v1.32): they remove the finalizers StorageObjectInUseProtection admission put on
claims and volumes once the object is being deleted and nothing uses it any more. A claim is in
use while a pod scheduled to a node names it in a volume (whatever the pod's phase, as
v1.32's podUsesPVC); a volume while it is Bound."""

from __future__ import annotations

from pinnace.api import catalog
from pinnace.api.core.persistentvolume import (
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    VOLUME_BOUND,
)
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory
from pinnace.client.interest import in_namespaces, interest
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.scheduling.volumes import pod_all_claim_names

PODS = catalog.kind("", "pods")
PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")


def _being_deleted_with(obj: Object, finalizer: str) -> bool:
    m = obj["metadata"]
    return bool(m.get("deletionTimestamp")) and finalizer in (m.get("finalizers") or ())


async def _remove_finalizer(client: Client, kind: Kind, obj: Object, finalizer: str) -> None:
    updated = clone(obj)
    updated["metadata"]["finalizers"] = [
        f for f in updated["metadata"].get("finalizers") or () if f != finalizer
    ]
    try:
        await client.update(kind, updated)
    except StatusError as e:
        if e.code != 404:
            raise


class PVCProtectionController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._claims: Informer = informers.informer(PVCS)
        self._pods: Informer = informers.informer(PODS)
        self._claims.add_event_handler(
            self._claim_changed, lambda old, new: self._claim_changed(new)
        )
        self._pods.add_event_handler(
            self._pod_changed,
            lambda old, new: self._pod_changed(new),
            self._pod_changed,
            interest=interest(in_namespaces(self._claims.namespaces())),  # its claims'
        )

    async def run(self) -> None:
        await self._claims.wait_for_sync()
        await self._pods.wait_for_sync()
        await self._queue.run(self.sync)

    def _claim_changed(self, claim: Object) -> None:
        if _being_deleted_with(claim, PVC_PROTECTION_FINALIZER):
            m = claim["metadata"]
            self._queue.add(f"{m['namespace']}/{m['name']}")

    def _pod_changed(self, pod: Object) -> None:
        namespace = pod["metadata"].get("namespace") or ""
        for name in pod_all_claim_names(pod):
            claim = self._claims.get(namespace, name)
            if claim is not None:
                self._claim_changed(claim)

    def _in_use(self, namespace: str, name: str) -> bool:
        return any(
            (pod.get("spec") or {}).get("nodeName") and name in pod_all_claim_names(pod)
            for pod in self._pods.list(namespace)
        )

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        claim = self._claims.get(namespace, name)
        if claim is None or not _being_deleted_with(claim, PVC_PROTECTION_FINALIZER):
            return
        if not self._in_use(namespace, name):
            await _remove_finalizer(self._client, PVCS, claim, PVC_PROTECTION_FINALIZER)


class PVProtectionController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._volumes: Informer = informers.informer(PVS)
        self._volumes.add_event_handler(self._changed, lambda old, new: self._changed(new))

    async def run(self) -> None:
        await self._volumes.wait_for_sync()
        await self._queue.run(self.sync)

    def _changed(self, volume: Object) -> None:
        if _being_deleted_with(volume, PV_PROTECTION_FINALIZER):
            self._queue.add(volume["metadata"]["name"])

    async def sync(self, name: str) -> None:
        volume = self._volumes.get("", name)
        if volume is None or not _being_deleted_with(volume, PV_PROTECTION_FINALIZER):
            return
        if (volume.get("status") or {}).get("phase") != VOLUME_BOUND:
            await _remove_finalizer(self._client, PVS, volume, PV_PROTECTION_FINALIZER)
