"""In-place pod resize in the API (KEP-1287, InPlacePodVerticalScaling, alpha in v1.32): the
pods/resize subresource, the resizePolicy defaults and checks, and what the API server drops
while the feature gates are off. As pkg/registry/core/pod/strategy.go (podResizeStrategy),
pkg/api/pod/util.go (dropDisabledFields, MarkPodProposedForResize),
pkg/apis/core/v1/defaults.go (SetDefaults_Pod) and pkg/apis/core/validation
(ValidatePodResize, validateResizePolicy) of v1.32.

A write to pods/resize keeps the stored pod but for the regular containers' `resources` and
`resizePolicy` (matched by name); status.resize becomes Proposed when a container's resources
changed. Validation then lets only cpu and memory change, and not the pod's QoS class. In
v1.32 a write to the pod itself may no longer change resources (`validate_pod_spec_update`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Set
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_containers import NOT_REQUIRED, RESIZE_RESOURCES
from pinnace.api.core.pod_shape import CONTAINER_LISTS, Obj, as_dict, as_list, dict_items
from pinnace.api.core.pod_validation import (
    MIRROR_POD_ANNOTATION,
    SPEC,
    validate_pod_metadata_and_spec,
)
from pinnace.api.features import FeatureGates
from pinnace.api.field import FieldError, Path
from pinnace.resources.qos import qos_class, recorded_qos_class
from pinnace.resources.quantity import Quantity, QuantityError

PROPOSED = "Proposed"
IN_PROGRESS = "InProgress"
DEFERRED = "Deferred"
INFEASIBLE = "Infeasible"
"""status.resize, as v1.32 spells its PodResizeStatus values."""


def default_resize_policy(pod: Obj, gates: FeatureGates) -> None:
    """SetDefaults_Pod with the gate on: a regular container that requests cpu or memory gets
    a NotRequired resizePolicy for each it has none for."""
    if not gates.in_place_pod_vertical_scaling:
        return
    for _, ctr in dict_items(as_dict(pod.get("spec")).get("containers")):
        requests = as_dict(ctr.get("resources")).get("requests")
        if not isinstance(requests, dict):
            continue
        policies = ctr.get("resizePolicy")
        if not isinstance(policies, list):
            policies = []
        named = {p.get("resourceName") for _, p in dict_items(policies)}
        added = [
            {"resourceName": name, "restartPolicy": NOT_REQUIRED}
            for name in RESIZE_RESOURCES
            if name in requests and name not in named
        ]
        if added:
            ctr["resizePolicy"] = [*policies, *added]


def drop_disabled_pod_fields(new: Obj, old: Obj | None, gates: FeatureGates) -> None:
    """DropDisabledPodFields for in-place resize: with its gate off, resizePolicy and the
    status it owns go (unless the stored pod already uses resizePolicy); allocatedResources
    goes unless InPlacePodVerticalScalingAllocatedStatus is on too."""
    status = as_dict(new.get("status"))
    dropped = _droppable(gates)
    if old is not None and new.get("spec") is old.get("spec") and not _status_has(status, dropped):
        # The stored spec (a status write keeps it), whose drops were made when it was
        # stored, and a status without any field the gates could drop: nothing to do.
        return
    if not gates.in_place_pod_vertical_scaling:
        if old is not None and _uses_resize_policy(as_dict(old.get("spec"))):
            dropped = dropped - _RESIZE  # in use: kept
        else:
            for list_name in CONTAINER_LISTS:
                for _, ctr in dict_items(as_dict(new.get("spec")).get(list_name)):
                    ctr.pop("resizePolicy", None)
    if _status_has(status, dropped):
        # A copy: the status may be the stored pod's own (kept by the update's strategy).
        status = new["status"] = copy.deepcopy(new["status"])
        if "resize" in dropped:
            status.pop("resize", None)
        for s in _container_statuses(status):
            for key in dropped:
                s.pop(key, None)


def template_dropper(*path: str) -> Callable[[Obj, Obj | None, FeatureGates], None]:
    """DropDisabledTemplateFields for the pod template at `path` of a workload: with the gate
    off, its containers' resizePolicy goes, unless the stored template already uses it."""

    def drop(new: Obj, old: Obj | None, gates: FeatureGates) -> None:
        if gates.in_place_pod_vertical_scaling:
            return
        if old is not None and _uses_resize_policy(_template_spec(old, path)):
            return
        spec = _template_spec(new, path)
        for list_name in CONTAINER_LISTS:
            for _, ctr in dict_items(spec.get(list_name)):
                ctr.pop("resizePolicy", None)

    return drop


def _template_spec(obj: Obj, path: tuple[str, ...]) -> Obj:
    for key in (*path, "spec"):
        obj = as_dict(obj.get(key))
    return obj


_STATUS_LISTS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")


def _container_statuses(status: Obj) -> list[Obj]:
    return [s for key in _STATUS_LISTS for _, s in dict_items(status.get(key))]


def _droppable(gates: FeatureGates) -> frozenset[str]:
    """The status fields `drop_disabled_pod_fields` may drop with these gates."""
    if not gates.in_place_pod_vertical_scaling:
        return _RESIZE_STATUS
    return frozenset() if gates.allocated_status else _ALLOCATED


_ALLOCATED = frozenset({"allocatedResources"})
_RESIZE = frozenset({"resources", "resize"})
"""What a status loses with the resize gate off, unless the stored pod uses resizePolicy."""
_RESIZE_STATUS = _RESIZE | _ALLOCATED
"""All a status may lose with the resize gate off (AllocatedStatus needs it on)."""


def _status_has(status: Obj, dropped: Set[str]) -> bool:
    """Whether the pod status holds one of the `dropped` fields (`resize` at its top, the
    others in its container statuses)."""
    if "resize" in dropped and "resize" in status:
        return True
    in_entries = [key for key in dropped if key != "resize"]
    if not in_entries:
        return False
    for list_name in _STATUS_LISTS:
        entries = status.get(list_name)
        if not isinstance(entries, list):
            continue
        for s in entries:
            if isinstance(s, dict) and any(key in s for key in in_entries):
                return True
    return False


def _uses_resize_policy(spec: Obj) -> bool:
    return any(
        ctr.get("resizePolicy") for name in CONTAINER_LISTS for _, ctr in dict_items(spec.get(name))
    )


def prepare_pod_for_resize(new: Obj, old: Obj) -> None:
    """podResizeStrategy.PrepareForUpdate: the stored pod, but for its regular containers'
    resources and resizePolicy as the write has them (by name), and status.resize Proposed
    when those resources changed."""
    wanted = {
        ctr.get("name"): ctr for _, ctr in dict_items(as_dict(new.get("spec")).get("containers"))
    }
    kept_metadata = {k: as_dict(new.get("metadata")).get(k) for k in ("name", "namespace", "uid")}
    new.clear()
    new.update(copy.deepcopy(old))
    metadata = as_dict(new.get("metadata"))
    metadata.update({k: v for k, v in kept_metadata.items() if v is not None})
    changed = False
    for _, ctr in dict_items(as_dict(new.get("spec")).get("containers")):
        write = wanted.get(ctr.get("name"))
        if write is None:
            continue
        for key in ("resources", "resizePolicy"):
            if key in write:
                ctr[key] = write[key]
            else:
                ctr.pop(key, None)
        old_resources = ctr_resources(old, ctr.get("name"))
        if "requests" in as_dict(write.get("resources")) and not same_resources(
            old_resources, as_dict(write.get("resources"))
        ):
            changed = True
    if changed:
        new["status"] = {**as_dict(new.get("status")), "resize": PROPOSED}


def ctr_resources(pod: Obj, name: Any) -> Obj:
    for _, ctr in dict_items(as_dict(pod.get("spec")).get("containers")):
        if ctr.get("name") == name:
            return as_dict(ctr.get("resources"))
    return {}


def same_resources(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal requests and limits, quantities compared by value (1 is 1000m)."""
    return all(_quantities(a.get(key)) == _quantities(b.get(key)) for key in ("requests", "limits"))


def _quantities(resources: Any) -> dict[str, Any]:
    parsed: dict[str, Any] = {}
    for name, value in as_dict(resources).items():
        try:
            parsed[name] = Quantity(value)
        except (QuantityError, TypeError, ValueError):
            parsed[name] = value
    return parsed


def validate_pod_resize(new: Obj, old: Obj) -> list[FieldError]:
    """ValidatePodResize: the pod as a whole stays valid; static and Windows pods cannot be
    resized; only cpu and memory may change, and not so that the QoS class changes."""
    errs = validate_pod_metadata_and_spec(new)
    annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    if MIRROR_POD_ANNOTATION in annotations:
        return [field.forbidden(Path(""), "static pods cannot be resized")]
    if as_dict(as_dict(old.get("spec")).get("os")).get("name") == "windows":
        return [field.forbidden(Path(""), "windows pods cannot be resized")]
    try:
        old_class, new_class = recorded_qos_class(old), qos_class(new)
    except (TypeError, ValueError):
        return errs  # resources that do not parse were reported above
    if old_class != new_class:
        shown = as_dict(new.get("status")).get("qosClass", "")
        errs.append(field.invalid(SPEC, shown, "Pod QoS is immutable"))
    if _other_resources_changed(new, old):
        errs.append(field.forbidden(SPEC, "only cpu and memory resources are mutable"))
    return errs


def _other_resources_changed(new: Obj, old: Obj) -> bool:
    """Whether a resource other than cpu and memory changed: each of a container's lists is
    compared with cpu and memory left out, and a list the stored container does not have at
    all is not compared, as v1.32's dropCPUMemoryUpdates does."""
    old_ctrs = as_list(as_dict(old.get("spec")).get("containers"))
    for i, ctr in dict_items(as_dict(new.get("spec")).get("containers")):
        if i >= len(old_ctrs) or not isinstance(old_ctrs[i], dict):
            return True
        resources, old_resources = (
            as_dict(ctr.get("resources")),
            as_dict(old_ctrs[i].get("resources")),
        )
        for key in ("requests", "limits"):
            if old_resources.get(key) is None:
                continue
            others = {
                k: v
                for k, v in _quantities(resources.get(key)).items()
                if k not in RESIZE_RESOURCES
            }
            old_others = {
                k: v
                for k, v in _quantities(old_resources.get(key)).items()
                if k not in RESIZE_RESOURCES
            }
            if others != old_others:
                return True
    return False
