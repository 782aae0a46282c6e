"""Namespace (v1): defaulting, the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import (
    FINALIZER_KUBERNETES,
    validate_finalizer_name,
    validate_object_meta,
    validate_object_meta_update,
)
from pinnace.api.names import is_dns1123_label
from pinnace.api.strategy import keep_old, keep_spec, keep_status
from pinnace.api.validation import object_field, string_list

NAMESPACE_ACTIVE = "Active"
NAMESPACE_TERMINATING = "Terminating"
LABEL_METADATA_NAME = "kubernetes.io/metadata.name"


def default_namespace(ns: dict[str, Any]) -> None:
    meta = ns.get("metadata")
    # A namespace carries its own name as a label, so selectors can pick namespaces by name.
    if isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]:
        if meta.get("labels") is None:
            meta["labels"] = {}
        labels = meta["labels"]
        if isinstance(labels, dict):
            labels[LABEL_METADATA_NAME] = meta["name"]
    if ns.get("status") is None:
        ns["status"] = {}
    status = ns["status"]
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = NAMESPACE_ACTIVE


def prepare_namespace_for_create(ns: dict[str, Any]) -> None:
    ns["status"] = {"phase": NAMESPACE_ACTIVE}
    spec = ns.get("spec")
    if not isinstance(spec, dict):
        spec = ns["spec"] = {}
    finalizers = spec.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = spec["finalizers"] = []
    if FINALIZER_KUBERNETES not in finalizers:
        finalizers.append(FINALIZER_KUBERNETES)


def prepare_namespace_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """spec.finalizers change only through the finalize subresource, status through status."""
    spec = new.get("spec")
    if not isinstance(spec, dict):
        spec = new["spec"] = {}
    keep_old(spec, old.get("spec"), "finalizers")
    if not spec:
        new.pop("spec")
    keep_old(new, old, "status")


def prepare_namespace_for_finalize(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The finalize endpoint writes spec.finalizers only; emptied, they are left out, as Go's
    omitempty writes no empty list."""
    keep_status(new, old)
    spec = new.get("spec")
    if isinstance(spec, dict) and spec.get("finalizers") == []:
        del spec["finalizers"]


def validate_namespace(ns: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(ns, namespaced=False, name_rule=is_dns1123_label)
    path = Path("spec", "finalizers")
    finalizers, e = _finalizers(ns, path)
    errs += e
    for name in finalizers:
        errs += validate_finalizer_name(name, path)
    return errs


def validate_namespace_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old)


def validate_namespace_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    meta, _ = object_field(new.get("metadata"), Path("metadata"))
    status, e = object_field(new.get("status"), Path("status"))
    errs += e
    phase = status.get("phase") or ""
    path = Path("status", "Phase")  # capitalised as kube-apiserver reports it
    if not meta.get("deletionTimestamp"):
        if phase != NAMESPACE_ACTIVE:
            errs.append(
                field.invalid(path, phase, "may only be 'Active' if `deletionTimestamp` is empty")
            )
    elif phase != NAMESPACE_TERMINATING:
        errs.append(
            field.invalid(
                path, phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"
            )
        )
    return errs


def validate_namespace_finalize_update(
    new: dict[str, Any], old: dict[str, Any]
) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    path = Path("spec", "finalizers")
    finalizers, e = _finalizers(new, path)
    errs += e
    for i, name in enumerate(finalizers):
        errs += validate_finalizer_name(name, path.index(i))
    return errs


def _finalizers(ns: dict[str, Any], path: Path) -> tuple[list[str], list[FieldError]]:
    spec, errs = object_field(ns.get("spec"), Path("spec"))
    finalizers, e = string_list(spec.get("finalizers"), path)
    return finalizers, errs + e


NAMESPACE = Kind(
    group="",
    version="v1",
    kind="Namespace",
    plural="namespaces",
    namespaced=False,
    model="V1Namespace",
    short_names=("ns",),
    subresources=("finalize", "status"),
    # v1.32 serves no deletecollection on namespaces.
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    default=default_namespace,
    prepare_for_create=prepare_namespace_for_create,
    prepare_for_update=prepare_namespace_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_namespace,
    validate_update=validate_namespace_update,
    validate_status_update=validate_namespace_status_update,
    subresource_updates={
        "finalize": (prepare_namespace_for_finalize, validate_namespace_finalize_update)
    },
)
