"""Priority, as kube-apiserver v1.32's admission plugin of that name.

On create, a pod's `spec.priority` and `spec.preemptionPolicy` come from its PriorityClass:
the one it names, else the globalDefault class (whose name it then takes), else priority 0
and PreemptLowerPriority. A pod may carry those fields itself only with the values the class
gives. On update, a pod keeps what create gave it. A PriorityClass may be globalDefault only
while no other class is.

Classes are looked up only among `classes` (the store's), as v1.32 looks them up only in its
informer: the system classes resolve because the API server creates them at start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pinnace.api import status
from pinnace.api.core.pod_shape import child_dict
from pinnace.api.scheduling import priorityclass
from pinnace.api.scheduling.priorityclass import (
    PREEMPT_LOWER_PRIORITY,
    SYSTEM_CLUSTER_CRITICAL,
    SYSTEM_NODE_CRITICAL,
)
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.errors import forbidden

# Priority a pod gets when no class is named and none is globalDefault.
DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS = 0


def _system_class(name: str, description: str) -> dict[str, Any]:
    value, _ = priorityclass.SYSTEM_PRIORITY_CLASSES[name]
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
        "preemptionPolicy": PREEMPT_LOWER_PRIORITY,
    }


# The classes kube-apiserver creates at start-up, as they read back (globalDefault false is
# omitted). Copy one before storing it.
SYSTEM_PRIORITY_CLASSES: Mapping[str, dict[str, Any]] = MappingProxyType(
    {
        SYSTEM_NODE_CRITICAL: _system_class(
            SYSTEM_NODE_CRITICAL,
            "Used for system critical pods that must not be moved from their current node.",
        ),
        SYSTEM_CLUSTER_CRITICAL: _system_class(
            SYSTEM_CLUSTER_CRITICAL,
            "Used for system critical pods that must run in the cluster, but can be moved to "
            "another node if necessary.",
        ),
    }
)


def refuse_system_class_delete(name: str) -> None:
    """A system class cannot be deleted by name (403), as v1.32's PriorityClass REST storage
    refuses it before looking the class up; a delete of the collection is not refused there."""
    if name in SYSTEM_PRIORITY_CLASSES:
        raise status.forbidden(
            "priorityclasses",
            name,
            "this is a system priority class and cannot be deleted",
            "scheduling.k8s.io",
        )


def admit_pod(
    pod: dict[str, Any],
    classes: Mapping[str, Mapping[str, Any]],
    operation: str,
    old: Mapping[str, Any] | None = None,
) -> None:
    """Resolve the pod's priority in place on CREATE; on UPDATE keep `old`'s when the new
    object drops it. Raises 403 for an unknown class or a conflicting value."""
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    if operation == "UPDATE":
        old_spec = old.get("spec") if old is not None else None
        if not isinstance(old_spec, Mapping):
            return
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = old_spec[field]
        return
    if operation != "CREATE":
        return
    class_name = spec.get("priorityClassName") or ""
    if class_name:
        pc = classes.get(class_name)
        if pc is None:
            raise _forbidden(pod, f"no PriorityClass with name {class_name} was found")
        value, policy = pc.get("value", 0), pc.get("preemptionPolicy")
    else:
        default = default_priority_class(classes)
        if default is None:
            value, policy = DEFAULT_PRIORITY_WHEN_NO_DEFAULT_CLASS_EXISTS, PREEMPT_LOWER_PRIORITY
        else:
            spec["priorityClassName"] = _name(default)
            value, policy = default.get("value", 0), default.get("preemptionPolicy")
    _set(pod, spec, "priority", "the integer value of priority", value)
    if policy is not None:
        _set(pod, spec, "preemptionPolicy", "the string value of PreemptionPolicy", policy)


def _set(pod: dict[str, Any], spec: dict[str, Any], field: str, what: str, value: Any) -> None:
    given = spec.get(field)
    if given is not None and given != value:
        raise _forbidden(
            pod,
            f"{what} ({given}) must not be provided in pod spec; priority admission "
            f"controller computed {value} from the given PriorityClass name",
        )
    spec[field] = value


def _forbidden(pod: Mapping[str, Any], why: str) -> StatusError:
    return forbidden("pods", pod, why)


def default_priority_class(classes: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The globalDefault class; when a race left several, the lowest value (then name) wins."""
    defaults = [pc for pc in classes.values() if pc.get("globalDefault") is True]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: (pc.get("value", 0), _name(pc)))


def validate_priority_class(
    pc: Mapping[str, Any], existing: Mapping[str, Mapping[str, Any]], operation: str = ""
) -> None:
    """Refuse a globalDefault class while another class is globalDefault (403).

    `existing` holds the stored classes. On "CREATE" any stored default refuses it, as in
    v1.32; otherwise (an update, or the operation not given) only a default of another name.
    """
    if pc.get("globalDefault") is not True:
        return
    default = default_priority_class(existing)
    if default is None:
        return
    if operation == "CREATE" or _name(default) != _name(pc):
        raise forbidden(
            "priorityclasses",
            pc,
            f"PriorityClass {_name(default)} is already marked as default. "
            "Only one default can exist",
            "scheduling.k8s.io",
        )


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""
