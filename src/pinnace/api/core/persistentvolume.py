"""PersistentVolume and PersistentVolumeClaim (v1): defaulting, strategies and validation as
Kubernetes v1.32 (pkg/apis/core/v1/defaults.go SetDefaults_PersistentVolume and
SetDefaults_PersistentVolumeClaim, pkg/registry/core/persistentvolume{,claim}/strategy.go,
pkg/apis/core/validation ValidatePersistentVolume{,Update} and
ValidatePersistentVolumeClaim{,Update}).

A PV is cluster-scoped and starts in phase Pending (its strategy resets the status and stamps
lastPhaseTransitionTime); a claim starts Pending. Both reset their status on create and keep it
on a spec write; their status endpoints keep the spec. The PV controller
(`pinnace.controllers.persistentvolume`) moves them through their phases.
"""

from __future__ import annotations

import copy
import posixpath
from typing import Any

from pinnace.api import field
from pinnace.api.core.persistentvolume_warnings import (
    persistent_volume_claim_update_warnings,
    persistent_volume_claim_warnings,
    persistent_volume_update_warnings,
    persistent_volume_warnings,
)
from pinnace.api.core.pod_containers import validate_path_no_backsteps
from pinnace.api.core.pod_fields import read_dict, read_list, read_str
from pinnace.api.core.pod_scheduling import validate_node_selector_terms
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_volumes import validate_host_path, validate_nfs
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_label_selector
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_subdomain
from pinnace.api.objects import Object
from pinnace.api.strategy import keep_spec, keep_status
from pinnace.api.validation import parse_quantity_field, validate_immutable

READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
ACCESS_MODES = (READ_ONLY_MANY, READ_WRITE_MANY, READ_WRITE_ONCE, READ_WRITE_ONCE_POD)
"""Sorted, as sets.List gives them in NotSupported's list."""
RECLAIM_DELETE, RECLAIM_RECYCLE, RECLAIM_RETAIN = "Delete", "Recycle", "Retain"
RECLAIM_POLICIES = (RECLAIM_DELETE, RECLAIM_RECYCLE, RECLAIM_RETAIN)
BLOCK, FILESYSTEM = "Block", "Filesystem"
VOLUME_MODES = (BLOCK, FILESYSTEM)

# Phases (core/v1 PersistentVolumePhase and PersistentVolumeClaimPhase).
VOLUME_PENDING, VOLUME_AVAILABLE, VOLUME_BOUND = "Pending", "Available", "Bound"
VOLUME_RELEASED, VOLUME_FAILED = "Released", "Failed"
CLAIM_PENDING, CLAIM_BOUND, CLAIM_LOST = "Pending", "Bound", "Lost"

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

# The persistent volume sources, in ValidatePersistentVolumeSpec's order, with the path
# Kubernetes names each one's errors under (three differ from their JSON names).
PV_SOURCES = (
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephfs"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)
_SOURCE_ERROR_NAMES = {"cephfs": "cephFS"}
_SPEC = Path("spec")
_POSITIVE = "must be greater than zero"


# --- defaulting -------------------------------------------------------------------------------


def default_persistent_volume(pv: Any) -> None:
    """Phase Pending, reclaim policy Retain, volume mode Filesystem, a hostPath's type ""."""
    if not isinstance(pv, dict):
        return
    spec = pv.setdefault("spec", {})
    status = pv.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = VOLUME_PENDING
    if not isinstance(spec, dict):
        return
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = RECLAIM_RETAIN
    if spec.get("volumeMode") is None:
        spec["volumeMode"] = FILESYSTEM
    host_path = child_dict(spec, "hostPath")
    if host_path is not None and host_path.get("type") is None:
        host_path["type"] = ""


def default_persistent_volume_claim(pvc: Any) -> None:
    """Phase Pending, volume mode Filesystem."""
    if not isinstance(pvc, dict):
        return
    spec = pvc.setdefault("spec", {})
    status = pvc.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = CLAIM_PENDING
    if isinstance(spec, dict) and spec.get("volumeMode") is None:
        spec["volumeMode"] = FILESYSTEM


# --- the registry strategies ------------------------------------------------------------------


def _prepare_pv_for_create(pv: Object) -> None:
    """The status is the server's: Pending since the volume was created."""
    created = (pv.get("metadata") or {}).get("creationTimestamp")
    pv["status"] = {"phase": VOLUME_PENDING, "lastPhaseTransitionTime": created}


def _prepare_pvc_for_create(pvc: Object) -> None:
    pvc["status"] = {"phase": CLAIM_PENDING}


# --- validation -------------------------------------------------------------------------------


def _validate_class_name(name: Any, path: Path) -> list[FieldError]:
    if not isinstance(name, str) or not name:
        return []
    return [field.invalid(path, name, m) for m in is_dns1123_subdomain(name)]


def _validate_access_modes(modes: list[Any], path: Path, required_detail: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not modes:
        errs.append(field.required(path, required_detail))
    once_pod = other = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(field.not_supported(path, mode, ACCESS_MODES))
        elif mode == READ_WRITE_ONCE_POD:
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(field.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _validate_positive(value: Any, path: Path) -> list[FieldError]:
    quantity, errs = parse_quantity_field(value, path)
    if quantity is not None and quantity.sign() <= 0:
        errs.append(field.invalid(path, str(quantity), _POSITIVE))
    return errs


def _validate_capacity(capacity: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    capacity = capacity if isinstance(capacity, dict) else {}
    if not capacity:
        errs.append(field.required(path))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(field.not_supported(path, capacity, ("storage",)))
    for name, value in capacity.items():
        errs += _validate_positive(value, path.key(name))
    return errs


def _validate_source(source: str, body: dict[str, Any], path: Path) -> list[FieldError]:
    """The checks of the sources Pinnace's users meet: hostPath, local, nfs and csi."""
    errs: list[FieldError] = []
    if source == "hostPath":
        errs += validate_host_path(body, path)
    elif source == "local":
        local_path = read_str(body, "path", path, errs)
        if not local_path:
            return [*errs, field.required(path.child("path"))]
        errs += validate_path_no_backsteps(local_path, path.child("path"))
    elif source == "nfs":
        errs += validate_nfs(body, path)
    elif source == "csi":
        if not read_str(body, "driver", path, errs):
            errs.append(field.required(path.child("driver")))
        if not read_str(body, "volumeHandle", path, errs):
            errs.append(field.required(path.child("volumeHandle")))
    return errs


def _validate_node_affinity(spec: dict[str, Any], errs: list[FieldError]) -> bool:
    """validateVolumeNodeAffinity: whether one is given."""
    if spec.get("nodeAffinity") is None:
        return False
    path = _SPEC.child("nodeAffinity")
    affinity = read_dict(spec, "nodeAffinity", _SPEC, errs)
    if affinity.get("required") is None:
        errs.append(
            field.required(path.child("required"), "must specify required node constraints")
        )
    else:
        required = read_dict(affinity, "required", path, errs)
        errs += validate_node_selector_terms(required, path.child("required"))
    return True


def _validate_pv_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    modes = read_list(spec, "accessModes", _SPEC, errs)
    errs += _validate_access_modes(modes, _SPEC.child("accessModes"), "")
    errs += _validate_capacity(spec.get("capacity"), _SPEC.child("capacity"))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        path = _SPEC.child("persistentVolumeReclaimPolicy")
        errs.append(field.not_supported(path, policy, RECLAIM_POLICIES))
    has_affinity = _validate_node_affinity(spec, errs)
    count = 0
    for source, error_name in PV_SOURCES:
        body = spec.get(source)
        if body is None:
            continue
        if count and source != "flexVolume":
            name = _SOURCE_ERROR_NAMES.get(source, source)
            errs.append(
                field.forbidden(_SPEC.child(name), "may not specify more than 1 volume type")
            )
            continue
        count += 1
        path = _SPEC.child(error_name)
        errs += _validate_source(source, body if isinstance(body, dict) else {}, path)
        if source == "local" and not has_affinity:
            errs.append(
                field.required(_SPEC.child("nodeAffinity"), "Local volume requires node affinity")
            )
    if not count:
        errs.append(field.required(_SPEC, "must specify a volume type"))
    host_path = as_dict(spec.get("hostPath")).get("path")
    if (
        host_path is not None
        and posixpath.normpath(str(host_path) or ".") == "/"
        and policy == RECLAIM_RECYCLE
    ):
        path = _SPEC.child("persistentVolumeReclaimPolicy")
        errs.append(field.forbidden(path, "may not be 'recycle' for a hostPath mount of '/'"))
    errs += _validate_class_name(spec.get("storageClassName"), _SPEC.child("storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(field.not_supported(_SPEC.child("volumeMode"), mode, VOLUME_MODES))
    return errs


def validate_persistent_volume(pv: Any) -> list[FieldError]:
    errs = validate_object_meta(pv, namespaced=False)
    if not isinstance(pv, dict):
        return errs
    return errs + _validate_pv_spec(as_dict(pv.get("spec")))


def _source_of(spec: dict[str, Any]) -> dict[str, Any]:
    return {name: spec[name] for name, _ in PV_SOURCES if spec.get(name) is not None}


def validate_persistent_volume_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_persistent_volume(new)
    errs = validate_object_meta_update(new, old) + errs
    new_spec, old_spec = as_dict(as_dict(new).get("spec")), as_dict(as_dict(old).get("spec"))
    if _source_of(new_spec) != _source_of(old_spec):
        errs.append(
            field.forbidden(
                Path("spec", "persistentvolumesource"),
                "spec.persistentvolumesource is immutable after creation",
            )
        )
    errs += validate_immutable(
        new_spec.get("volumeMode"), old_spec.get("volumeMode"), Path("volumeMode")
    )
    if old_spec.get("nodeAffinity") is not None:
        errs += validate_immutable(
            new_spec.get("nodeAffinity"), old_spec.get("nodeAffinity"), Path("nodeAffinity")
        )
    return errs


def validate_persistent_volume_status_update(new: Any, old: Any) -> list[FieldError]:
    return validate_object_meta_update(new, old)


def _validate_pvc_spec(spec: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    modes = read_list(spec, "accessModes", path, errs)
    errs += _validate_access_modes(
        modes, path.child("accessModes"), "at least 1 access mode is required"
    )
    selector = spec.get("selector")
    if isinstance(selector, dict):
        errs += validate_label_selector(selector, path.child("selector"))
    requests = as_dict(as_dict(spec.get("resources")).get("requests"))
    storage_path = path.child("resources").key("storage")
    if "storage" not in requests:
        errs.append(field.required(storage_path))
    else:
        errs += _validate_positive(requests["storage"], storage_path)
    class_name = spec.get("storageClassName")
    errs += _validate_class_name(class_name, path.child("storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(field.not_supported(path.child("volumeMode"), mode, VOLUME_MODES))
    for key in ("dataSource", "dataSourceRef"):
        source = spec.get(key)
        if isinstance(source, dict):
            errs += _validate_data_source(source, path.child(key))
    return errs


def validate_claim_spec(spec: Any, path: Path) -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec, for claims and claim templates."""
    return _validate_pvc_spec(as_dict(spec), path)


def _validate_data_source(source: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not source.get("name"):
        errs.append(field.required(path.child("name")))
    kind = source.get("kind") or ""
    if not kind:
        errs.append(field.required(path.child("kind")))
    group = source.get("apiGroup") or ""
    if not group and kind != "PersistentVolumeClaim":
        detail = "must be 'PersistentVolumeClaim' when referencing the default apiGroup"
        errs.append(field.invalid(path, kind, detail))
    if group:
        errs += [
            field.invalid(path.child("apiGroup"), group, m) for m in is_dns1123_subdomain(group)
        ]
    return errs


def validate_persistent_volume_claim(pvc: Any) -> list[FieldError]:
    errs = validate_object_meta(pvc, namespaced=True)
    if not isinstance(pvc, dict):
        return errs
    return errs + _validate_pvc_spec(as_dict(pvc.get("spec")), _SPEC)


def _storage(obj: dict[str, Any], *keys: str) -> Any:
    value: Any = obj
    for key in keys:
        value = as_dict(value).get(key)
    return value


def _take(old: dict[str, Any], new: dict[str, Any], key: str) -> None:
    """Make old[key] what new has (absent stays absent)."""
    if key in new:
        old[key] = new[key]
    else:
        old.pop(key, None)


def validate_persistent_volume_claim_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + validate_persistent_volume_claim(new)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    new_spec = copy.deepcopy(as_dict(new.get("spec")))
    old_spec = copy.deepcopy(as_dict(old.get("spec")))
    if not old_spec.get("volumeName"):  # the PV controller sets it once
        _take(old_spec, new_spec, "volumeName")
    if old_spec.get("storageClassName") is None and not _storage(
        old, "metadata", "annotations", BETA_STORAGE_CLASS_ANNOTATION
    ):  # validateStorageClassUpgradeFromNil: a class may be given to a claim without one
        _take(old_spec, new_spec, "storageClassName")
    bound = as_dict(new.get("status")).get("phase") == CLAIM_BOUND
    new_requests = as_dict(as_dict(new_spec.get("resources")).get("requests"))
    if bound and new_requests:
        old_storage = _storage(old_spec, "resources", "requests", "storage")
        new_requests["storage"] = old_storage
    new_spec.pop("volumeAttributesClassName", None)
    old_spec.pop("volumeAttributesClassName", None)
    if new_spec != old_spec:
        detail = (
            "spec is immutable after creation except resources.requests and "
            "volumeAttributesClassName for bound claims"
        )
        errs.append(field.forbidden(_SPEC, detail))
    new_size, _ = parse_quantity_field(
        _storage(new, "spec", "resources", "requests", "storage"), _SPEC
    )
    old_size, _ = parse_quantity_field(
        _storage(old, "spec", "resources", "requests", "storage"), _SPEC
    )
    # RecoverVolumeExpansionFailure (beta, on in v1.32): a request may come down, to recover
    # from a failed expansion, but not to the capacity the volume has.
    status_size, _ = parse_quantity_field(
        _storage(old, "status", "capacity", "storage") or "0", _SPEC
    )
    if (
        new_size is not None
        and old_size is not None
        and status_size is not None
        and new_size < old_size
        and new_size <= status_size
    ):
        path = Path("spec", "resources", "requests", "storage")
        errs.append(field.forbidden(path, "field can not be less than status.capacity"))
    new_mode = as_dict(new.get("spec")).get("volumeMode")
    old_mode = as_dict(old.get("spec")).get("volumeMode")
    return errs + validate_immutable(new_mode, old_mode, Path("volumeMode"))


def validate_persistent_volume_claim_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    status = as_dict(as_dict(new).get("status"))
    path = Path("status")
    capacity = status.get("capacity")
    if isinstance(capacity, dict):
        for name, value in capacity.items():
            errs += parse_quantity_field(value, path.child("capacity").key(name))[1]
    return errs


# --- kinds ------------------------------------------------------------------------------------

PERSISTENT_VOLUME = Kind(
    group="",
    version="v1",
    kind="PersistentVolume",
    plural="persistentvolumes",
    namespaced=False,
    model="V1PersistentVolume",
    short_names=("pv",),
    subresources=("status",),
    default=default_persistent_volume,
    prepare_for_create=_prepare_pv_for_create,
    prepare_for_update=keep_status,
    prepare_for_status_update=keep_spec,
    validate=validate_persistent_volume,
    validate_update=validate_persistent_volume_update,
    validate_status_update=validate_persistent_volume_status_update,
    warnings_on_create=persistent_volume_warnings,
    warnings_on_update=persistent_volume_update_warnings,
)

PERSISTENT_VOLUME_CLAIM = Kind(
    group="",
    version="v1",
    kind="PersistentVolumeClaim",
    plural="persistentvolumeclaims",
    namespaced=True,
    model="V1PersistentVolumeClaim",
    short_names=("pvc",),
    subresources=("status",),
    default=default_persistent_volume_claim,
    prepare_for_create=_prepare_pvc_for_create,
    prepare_for_update=keep_status,
    prepare_for_status_update=keep_spec,
    validate=validate_persistent_volume_claim,
    validate_update=validate_persistent_volume_claim_update,
    validate_status_update=validate_persistent_volume_claim_status_update,
    warnings_on_create=persistent_volume_claim_warnings,
    warnings_on_update=persistent_volume_claim_update_warnings,
)
