"""Volume expansion: kube-controller-manager's expand controller (pkg/controller/volume/expand,
v1.32), the CSI external-resizer Pinnace plays for every CSI driver (as it plays the external
provisioner), and the kubelet's node expansion, with RecoverVolumeExpansionFailure on (v1.32's
default).

A Bound claim whose storage request grows past its capacity (PersistentVolumeClaimResize
admitted it: its class allows expansion) is expanded in three steps:

1. The expand controller finds no in-tree plugin to do it and says so on the claim
   (`ExternalExpanding` "waiting for an external controller to expand this PVC", from
   `volume_expand`).
2. For a CSI volume, the external-resizer (`external-resizer <driver>`) marks the claim
   (`allocatedResources` the request, `allocatedResourceStatuses` ControllerResizeInProgress,
   condition `Resizing`; event `Resizing`), grows the volume's capacity to the request, and
   leaves the file system to the node: NodeResizePending, condition `FileSystemResizePending`
   ("Waiting for user to (re-)start a pod to finish file system resize of volume on node."),
   event `FileSystemResizeRequired`; the volume is annotated with the size it had
   (`volume.alpha.kubernetes.io/pre-resize-capacity`) until then. A volume of another kind
   (a hostPath volume of local-path-provisioner) has no resizer: the claim waits.
3. Once a Running pod on a node mounts the claim, the kubelet's node expansion finishes it:
   the claim's capacity becomes the volume's, the condition and the resize status go,
   `FileSystemResizeSuccessful` is recorded on the pod and the claim (from `kubelet`, on the
   node), and the expand controller takes the volume's annotation off. The node's part is
   done here, on the kubelet's behalf, not by the node agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory
from pinnace.client.interest import in_namespaces, interest
from pinnace.clock import format_time
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.resources.lists import parse_quantity
from pinnace.scheduling.volumes import (
    PRE_RESIZE_CAPACITY_ANNOTATION,
    pod_all_claim_names,
    requested_storage,
    storage_of,
)

PODS = catalog.kind("", "pods")
PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")

EXPAND_CONTROLLER = "volume_expand"
CONTROLLER_RESIZE_IN_PROGRESS = "ControllerResizeInProgress"
NODE_RESIZE_PENDING = "NodeResizePending"
RESIZING = "Resizing"
FILE_SYSTEM_RESIZE_PENDING = "FileSystemResizePending"
FILE_SYSTEM_RESIZE_PENDING_MESSAGE = (
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)

ClaimStatusChange = Callable[[dict[str, Any]], None]


def _resize_status(claim: Mapping[str, Any]) -> str:
    statuses = (claim.get("status") or {}).get("allocatedResourceStatuses") or {}
    return str(statuses.get("storage") or "")


def _capacity(claim: Mapping[str, Any]) -> Any:
    return storage_of((claim.get("status") or {}).get("capacity") or {})


class VolumeExpandController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._expand_recorder = EventRecorder(client, EXPAND_CONTROLLER)
        self._recorders: dict[tuple[str, str], EventRecorder] = {}
        self._claims: Informer = informers.informer(PVCS)
        self._volumes: Informer = informers.informer(PVS)
        self._pods: Informer = informers.informer(PODS)
        self._claims.add_event_handler(self._enqueue, lambda old, new: self._enqueue(new))
        self._pods.add_event_handler(
            self._pod_changed,
            lambda old, new: self._pod_changed(new),
            interest=interest(in_namespaces(self._claims.namespaces())),  # its claims'
        )

    async def run(self) -> None:
        for informer in (self._claims, self._volumes, self._pods):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    def _enqueue(self, claim: Object) -> None:
        m = claim["metadata"]
        self._queue.add(f"{m.get('namespace')}/{m['name']}")

    def _pod_changed(self, pod: Object) -> None:
        """A pod that runs may finish its claims' node expansion."""
        if (pod.get("status") or {}).get("phase") != "Running":
            return
        namespace = pod["metadata"].get("namespace") or ""
        for name in pod_all_claim_names(pod):
            claim = self._claims.get(namespace, name)
            if claim is not None and _resize_status(claim) == NODE_RESIZE_PENDING:
                self._enqueue(claim)

    def _recorder(self, component: str, host: str = "") -> EventRecorder:
        recorder = self._recorders.get((component, host))
        if recorder is None:
            recorder = self._recorders[(component, host)] = EventRecorder(
                self._client, component, host
            )
        return recorder

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        claim = self._claims.get(namespace, name)
        if claim is None or (claim.get("status") or {}).get("phase") != "Bound":
            return
        volume = self._volumes.get("", str((claim.get("spec") or {}).get("volumeName") or ""))
        if volume is None:
            return
        try:
            if _resize_status(claim) == NODE_RESIZE_PENDING:
                await self._expand_on_node(claim, volume)
            elif requested_storage(claim) > _capacity(claim) and not _resize_status(claim):
                allocated = ((claim.get("status") or {}).get("allocatedResources") or {}).get(
                    "storage"
                )
                if allocated is None or parse_quantity(allocated) != requested_storage(claim):
                    await self._expand(claim, volume)
        except StatusError as e:
            if e.code != 404:
                raise

    async def _expand(self, claim: Object, volume: Object) -> None:
        self._expand_recorder.event(
            claim,
            EVENT_TYPE_NORMAL,
            "ExternalExpanding",
            "waiting for an external controller to expand this PVC",
        )
        driver = ((volume.get("spec") or {}).get("csi") or {}).get("driver")
        if not driver:
            return  # no external resizer for it
        resizer = self._recorder(f"external-resizer {driver}")
        volume_name = volume["metadata"]["name"]
        request = ((claim["spec"].get("resources") or {}).get("requests") or {})["storage"]

        def start(status: dict[str, Any]) -> None:
            status["allocatedResources"] = {"storage": request}
            status["allocatedResourceStatuses"] = {"storage": CONTROLLER_RESIZE_IN_PROGRESS}
            self._set_condition(status, RESIZING, "")

        claim = await self._change_claim(claim, start)
        resizer.event(
            claim,
            EVENT_TYPE_NORMAL,
            "Resizing",
            f"External resizer is resizing volume {volume_name}",
        )

        before = (claim["status"].get("capacity") or {}).get("storage")

        def grow(pv: Object) -> Object:
            pv["spec"].setdefault("capacity", {})["storage"] = request
            if before is not None:  # so the PV controller keeps the claim's size meanwhile
                pv["metadata"].setdefault("annotations", {})[PRE_RESIZE_CAPACITY_ANNOTATION] = (
                    before
                )
            return pv

        await self._client.modify(PVS, "", volume_name, grow)

        def leave_to_node(status: dict[str, Any]) -> None:
            status["allocatedResourceStatuses"] = {"storage": NODE_RESIZE_PENDING}
            status["conditions"] = [
                c for c in status.get("conditions") or () if c.get("type") != RESIZING
            ]
            self._set_condition(
                status, FILE_SYSTEM_RESIZE_PENDING, FILE_SYSTEM_RESIZE_PENDING_MESSAGE
            )

        claim = await self._change_claim(claim, leave_to_node)
        resizer.event(
            claim,
            EVENT_TYPE_NORMAL,
            "FileSystemResizeRequired",
            "Require file system resize of volume on node",
        )

    async def _expand_on_node(self, claim: Object, volume: Object) -> None:
        namespace, name = claim["metadata"].get("namespace") or "", claim["metadata"]["name"]
        pod = next(
            (
                p
                for p in self._pods.list(namespace)
                if (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") == "Running"
                and name in pod_all_claim_names(p)
            ),
            None,
        )
        if pod is None:
            return
        capacity = ((volume.get("spec") or {}).get("capacity") or {}).get("storage")

        def finish(status: dict[str, Any]) -> None:
            status["capacity"] = {**(status.get("capacity") or {}), "storage": capacity}
            status.pop("allocatedResourceStatuses", None)
            status["conditions"] = [
                c
                for c in status.get("conditions") or ()
                if c.get("type") not in (RESIZING, FILE_SYSTEM_RESIZE_PENDING)
            ]
            if not status["conditions"]:
                del status["conditions"]

        claim = await self._change_claim(claim, finish)
        node = str(pod["spec"]["nodeName"])
        kubelet = self._recorder("kubelet", node)
        message = (
            f'MountVolume.NodeExpandVolume succeeded for volume "{volume["metadata"]["name"]}" '
            f"{node}"
        )
        kubelet.event(pod, EVENT_TYPE_NORMAL, "FileSystemResizeSuccessful", message)
        kubelet.event(claim, EVENT_TYPE_NORMAL, "FileSystemResizeSuccessful", message)

        def settled(pv: Object) -> Object:
            (pv["metadata"].get("annotations") or {}).pop(PRE_RESIZE_CAPACITY_ANNOTATION, None)
            return pv

        await self._client.modify(PVS, "", volume["metadata"]["name"], settled)

    def _set_condition(self, status: dict[str, Any], kind: str, message: str) -> None:
        condition: dict[str, Any] = {
            "type": kind,
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": format_time(self._client.clock.now()),
        }
        if message:
            condition["message"] = message
        status["conditions"] = [
            *(c for c in status.get("conditions") or () if c.get("type") != kind),
            condition,
        ]

    async def _change_claim(self, claim: Object, change: ClaimStatusChange) -> Object:
        def mutate(current: Object) -> Object:
            change(current.setdefault("status", {}))
            return current

        m = claim["metadata"]
        return await self._client.modify(
            PVCS, m.get("namespace") or "", m["name"], mutate, subresource="status"
        )
