"""PriorityClass (scheduling.k8s.io/v1): defaulting and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_shape import as_dict, as_str
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.validation import is_int, type_error, validate_immutable

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_PRIORITY_CLASSES = {
    # name: (value, globalDefault)
    SYSTEM_CLUSTER_CRITICAL: (SYSTEM_CRITICAL_PRIORITY, False),
    SYSTEM_NODE_CRITICAL: (SYSTEM_CRITICAL_PRIORITY + 1000, False),
}
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)


def default_priority_class(pc: dict[str, Any]) -> None:
    if pc.get("preemptionPolicy") is None:
        pc["preemptionPolicy"] = PREEMPT_LOWER_PRIORITY


def _system_class_problem(name: str, value: Any, global_default: bool) -> str:
    """Why a `system-` name is refused, or "" for the built-in classes as they are defined."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default != known[1]:
        return f"globalDefault of {name} PriorityClass must be {str(known[1]).lower()}"
    return ""


def validate_preemption_policy(policy: Any, path: Path) -> list[FieldError]:
    if policy in PREEMPTION_POLICIES:
        return []
    if not policy:
        return [field.required(path)]
    return [field.not_supported(path, policy, PREEMPTION_POLICIES)]


def validate_priority_class(pc: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(pc, namespaced=False)
    name = as_str(as_dict(pc.get("metadata")).get("name"))
    value = pc.get("value", 0)
    if not is_int(value):
        errs.append(type_error(Path("value"), value, "integer"))
        value = 0
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        problem = _system_class_problem(name, value, pc.get("globalDefault") is True)
        if problem:
            errs.append(
                field.forbidden(
                    Path("metadata", "name"),
                    f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are "
                    f"reserved for system use only. error: {problem}",
                )
            )
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            field.forbidden(
                Path("value"),
                "maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if pc.get("preemptionPolicy") is not None:
        errs += validate_preemption_policy(pc["preemptionPolicy"], Path("preemptionPolicy"))
    return errs


def validate_priority_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if new.get("value", 0) != old.get("value", 0):
        errs.append(field.forbidden(Path("value"), "may not be changed in an update."))
    errs += validate_immutable(
        new.get("preemptionPolicy"), old.get("preemptionPolicy"), Path("preemptionPolicy")
    )
    return errs


PRIORITY_CLASS = Kind(
    group="scheduling.k8s.io",
    version="v1",
    kind="PriorityClass",
    plural="priorityclasses",
    namespaced=False,
    model="V1PriorityClass",
    short_names=("pc",),
    default=default_priority_class,
    validate=validate_priority_class,
    validate_update=validate_priority_class_update,
)
