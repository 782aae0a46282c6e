"""StorageClass (storage.k8s.io/v1): defaulting and validation as Kubernetes v1.32
(pkg/apis/storage/v1/defaults.go, pkg/apis/storage/validation ValidateStorageClass{,Update}),
and the default-class annotations (pkg/apis/storage/util IsDefaultAnnotation).

A class names the provisioner that makes volumes for its claims, the reclaim policy those
volumes get (Delete by default), and when they are bound: at once (Immediate, the default) or
once a pod using the claim is scheduled (WaitForFirstConsumer), within its allowedTopologies.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_label_name
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_qualified_name
from pinnace.api.validation import validate_immutable

IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)
RECLAIM_POLICIES = ("Delete", "Retain")
IS_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
MAX_PARAMETERS = 512
MAX_PARAMETERS_SIZE = 256 * 1024


def is_default_class(storage_class: Any) -> bool:
    """IsDefaultAnnotation: either annotation says "true"."""
    annotations = as_dict(as_dict(as_dict(storage_class).get("metadata")).get("annotations"))
    return "true" in (annotations.get(IS_DEFAULT_CLASS), annotations.get(BETA_IS_DEFAULT_CLASS))


def binding_mode(storage_class: Any) -> str:
    return as_dict(storage_class).get("volumeBindingMode") or IMMEDIATE


def default_storage_class(sc: Any) -> None:
    if not isinstance(sc, dict):
        return
    if not sc.get("reclaimPolicy"):
        sc["reclaimPolicy"] = "Delete"
    if not sc.get("volumeBindingMode"):
        sc["volumeBindingMode"] = IMMEDIATE


def _validate_parameters(params: Any) -> list[FieldError]:
    path = Path("parameters")
    params = params if isinstance(params, dict) else {}
    errs: list[FieldError] = []
    if len(params) > MAX_PARAMETERS:
        errs.append(
            field.too_long(path, "Provisioner Parameters exceeded max allowed", MAX_PARAMETERS)
        )
        return errs
    total = 0
    for key, value in params.items():
        if not key:
            errs.append(field.invalid(path, key, "field can not be empty."))
        total += len(key) + len(str(value))
    if total > MAX_PARAMETERS_SIZE:
        errs.append(field.too_long(path, "", MAX_PARAMETERS_SIZE))
    return errs


def validate_allowed_topologies(topologies: Any, path: Path) -> list[FieldError]:
    """validateAllowedTopologies: each term's requirements well formed, no term twice."""
    errs: list[FieldError] = []
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(topologies if isinstance(topologies, list) else ()):
        exprs: dict[str, frozenset[str]] = {}
        term_path = path.index(i)
        requirements = as_dict(term).get("matchLabelExpressions") or []
        for j, req in enumerate(requirements if isinstance(requirements, list) else ()):
            req_path = term_path.child("matchLabelExpressions").index(j)
            req = as_dict(req)
            values = req.get("values") or []
            if not values:
                errs.append(
                    field.required(req_path.child("values"), "must specify as least one value")
                )
            for k, value in enumerate(values):
                if value in values[:k]:
                    errs.append(field.duplicate(req_path.child("values").index(k), value))
            key = str(req.get("key") or "")
            errs += validate_label_name(key, req_path.child("key"))
            if key in exprs:
                errs.append(field.duplicate(req_path.child("key"), key))
            exprs[key] = frozenset(map(str, values))
        if exprs in seen:
            errs.append(field.duplicate(term_path.child("matchLabelExpressions"), ""))
        seen.append(exprs)
    return errs


def validate_storage_class(sc: Any) -> list[FieldError]:
    errs = validate_object_meta(sc, namespaced=False)
    if not isinstance(sc, dict):
        return errs
    provisioner = str(sc.get("provisioner") or "")
    if not provisioner:
        errs.append(field.required(Path("provisioner")))
    else:
        errs += [
            field.invalid(Path("provisioner"), provisioner.lower(), m)
            for m in is_qualified_name(provisioner.lower())
        ]
    errs += _validate_parameters(sc.get("parameters"))
    policy = sc.get("reclaimPolicy")
    if policy and policy not in RECLAIM_POLICIES:
        errs.append(field.not_supported(Path("reclaimPolicy"), policy, RECLAIM_POLICIES))
    mode = sc.get("volumeBindingMode")
    if mode is None:
        errs.append(field.required(Path("volumeBindingMode")))
    elif mode not in BINDING_MODES:
        errs.append(field.not_supported(Path("volumeBindingMode"), mode, BINDING_MODES))
    return errs + validate_allowed_topologies(
        sc.get("allowedTopologies"), Path("allowedTopologies")
    )


def validate_storage_class_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    new, old = as_dict(new), as_dict(old)
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(field.forbidden(Path("parameters"), "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(field.forbidden(Path("provisioner"), "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(
            field.forbidden(Path("reclaimPolicy"), "updates to reclaimPolicy are forbidden.")
        )
    errs += validate_immutable(
        new.get("volumeBindingMode"), old.get("volumeBindingMode"), Path("volumeBindingMode")
    )
    return validate_storage_class(new) + errs


STORAGE_CLASS = Kind(
    group="storage.k8s.io",
    version="v1",
    kind="StorageClass",
    plural="storageclasses",
    namespaced=False,
    model="V1StorageClass",
    short_names=("sc",),
    default=default_storage_class,
    validate=validate_storage_class,
    validate_update=validate_storage_class_update,
)
