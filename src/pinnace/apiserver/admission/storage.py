"""DefaultStorageClass, StorageObjectInUseProtection and PersistentVolumeClaimResize, as
kube-apiserver v1.32's admission plugins of those names
(plugin/pkg/admission/storage/storageclass/setdefault,
plugin/pkg/admission/storage/storageobjectinuseprotection and
plugin/pkg/admission/storage/persistentvolume/resize).

A claim created without `storageClassName` (and without the beta class annotation) gets the
default class: of the classes annotated as default, the newest, ties going to the first name.
A claim that names a class, even "", keeps it. Every new claim and volume gets the protection
finalizer, which the pvc-protection and pv-protection controllers remove once nothing uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pinnace.api.core.persistentvolume import (
    BETA_STORAGE_CLASS_ANNOTATION,
)
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.objects import Object
from pinnace.api.storage.storageclass import is_default_class
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import Quantity


def default_class(
    classes: Iterable[Object], is_default: Callable[[Object], bool] = is_default_class
) -> Object | None:
    """GetDefaultClass: the newest default class, by name among equally new ones (of
    StorageClasses unless `is_default` says which classes are defaults)."""
    defaults = [c for c in classes if is_default(c)]
    if not defaults:
        return None
    defaults.sort(key=lambda c: c["metadata"]["name"])
    # RFC 3339 timestamps of one format sort as they compare; a stable sort keeps the names'
    # order among equal ones.
    defaults.sort(key=lambda c: str(c["metadata"].get("creationTimestamp") or ""), reverse=True)
    return defaults[0]


def admit_claim(pvc: Object, classes: Iterable[Object]) -> None:
    """DefaultStorageClass on a claim's create, in place."""
    spec = pvc.get("spec")
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    annotations = as_dict(as_dict(pvc.get("metadata")).get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return
    found = default_class(classes)
    if found is not None:
        spec["storageClassName"] = found["metadata"]["name"]


def add_finalizer(obj: Object, finalizer: str) -> None:
    """StorageObjectInUseProtection on a create, in place."""
    meta: Any = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    finalizers = meta.get("finalizers") or []
    if isinstance(finalizers, list) and finalizer not in finalizers:
        meta["finalizers"] = [*finalizers, finalizer]


def _claim_class(pvc: Object) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName."""
    annotations = as_dict(as_dict(pvc.get("metadata")).get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str(as_dict(pvc.get("spec")).get("storageClassName") or "")


def _requested_storage(pvc: Object) -> Quantity:
    requests = as_dict(as_dict(as_dict(pvc.get("spec")).get("resources")).get("requests"))
    return parse_quantity(requests.get("storage") or 0)


def validate_claim_resize(pvc: Object, old: Object, classes: Mapping[str, Object]) -> str | None:
    """PersistentVolumeClaimResize (plugin/pkg/admission/storage/persistentvolume/resize): why
    a larger storage request is refused, None when it may grow. Only a bound claim grows, and
    only when its class, unchanged, allows volume expansion."""
    new_size = _requested_storage(pvc)
    if new_size <= _requested_storage(old):
        return None
    if as_dict(old.get("status")).get("phase") != "Bound":
        return "Only bound persistent volume claims can be expanded"
    name = _claim_class(pvc)
    found = classes.get(name) if name and name == _claim_class(old) else None
    if found is None or found.get("allowVolumeExpansion") is not True:
        return (
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize"
        )
    return None
