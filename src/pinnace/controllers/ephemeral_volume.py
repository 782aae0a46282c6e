"""The ephemeral volume controller (pkg/controller/volume/ephemeral, v1.32): for each generic
ephemeral volume of a pod it creates the pod's claim, `<pod>-<volume>`, from the volume's
`volumeClaimTemplate` (its labels, annotations and spec), controlled by the pod, so the
garbage collector deletes the claim with the pod. A claim of that name the pod does not
control is left alone and reported on the pod (Warning `FailedBinding`, "ephemeral volume
scratch: PVC ns/pod-scratch was not created for pod ns/pod (pod is not owner)"), as is a
create that fails; the pod is synced again through the rate limiter. A deleted claim of a
pod that still runs is created again."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_WARNING
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory
from pinnace.client.interest import Fact, interest
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.scheduling.volumes import claim_not_for_pod, pod_claims

PODS = catalog.kind("", "pods")
PVCS = catalog.kind("", "persistentvolumeclaims")
COMPONENT = "ephemeral_volume"
FAILED_BINDING = "FailedBinding"


class VolumeError(Exception):
    """Why one ephemeral volume of a pod has no claim of its own."""


def _ephemeral_volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    volumes = (pod.get("spec") or {}).get("volumes") or ()
    return [v for v in volumes if isinstance(v, Mapping) and v.get("ephemeral") is not None]


def claim_for(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> Object:
    """The claim the controller creates for one ephemeral volume of `pod`."""
    meta = pod["metadata"]
    template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}
    template_meta = template.get("metadata") or {}
    claim_meta: dict[str, Any] = {
        "name": f"{meta['name']}-{volume['name']}",
        "namespace": meta.get("namespace"),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    for key in ("annotations", "labels"):
        if template_meta.get(key):
            claim_meta[key] = dict(template_meta[key])
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": claim_meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


class EphemeralVolumeController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._recorder = EventRecorder(client, COMPONENT)
        self._pods: Informer = informers.informer(PODS)
        self._claims: Informer = informers.informer(PVCS)
        # The pod spec is immutable: a pod's updates and deletion change nothing to create.
        self._pods.add_event_handler(self._enqueue_pod, interest=interest(Fact(_ephemeral_volumes)))
        self._claims.add_event_handler(on_delete=self._claim_deleted)

    async def run(self) -> None:
        await self._pods.wait_for_sync()
        await self._claims.wait_for_sync()
        await self._queue.run(self.sync)

    def _enqueue_pod(self, pod: Object) -> None:
        m = pod["metadata"]
        if not m.get("deletionTimestamp") and _ephemeral_volumes(pod):
            self._queue.add(f"{m.get('namespace')}/{m['name']}")

    def _claim_deleted(self, claim: Object) -> None:
        """Someone deleted a claim: a pod whose ephemeral volume it was gets it again."""
        m = claim["metadata"]
        for pod in self._pods.list(m.get("namespace") or ""):
            if (m["name"], True) in pod_claims(pod):
                self._enqueue_pod(pod)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self._pods.get(namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        for volume in _ephemeral_volumes(pod):
            try:
                await self._handle_volume(pod, volume)
            except VolumeError as e:
                message = f"ephemeral volume {volume.get('name')}: {e}"
                self._recorder.event(pod, EVENT_TYPE_WARNING, FAILED_BINDING, message)
                raise

    async def _handle_volume(self, pod: Object, volume: Mapping[str, Any]) -> None:
        claim = claim_for(pod, volume)
        name = claim["metadata"]["name"]
        existing = self._claims.get(pod["metadata"].get("namespace") or "", name)
        if existing is not None:
            problem = claim_not_for_pod(pod, existing)
            if problem:
                raise VolumeError(problem)
            return
        try:
            await self._client.create(PVCS, claim["metadata"]["namespace"], claim)
        except StatusError as e:
            raise VolumeError(f"create PVC {name}: {e.message}") from e
