"""Ephemeral containers in the API (GA since v1.25): the pods/ephemeralcontainers subresource,
as pkg/registry/core/pod/strategy.go (podEphemeralContainersStrategy,
dropNonEphemeralContainerUpdates) and pkg/apis/core/validation
(ValidatePodEphemeralContainersUpdate) of v1.32.

A write to pods/ephemeralcontainers (GET, PUT, or PATCH as `kubectl debug` sends it) takes only
spec.ephemeralContainers from the request; the rest of the spec, the status, and the labels,
annotations, finalizers and owner references are the stored pod's. Validation then checks the
pod as a whole (an ephemeral container's own rules, such as no resources or probes and a name
unique across the pod's containers, are `pod_containers`' create-time ones), and that existing
ephemeral containers are neither removed nor changed: they may only be added. A static pod's
mirror takes none.
"""

from __future__ import annotations

from pinnace.api import field
from pinnace.api.core.pod_shape import Obj, as_dict
from pinnace.api.core.pod_update import _semantic as semantic_form
from pinnace.api.core.pod_validation import (
    MIRROR_POD_ANNOTATION,
    SPEC,
    validate_pod_metadata_and_spec,
)
from pinnace.api.field import FieldError, Path
from pinnace.api.meta import validate_object_meta_update

EPHEMERAL_CONTAINERS = "ephemeralContainers"
_RESET_METADATA = ("deletionTimestamp", "labels", "annotations", "finalizers", "ownerReferences")
"""What metav1.ResetObjectMetaForStatus puts back from the stored object (generation is the
update path's own)."""


def prepare_pod_for_ephemeral_containers(new: Obj, old: Obj) -> None:
    """podEphemeralContainersStrategy.PrepareForUpdate: the stored pod but for the
    ephemeral containers the write has. The kept parts are the stored object's own, shared
    as in `prepare_pod_for_update`."""
    containers = as_dict(new.get("spec")).get(EPHEMERAL_CONTAINERS)
    spec = dict(as_dict(old.get("spec")))
    if containers is None:
        spec.pop(EPHEMERAL_CONTAINERS, None)
    else:
        spec[EPHEMERAL_CONTAINERS] = containers
    new["spec"] = spec
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)
    meta, old_meta = new.get("metadata"), as_dict(old.get("metadata"))
    if not isinstance(meta, dict):
        return
    for key in _RESET_METADATA:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)


def validate_pod_ephemeral_containers_update(new: Obj, old: Obj) -> list[FieldError]:
    """ValidatePodEphemeralContainersUpdate: the pod stays valid, a static pod's mirror takes
    no ephemeral container, and the existing ones are kept as they were (matched by name, as
    a patch need not keep their order)."""
    errs = validate_object_meta_update(new, old)
    errs += validate_pod_metadata_and_spec(new)
    annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    if MIRROR_POD_ANNOTATION in annotations:
        return [field.forbidden(Path(""), "static pods do not support ephemeral containers")]
    path = SPEC.child(EPHEMERAL_CONTAINERS)
    wanted = {c.get("name"): c for c in _containers(new)}
    for container in _containers(old):
        name = container.get("name")
        kept = wanted.get(name)
        if kept is None:
            message = f'existing ephemeral containers "{name}" may not be removed\n'
            errs.append(field.forbidden(path, message))
        elif semantic_form(kept) != semantic_form(container):
            # kube-apiserver follows the message with a cmp.Diff of the two, a text its
            # authors keep deliberately unstable: left out here.
            message = f'existing ephemeral containers "{name}" may not be changed\n'
            errs.append(field.forbidden(path, message))
    return errs


def _containers(pod: Obj) -> list[Obj]:
    value = as_dict(pod.get("spec")).get(EPHEMERAL_CONTAINERS)
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []
