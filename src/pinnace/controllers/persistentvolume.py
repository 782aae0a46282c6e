"""The persistent volume controller (pkg/controller/volume/persistentvolume v1.32,
pv_controller.go) with a simulated external provisioner.

Claims: an unbound claim is bound to the smallest Available volume that satisfies it
(`pinnace.scheduling.volumes.find_matching_volume`), or to the volume it names; without one, a
claim of a class is provisioned, a claim whose class binds on WaitForFirstConsumer waits for
the scheduler to pick a node (`volume.kubernetes.io/selected-node`), and a claim of no class
stays Pending, until a default class appears: a claim created without a class while there was
none gets the default class then (retroactive default StorageClass assignment). A bound claim
whose volume is gone, or no longer names it, is Lost.

Volumes: Available without a claim, Bound with one; when their claim is deleted, Released
and then reclaimed by their policy: Retain keeps them Released, Delete deletes a volume a
provisioner made (one it did not make is Failed, no plugin can delete it), Recycle fails (no
recycler plugin).

Provisioning: where Kubernetes hands the claim to an external provisioner (a CSI driver's
external-provisioner sidecar, rancher.io/local-path ...) and waits, Pinnace plays that
provisioner itself for every provisioner name but `kubernetes.io/no-provisioner`: it creates
`pvc-<claim uid>` of the requested size, pre-bound to the claim, with the class's reclaim policy
and mount options, and with node affinity for the selected node (its hostname for local
provisioners, its zone otherwise) or the class's allowedTopologies. Events are worded as the
controller's and the provisioner library's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.core.persistentvolume import (
    CLAIM_BOUND,
    CLAIM_LOST,
    CLAIM_PENDING,
    RECLAIM_DELETE,
    RECLAIM_RECYCLE,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
    VOLUME_FAILED,
    VOLUME_RELEASED,
)
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.api.storage.storageclass import (
    WAIT_FOR_FIRST_CONSUMER,
    binding_mode,
    is_default_class,
)
from pinnace.apiserver.admission.storage import default_class
from pinnace.client import Client, EventRecorder, Informer, InformerFactory
from pinnace.client.interest import in_namespaces, interest
from pinnace.controllers.controller_utils import WorkQueue
from pinnace.scheduling.volumes import (
    BETA_STORAGE_CLASS_ANNOTATION,
    BETA_STORAGE_PROVISIONER_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    PRE_RESIZE_CAPACITY_ANNOTATION,
    PROVISIONED_BY_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    STORAGE_PROVISIONER_ANNOTATION,
    annotations_of,
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
    pod_all_claim_names,
)

PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")
STORAGE_CLASSES = catalog.kind("storage.k8s.io", "storageclasses")
NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")

CONTROLLER_NAME = "persistentvolume-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
LOCAL_PROVISIONERS = frozenset(
    {"rancher.io/local-path", "k8s.io/minikube-hostpath", "hostpath.csi.k8s.io", "openebs.io/local"}
)
"""Provisioners whose volumes live on one node: their volumes get the node's hostname."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
LOCAL_PATH_ROOT = "/opt/local-path-provisioner"

WAITING_FOR_FIRST_CONSUMER = "waiting for first consumer to be created before binding"
NO_CLASS = "no persistent volumes available for this claim and no storage class is set"
EXTERNAL_PROVISIONING = (
    "Waiting for a volume to be created either by the external provisioner '{}' or manually by "
    "the system administrator. If volume creation is delayed, please verify that the "
    "provisioner is running and correctly registered."
)

_CLAIM, _VOLUME = "claim:", "volume:"


def claim_reference(claim: Object) -> dict[str, Any]:
    m = claim["metadata"]
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": m["namespace"],
        "name": m["name"],
        "uid": m.get("uid"),
        "apiVersion": "v1",
        "resourceVersion": m.get("resourceVersion"),
    }


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False" for c in conditions)


def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


class PersistentVolumeController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._queue = WorkQueue(self._clock)
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._provisioners: dict[str, EventRecorder] = {}
        self._claims: Informer = informers.informer(PVCS)
        self._volumes: Informer = informers.informer(PVS)
        self._classes: Informer = informers.informer(STORAGE_CLASSES)
        self._nodes: Informer = informers.informer(NODES)
        self._pods: Informer = informers.informer(PODS)
        # v1.32 tells of the pods a waiting claim waits for at its next resync (15 s); without
        # resyncs, a pod using the claim that the scheduler could not place syncs it.
        self._pods.add_event_handler(
            self._pod_changed,
            lambda old, new: self._pod_changed(new),
            interest=interest(in_namespaces(self._claims.namespaces())),  # its claims'
        )
        self._claims.add_event_handler(
            self._claim_changed, lambda old, new: self._claim_changed(new), self._claim_deleted
        )
        self._volumes.add_event_handler(
            self._volume_changed, lambda old, new: self._volume_changed(new), self._volume_deleted
        )
        self._classes.add_event_handler(
            lambda sc: self._enqueue_unbound_claims(), self._class_changed
        )

    async def run(self) -> None:
        for informer in (self._claims, self._volumes, self._classes, self._nodes, self._pods):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    # --- informer events ---------------------------------------------------------------------

    def _claim_changed(self, claim: Object) -> None:
        m = claim["metadata"]
        self._queue.add(f"{_CLAIM}{m['namespace']}/{m['name']}")

    def _pod_changed(self, pod: Object) -> None:
        if (pod.get("spec") or {}).get("nodeName") or not _unschedulable(pod):
            return
        namespace = pod["metadata"].get("namespace") or ""
        for name in pod_all_claim_names(pod):
            claim = self._claims.get(namespace, name)
            if claim is not None and BIND_COMPLETED_ANNOTATION not in annotations_of(claim):
                self._claim_changed(claim)

    def _claim_deleted(self, claim: Object) -> None:
        for volume in self._volumes.list():
            if is_volume_bound_to_claim(volume, claim):
                self._queue.add(_VOLUME + volume["metadata"]["name"])

    def _volume_changed(self, volume: Object) -> None:
        self._queue.add(_VOLUME + volume["metadata"]["name"])
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref:
            self._queue.add(f"{_CLAIM}{ref.get('namespace')}/{ref.get('name')}")
        if _phase(volume) == VOLUME_AVAILABLE:
            self._enqueue_unbound_claims()

    def _volume_deleted(self, volume: Object) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref:
            self._queue.add(f"{_CLAIM}{ref.get('namespace')}/{ref.get('name')}")

    def _class_changed(self, old: Object, new: Object) -> None:
        # v1.32 finds a new default class at its claims' next resync (15 s)
        if is_default_class(new) and not is_default_class(old):
            self._enqueue_unbound_claims()

    def _enqueue_unbound_claims(self) -> None:
        for claim in self._claims.list():
            if BIND_COMPLETED_ANNOTATION not in annotations_of(claim):
                self._claim_changed(claim)

    # --- syncs -------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        if key.startswith(_CLAIM):
            namespace, _, name = key[len(_CLAIM) :].partition("/")
            claim = self._claims.get(namespace, name)
            if claim is None:
                return
            if BIND_COMPLETED_ANNOTATION in annotations_of(claim):
                await self._sync_bound_claim(claim)
            else:
                await self._sync_unbound_claim(claim)
        else:
            volume = self._volumes.get("", key[len(_VOLUME) :])
            if volume is not None:
                await self._sync_volume(volume)

    def _delay_binding(self, claim: Object) -> bool:
        """IsDelayBindingMode: the claim's class binds on WaitForFirstConsumer."""
        name = claim_class(claim)
        found = self._classes.get("", name) if name else None
        return found is not None and binding_mode(found) == WAIT_FOR_FIRST_CONSUMER

    async def _sync_unbound_claim(self, claim: Object) -> None:
        spec = claim.get("spec") or {}
        name = spec.get("volumeName")
        if not name:
            delay = self._delay_binding(claim)
            found = find_matching_volume(claim, self._volumes.list(), delay_binding=delay)
            if found is not None:
                await self._bind(dict(found), claim)
                return
            if await self._assign_default_class(claim):
                return  # its update syncs it again
            if delay and SELECTED_NODE_ANNOTATION not in annotations_of(claim):
                self._event(claim, EVENT_TYPE_NORMAL, *self._unbound_delay_binding_reason(claim))
            elif claim_class(claim):
                await self._provision(claim)
            else:
                self._event(claim, EVENT_TYPE_NORMAL, "FailedBinding", NO_CLASS)
            await self._claim_phase(claim, CLAIM_PENDING)
            return
        volume = self._volumes.get("", name)
        if volume is None:
            await self._claim_phase(claim, CLAIM_PENDING)
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
            return
        message = f'volume "{name}" already bound to a different claim.'
        self._event(claim, EVENT_TYPE_WARNING, "FailedBinding", message)
        await self._claim_phase(claim, CLAIM_PENDING)

    async def _assign_default_class(self, claim: Object) -> bool:
        """assignDefaultStorageClass: a claim that names no class (not even "") gets the
        default class, if there is one now; whether it was updated."""
        spec = claim.get("spec") or {}
        has_class = BETA_STORAGE_CLASS_ANNOTATION in annotations_of(claim)
        if has_class or spec.get("storageClassName") is not None:
            return False
        found = default_class(self._classes.list())
        if found is None:
            return False
        updated = clone(claim)
        updated["spec"]["storageClassName"] = found["metadata"]["name"]
        await self._client.update(PVCS, updated)
        return True

    def _unbound_delay_binding_reason(self, claim: Object) -> tuple[str, str]:
        """emitEventForUnboundDelayBindingClaim: the claim waits for its first consumer, or
        for the pods using it that are not scheduled yet."""
        m = claim["metadata"]
        waiting = sorted(
            pod["metadata"]["name"]
            for pod in self._pods.list(m.get("namespace") or "")
            if not (pod.get("spec") or {}).get("nodeName")
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and m["name"] in pod_all_claim_names(pod)
        )
        if not waiting:
            return "WaitForFirstConsumer", WAITING_FOR_FIRST_CONSUMER
        if len(waiting) == 1:
            return "WaitForPodScheduled", f"waiting for pod {waiting[0]} to be scheduled"
        return "WaitForPodScheduled", f"waiting for pods {','.join(waiting)} to be scheduled"

    async def _sync_bound_claim(self, claim: Object) -> None:
        name = (claim.get("spec") or {}).get("volumeName")
        if not name:
            reason = (
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            )
            await self._lose(claim, "ClaimLost", reason)
            return
        volume = self._volumes.get("", name)
        if volume is None:
            reason = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            await self._lose(claim, "ClaimLost", reason)
            return
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
            return
        reason = "Two claims are bound to the same volume, this one is bound incorrectly"
        await self._lose(claim, "ClaimMisbound", reason)

    async def _lose(self, claim: Object, reason: str, message: str) -> None:
        if _phase(claim) != CLAIM_LOST:
            self._event(claim, EVENT_TYPE_WARNING, reason, message)
        await self._claim_phase(claim, CLAIM_LOST)

    async def _sync_volume(self, volume: Object) -> None:
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref or not ref.get("uid"):
            await self._volume_phase(volume, VOLUME_AVAILABLE)
            return
        claim = self._claims.get(ref.get("namespace") or "", ref.get("name") or "")
        if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
            claim = None
        if claim is None:
            await self._release(volume)
            return
        bound_to = (claim.get("spec") or {}).get("volumeName")
        if not bound_to:
            self._claim_changed(claim)  # the claim's sync binds both
        elif bound_to == volume["metadata"]["name"]:
            await self._volume_phase(volume, VOLUME_BOUND)
        else:
            await self._unbind(volume)

    async def _release(self, volume: Object) -> None:
        """The claim is gone: Released, then reclaimed by the volume's policy."""
        if _phase(volume) == VOLUME_FAILED:
            return
        volume = await self._volume_phase(volume, VOLUME_RELEASED)
        policy = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy")
        name = volume["metadata"]["name"]
        if policy == RECLAIM_RECYCLE:
            self._event(
                volume,
                EVENT_TYPE_WARNING,
                "VolumeFailedRecycle",
                "No recycler plugin found for the volume!",
            )
            await self._volume_phase(volume, VOLUME_FAILED)
        elif policy == RECLAIM_DELETE:
            if PROVISIONED_BY_ANNOTATION not in annotations_of(volume):
                message = (
                    f'error getting deleter volume plugin for volume "{name}": '
                    "no deletable volume plugin matched"
                )
                self._event(volume, EVENT_TYPE_WARNING, "VolumeFailedDelete", message)
                await self._volume_phase(volume, VOLUME_FAILED)
                return
            try:
                await self._client.delete(PVS, "", name)
            except StatusError as e:
                if e.code != 404:
                    raise

    async def _unbind(self, volume: Object) -> None:
        """unbindVolume: the claim is bound elsewhere; a volume the controller bound forgets
        the claim, one pre-bound by its user keeps the name but not the uid."""
        updated = clone(volume)
        notes = updated["metadata"].get("annotations") or {}
        if BOUND_BY_CONTROLLER_ANNOTATION in notes:
            del updated["spec"]["claimRef"]
            del notes[BOUND_BY_CONTROLLER_ANNOTATION]
        else:
            updated["spec"]["claimRef"]["uid"] = ""
        volume = await self._client.update(PVS, updated)
        await self._volume_phase(volume, VOLUME_AVAILABLE)

    # --- binding -----------------------------------------------------------------------------

    async def _bind(self, volume: Object, claim: Object) -> None:
        """bind: the volume names the claim and is Bound, the claim names the volume and is
        Bound with the volume's capacity and access modes."""
        name = volume["metadata"]["name"]
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if not is_volume_bound_to_claim(volume, claim) or not ref.get("uid"):
            updated = clone(volume)
            updated["spec"]["claimRef"] = claim_reference(claim)
            if not ref:
                updated["metadata"].setdefault("annotations", {})[
                    BOUND_BY_CONTROLLER_ANNOTATION
                ] = "yes"
            volume = await self._client.update(PVS, updated)
        volume = await self._volume_phase(volume, VOLUME_BOUND)
        spec = claim.get("spec") or {}
        notes = annotations_of(claim)
        if spec.get("volumeName") != name or BIND_COMPLETED_ANNOTATION not in notes:
            updated = clone(claim)
            updated_notes = updated["metadata"].setdefault("annotations", {})
            if not spec.get("volumeName"):
                updated_notes[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
            updated_notes[BIND_COMPLETED_ANNOTATION] = "yes"
            updated["spec"]["volumeName"] = name
            claim = await self._client.update(PVCS, updated)
        volume_spec = volume.get("spec") or {}
        current = claim.get("status") or {}
        status = {"phase": CLAIM_BOUND, "accessModes": volume_spec.get("accessModes")}
        # updateClaimStatus: the capacity is set as the claim becomes Bound, not after (a
        # resize leaves the claim's file system size below the volume's until the node
        # expands it); a volume being resized gives the size from before.
        if current.get("phase") != CLAIM_BOUND:
            before = annotations_of(volume).get(PRE_RESIZE_CAPACITY_ANNOTATION)
            capacity = volume_spec.get("capacity")
            status["capacity"] = {**(capacity or {}), "storage": before} if before else capacity
        if any(current.get(k) != v for k, v in status.items()):
            updated = clone(claim)
            updated["status"] = {**current, **status}
            await self._client.update_status(PVCS, updated)

    async def _claim_phase(self, claim: Object, phase: str) -> Object:
        if _phase(claim) == phase:
            return claim
        updated = clone(claim)
        updated.setdefault("status", {})["phase"] = phase
        return await self._client.update_status(PVCS, updated)

    async def _volume_phase(self, volume: Object, phase: str) -> Object:
        if _phase(volume) == phase:
            return volume
        updated = clone(volume)
        status = updated.setdefault("status", {})
        status["phase"] = phase
        status["lastPhaseTransitionTime"] = self._clock.now_rfc3339()
        return await self._client.update_status(PVS, updated)

    # --- provisioning ------------------------------------------------------------------------

    async def _provision(self, claim: Object) -> None:
        """provisionClaim, then the simulated external provisioner's work."""
        class_name = claim_class(claim)
        storage_class = self._classes.get("", class_name)
        if storage_class is None:
            message = f'storageclass.storage.k8s.io "{class_name}" not found'
            self._event(claim, EVENT_TYPE_WARNING, "ProvisioningFailed", message)
            return
        provisioner = str(storage_class.get("provisioner") or "")
        if provisioner == NO_PROVISIONER:
            message = f"no volume plugin matched name: {provisioner}"
            self._event(claim, EVENT_TYPE_WARNING, "ProvisioningFailed", message)
            return
        notes = annotations_of(claim)
        if notes.get(STORAGE_PROVISIONER_ANNOTATION) != provisioner:
            updated = clone(claim)
            updated_notes = updated["metadata"].setdefault("annotations", {})
            updated_notes[STORAGE_PROVISIONER_ANNOTATION] = provisioner
            updated_notes[BETA_STORAGE_PROVISIONER_ANNOTATION] = provisioner
            claim = await self._client.update(PVCS, updated)
        self._event(
            claim,
            EVENT_TYPE_NORMAL,
            "ExternalProvisioning",
            EXTERNAL_PROVISIONING.format(provisioner),
        )
        name = f"pvc-{claim['metadata']['uid']}"
        if self._volumes.get("", name) is not None:
            return
        node = None
        selected = notes.get(SELECTED_NODE_ANNOTATION)
        if selected:
            node = self._nodes.get("", selected)
            if node is None:
                message = f'failed to get target node: node "{selected}" not found'
                self._provisioner_event(
                    provisioner, claim, EVENT_TYPE_WARNING, "ProvisioningFailed", message
                )
                return
        m = claim["metadata"]
        message = (
            f'External provisioner is provisioning volume for claim "{m["namespace"]}/{m["name"]}"'
        )
        self._provisioner_event(provisioner, claim, EVENT_TYPE_NORMAL, "Provisioning", message)
        try:
            await self._client.create(PVS, "", provisioned_volume(name, claim, storage_class, node))
        except StatusError as e:
            if e.code != 409:
                raise
            return
        message = f"Successfully provisioned volume {name}"
        self._provisioner_event(
            provisioner, claim, EVENT_TYPE_NORMAL, "ProvisioningSucceeded", message
        )

    def _event(self, obj: Object, event_type: str, reason: str, message: str) -> None:
        self._recorder.event(obj, event_type, reason, message)

    def _provisioner_event(
        self, provisioner: str, claim: Object, event_type: str, reason: str, message: str
    ) -> None:
        recorder = self._provisioners.get(provisioner)
        if recorder is None:
            recorder = EventRecorder(self._client, f"{provisioner}_pinnace")
            self._provisioners[provisioner] = recorder
        recorder.event(claim, event_type, reason, message)


def provisioned_volume(
    name: str, claim: Object, storage_class: Object, node: Object | None
) -> Object:
    """The volume the simulated provisioner makes for `claim`."""
    provisioner = str(storage_class.get("provisioner") or "")
    spec = claim.get("spec") or {}
    m = claim["metadata"]
    volume_spec: dict[str, Any] = {
        "capacity": {
            "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        },
        "accessModes": list(spec.get("accessModes") or ()),
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or RECLAIM_DELETE,
        "storageClassName": storage_class["metadata"]["name"],
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "claimRef": claim_reference(claim),
    }
    if storage_class.get("mountOptions"):
        volume_spec["mountOptions"] = list(storage_class["mountOptions"])
    if provisioner in LOCAL_PROVISIONERS:
        path = f"{LOCAL_PATH_ROOT}/{name}_{m['namespace']}_{m['name']}"
        volume_spec["hostPath"] = {"path": path, "type": "DirectoryOrCreate"}
    else:
        volume_spec["csi"] = {"driver": provisioner, "volumeHandle": name, "fsType": "ext4"}
    affinity = _node_affinity(provisioner, storage_class, node)
    if affinity:
        volume_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": affinity}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY_ANNOTATION: provisioner}},
        "spec": volume_spec,
    }


def _node_affinity(
    provisioner: str, storage_class: Object, node: Object | None
) -> list[dict[str, Any]]:
    """Where the volume can be used: the selected node's part of the class's
    allowedTopologies, else its hostname (local provisioners) or zone; without a node, all of
    the allowedTopologies."""
    topologies = storage_class.get("allowedTopologies") or []
    if node is None:
        return [_term(t.get("matchLabelExpressions") or []) for t in topologies]
    labels = node["metadata"].get("labels") or {}
    for topology in topologies:
        requirements = topology.get("matchLabelExpressions") or []
        if all(labels.get(r.get("key")) in (r.get("values") or ()) for r in requirements):
            return [_term([{"key": r["key"], "values": [labels[r["key"]]]} for r in requirements])]
    if provisioner not in LOCAL_PROVISIONERS and ZONE_LABEL in labels:
        return [_term([{"key": ZONE_LABEL, "values": [labels[ZONE_LABEL]]}])]
    hostname = labels.get(HOSTNAME_LABEL) or node["metadata"]["name"]
    return [_term([{"key": HOSTNAME_LABEL, "values": [hostname]}])]


def _term(requirements: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "matchExpressions": [
            {"key": r.get("key"), "operator": "In", "values": list(r.get("values") or ())}
            for r in requirements
        ]
    }
