"""VerticalPodAutoscaler (autoscaling.k8s.io/v1), served as a built-in kind with what
kube-apiserver does for the CRD kubernetes/autoscaler installs (vertical-pod-autoscaler/deploy/
vpa-v1-crd-gen.yaml): the status subresource (a create or spec write drops status, a status
write keeps spec, generation counts spec changes), and its OpenAPI schema's checks: `spec` and
`spec.targetRef` (kind and name) required, the enums of updateMode, mode, controlledValues and
changeRequirement. The VPA admission webhook's own checks of a VPA are not made. No field has
a default: the components read an unset updateMode or mode as Auto, unset controlledValues as
RequestsAndLimits.
"""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.apps import SPEC, bump_generation, spec_changed
from pinnace.api.core.pod_shape import child_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.objects import Object
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import list_field, object_field

GROUP = "autoscaling.k8s.io"
UPDATE_MODES = ("Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto")
"""VPA 1.4's CRD enum (InPlaceOrRecreate is its alpha mode)."""
SCALING_MODES = ("Auto", "Off")
CONTROLLED_VALUES = ("RequestsAndLimits", "RequestsOnly")
CHANGE_REQUIREMENTS = ("TargetHigherThanRequests", "TargetLowerThanRequests")
QUANTITY_PATTERN = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern of the CRD's quantities (resource.Quantity's OpenAPI schema)."""
DEFAULT_CONTAINER = "*"
"""A containerPolicies entry for every container without one of its own."""


def prepare_vpa_for_create(vpa: Object) -> None:
    vpa.pop("status", None)
    meta = child_dict(vpa, "metadata")
    if meta is not None:
        meta["generation"] = 1


def prepare_vpa_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


def _enum(obj: Object, name: str, allowed: tuple[str, ...], path: Path) -> list[FieldError]:
    value = obj.get(name)
    if value is None or value in allowed:
        return []
    return [field.not_supported(path.child(name), value, allowed)]


def _required_string(obj: Object, name: str, path: Path) -> list[FieldError]:
    return [] if obj.get(name) else [field.required(path.child(name), "")]


def _validate_update_policy(value: Any, path: Path) -> list[FieldError]:
    policy, errs = object_field(value, path)
    errs += _enum(policy, "updateMode", UPDATE_MODES, path)
    requirements, e = list_field(
        policy.get("evictionRequirements"), path.child("evictionRequirements")
    )
    errs += e
    for i, requirement in enumerate(requirements):
        item, e = object_field(requirement, path.child("evictionRequirements").index(i))
        errs += e + _enum(
            item,
            "changeRequirement",
            CHANGE_REQUIREMENTS,
            path.child("evictionRequirements").index(i),
        )
    return errs


def _validate_container_policy(value: Any, path: Path) -> list[FieldError]:
    policy, errs = object_field(value, path)
    errs += _enum(policy, "mode", SCALING_MODES, path)
    errs += _enum(policy, "controlledValues", CONTROLLED_VALUES, path)
    for bound in ("minAllowed", "maxAllowed"):
        resources, e = object_field(policy.get(bound), path.child(bound))
        errs += e
        for name, quantity in resources.items():
            errs += _validate_quantity(quantity, path.child(bound, name))
    return errs


def _validate_quantity(value: Any, path: Path) -> list[FieldError]:
    """The CRD's int-or-string quantity: a string must match its pattern."""
    if not isinstance(value, str) or QUANTITY_PATTERN.fullmatch(value):
        return []
    return [field.invalid(path, value, f"{path} in body should match '{QUANTITY_PATTERN.pattern}'")]


def _validate_spec(vpa: Object) -> list[FieldError]:
    if vpa.get("spec") is None:
        return [field.required(SPEC, "")]
    spec, errs = object_field(vpa.get("spec"), SPEC)
    target_path = SPEC.child("targetRef")
    if spec.get("targetRef") is None:
        errs.append(field.required(target_path, ""))
    else:
        target, e = object_field(spec["targetRef"], target_path)
        errs += e + _required_string(target, "kind", target_path)
        errs += _required_string(target, "name", target_path)
    if spec.get("updatePolicy") is not None:
        errs += _validate_update_policy(spec["updatePolicy"], SPEC.child("updatePolicy"))
    resource_policy, e = object_field(spec.get("resourcePolicy"), SPEC.child("resourcePolicy"))
    errs += e
    policies_path = SPEC.child("resourcePolicy", "containerPolicies")
    policies, e = list_field(resource_policy.get("containerPolicies"), policies_path)
    errs += e
    for i, policy in enumerate(policies):
        errs += _validate_container_policy(policy, policies_path.index(i))
    return errs


def validate_vpa(vpa: Any) -> list[FieldError]:
    errs = validate_object_meta(vpa, namespaced=True)
    if not isinstance(vpa, dict):
        return errs
    return errs + _validate_spec(vpa)


def validate_vpa_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    return errs + _validate_spec(new)


VERTICAL_POD_AUTOSCALER = Kind(
    group=GROUP,
    version="v1",
    kind="VerticalPodAutoscaler",
    plural="verticalpodautoscalers",
    namespaced=True,
    model="V1VerticalPodAutoscaler",
    short_names=("vpa",),
    custom=True,
    subresources=("status",),
    prepare_for_create=prepare_vpa_for_create,
    prepare_for_update=prepare_vpa_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_vpa,
    validate_update=validate_vpa_update,
    validate_status_update=lambda new, old: validate_object_meta_update(new, old),
)
