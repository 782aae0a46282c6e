"""Persistent volume helpers the PV controller, the scheduler's volume plugins and the kubelet
share, as Kubernetes v1.32's component-helpers/storage/volume and
pkg/controller/volume/persistentvolume/util: a claim's and a volume's class, whether a volume
is bound to a claim, a volume's node affinity, and FindMatchingVolume (the smallest available
volume that satisfies a claim)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.api.labels import selector_from_dict
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import Quantity
from pinnace.scheduling.nodeaffinity import NodeSelector, NodeSelectorError

Obj = Mapping[str, Any]

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"
STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner"
PRE_RESIZE_CAPACITY_ANNOTATION = "volume.alpha.kubernetes.io/pre-resize-capacity"
AVAILABLE = "Available"


def _section(obj: Any, *path: str) -> dict[str, Any]:
    for key in path:
        # The scheduler asks for every pod's claims: a dict skips Mapping's ABC check.
        obj = obj.get(key) if type(obj) is dict or isinstance(obj, Mapping) else None
    return obj if isinstance(obj, dict) else {}


def pod_claims(pod: Obj) -> list[tuple[str, bool]]:
    """The claims a pod's volumes use, in order, each with whether it is a generic ephemeral
    volume's: a persistentVolumeClaim volume names its claim, an ephemeral volume's claim is
    `<pod>-<volume>` (component-helpers/storage/ephemeral's VolumeClaimName)."""
    claims = []
    pod_name = _section(pod, "metadata").get("name")
    for volume in _section(pod, "spec").get("volumes") or ():
        if not (type(volume) is dict or isinstance(volume, Mapping)):
            continue
        # Most volumes are neither (a token's): None is told apart before the ABC checks.
        source = volume.get("persistentVolumeClaim")
        if source is not None and isinstance(source, Mapping) and source.get("claimName"):
            claims.append((str(source["claimName"]), False))
        elif (ephemeral := volume.get("ephemeral")) is not None and isinstance(ephemeral, Mapping):
            claims.append((f"{pod_name}-{volume.get('name')}", True))
    return claims


def pod_claim_names(pod: Obj) -> list[str]:
    """The claims a pod's persistentVolumeClaim volumes name, in order (what VolumeZone and
    VolumeRestrictions read; `pod_claims` has the ephemeral volumes' too)."""
    return [name for name, ephemeral in pod_claims(pod) if not ephemeral]


def pod_all_claim_names(pod: Obj) -> list[str]:
    """The names of every claim a pod's volumes use (`pod_claims`)."""
    return [name for name, _ in pod_claims(pod)]


def claim_not_for_pod(pod: Obj, claim: Obj) -> str | None:
    """VolumeIsForPod: why an ephemeral volume's claim is not the pod's (the pod does not
    control it), None when it is."""
    pod_meta, meta = _section(pod, "metadata"), _section(claim, "metadata")
    owned = any(
        isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid") == pod_meta.get("uid")
        for ref in meta.get("ownerReferences") or ()
    )
    if owned and meta.get("namespace") == pod_meta.get("namespace"):
        return None
    return (
        f"PVC {meta.get('namespace')}/{meta.get('name')} was not created for pod "
        f"{pod_meta.get('namespace')}/{pod_meta.get('name')} (pod is not owner)"
    )


def annotations_of(obj: Obj) -> dict[str, str]:
    return _section(obj, "metadata", "annotations")


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName."""
    found = annotations_of(claim).get(BETA_STORAGE_CLASS_ANNOTATION)
    if found is not None:
        return found
    return str(_section(claim, "spec").get("storageClassName") or "")


def volume_class(volume: Obj) -> str:
    """GetPersistentVolumeClass."""
    found = annotations_of(volume).get(BETA_STORAGE_CLASS_ANNOTATION)
    if found is not None:
        return found
    return str(_section(volume, "spec").get("storageClassName") or "")


def storage_of(resources: Mapping[str, Any]) -> Quantity:
    value = resources.get("storage")
    return parse_quantity(value) if value is not None else parse_quantity(0)


def requested_storage(claim: Obj) -> Quantity:
    return storage_of(_section(claim, "spec", "resources", "requests"))


def capacity(volume: Obj) -> Quantity:
    return storage_of(_section(volume, "spec", "capacity"))


def is_volume_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: the claimRef names the claim, and its uid if it has one."""
    ref = _section(volume, "spec", "claimRef")
    meta = claim["metadata"]
    if not ref or ref.get("name") != meta["name"] or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def check_node_affinity(volume: Obj, labels: Mapping[str, str], node_name: str) -> bool:
    """CheckNodeAffinity: a volume without required node affinity fits every node."""
    required = _section(volume, "spec", "nodeAffinity", "required")
    if not required:
        return True
    try:
        return NodeSelector(required).matches(labels, node_name)
    except NodeSelectorError:
        return False


def _volume_mode(obj: Obj) -> str:
    return str(_section(obj, "spec").get("volumeMode") or "Filesystem")


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    return selector_from_dict(selector).matches(labels)


def find_matching_volume(
    claim: Obj,
    volumes: Iterable[Obj],
    node: tuple[Mapping[str, str], str] | None = None,
    delay_binding: bool = False,
) -> Obj | None:
    """FindMatchingVolume: a volume pre-bound to the claim if one fits, else the smallest
    Available one of the claim's class whose access modes include the claim's, whose labels its
    selector matches, and, given a node (its labels and name), whose node affinity the node
    meets. Without a node, a claim whose binding waits for its first consumer matches none
    but its pre-bound volume: the scheduler binds it."""
    requested = requested_storage(claim)
    wanted_modes = set(_section(claim, "spec").get("accessModes") or ())
    selector = _section(claim, "spec").get("selector")
    requested_class = claim_class(claim)
    best: Obj | None = None
    best_key: tuple[Quantity, str] | None = None
    for volume in volumes:
        if not wanted_modes <= set(_section(volume, "spec").get("accessModes") or ()):
            continue
        size = capacity(volume)
        if size < requested or _volume_mode(volume) != _volume_mode(claim):
            continue
        if (volume.get("metadata") or {}).get("deletionTimestamp"):
            continue
        fits_node = node is None or check_node_affinity(volume, *node)
        if is_volume_bound_to_claim(volume, claim):
            if fits_node:
                return volume
            continue
        if _section(volume, "spec", "claimRef"):
            continue  # bound, or pre-bound to another claim
        if _section(volume, "status").get("phase") != AVAILABLE:
            continue
        if selector is not None and not _selector_matches(
            selector, _section(volume, "metadata", "labels")
        ):
            continue
        if volume_class(volume) != requested_class or not fits_node:
            continue
        if node is None and delay_binding:
            continue
        key = (size, str(volume["metadata"]["name"]))
        if best_key is None or key < best_key:
            best, best_key = volume, key
    return best
