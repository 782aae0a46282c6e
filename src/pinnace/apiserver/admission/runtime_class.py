"""RuntimeClass, as kube-apiserver v1.32's admission plugin of that name
(plugin/pkg/admission/runtimeclass/admission.go).

On pod create only. A pod naming a RuntimeClass that does not exist is refused. Otherwise the
class's `overhead.podFixed` becomes the pod's `spec.overhead` (a pod may carry an overhead
itself only if it is the class's), the class's `scheduling.nodeSelector` is merged into the
pod's (a key the pod sets to another value is a conflict) and its tolerations are merged with
the pod's. The validating step then refuses a pod whose overhead is not its class's, or that
has an overhead without a class defining one.

The request pipeline looks the named class up in the store and passes it in (None when the pod
names none or the class does not exist); v1.32 asks its informer, then the API on a miss.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.errors import forbidden
from pinnace.resources.lists import ResourceList, parse_resource_list

Toleration = Mapping[str, Any]


def requested_class(pod: Mapping[str, Any]) -> str:
    """The RuntimeClass the pod names, "" for none."""
    name = as_dict(pod.get("spec")).get("runtimeClassName")
    return name if isinstance(name, str) else ""


def admit_pod(pod: dict[str, Any], runtime_class: Mapping[str, Any] | None) -> None:
    """Set the pod's overhead and merge the class's scheduling into it, in place."""
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    _check_found(pod, runtime_class)
    if runtime_class is None:
        return
    overhead = runtime_class.get("overhead")
    if isinstance(overhead, Mapping):
        _set_overhead(pod, spec, overhead.get("podFixed"))
    scheduling = runtime_class.get("scheduling")
    if isinstance(scheduling, Mapping):
        _set_scheduling(pod, spec, scheduling)


def validate_pod(pod: dict[str, Any], runtime_class: Mapping[str, Any] | None) -> None:
    """Refuse a pod whose overhead is not what its RuntimeClass defines."""
    spec = as_dict(pod.get("spec"))
    _check_found(pod, runtime_class)
    overhead = runtime_class.get("overhead") if runtime_class is not None else None
    if isinstance(overhead, Mapping):
        if not _same_quantities(overhead.get("podFixed"), spec.get("overhead")):
            raise _rejected(pod, "Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    elif spec.get("overhead") is not None:
        raise _rejected(pod, "Pod Overhead set without corresponding RuntimeClass defined Overhead")


def _check_found(pod: Mapping[str, Any], runtime_class: Mapping[str, Any] | None) -> None:
    name = requested_class(pod)
    if name and runtime_class is None:
        raise _rejected(pod, f'RuntimeClass "{name}" not found')


def _set_overhead(pod: dict[str, Any], spec: dict[str, Any], pod_fixed: Any) -> None:
    if spec.get("overhead") is not None and not _same_quantities(pod_fixed, spec["overhead"]):
        raise _rejected(pod, "Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    if pod_fixed is None:
        spec.pop("overhead", None)
    else:
        spec["overhead"] = dict(pod_fixed)


def _same_quantities(a: Any, b: Any) -> bool:
    """Semantic equality of two resource lists: equal quantities, absent and empty alike."""
    try:
        return _quantities(a) == _quantities(b)
    except ValueError:
        return a == b  # a malformed list: validation reports it


def _quantities(resources: Any) -> ResourceList:
    return parse_resource_list(resources, "overhead")


def _set_scheduling(
    pod: dict[str, Any], spec: dict[str, Any], scheduling: Mapping[str, Any]
) -> None:
    class_selector = as_dict(scheduling.get("nodeSelector"))
    pod_selector = spec.get("nodeSelector")
    if isinstance(pod_selector, dict):
        for key, value in class_selector.items():
            if key in pod_selector and pod_selector[key] != value:
                raise forbidden(
                    "pods",
                    pod,
                    f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                    f"pod.spec.nodeSelector[{key}] = {pod_selector[key]}",
                )
            pod_selector[key] = value
    elif scheduling.get("nodeSelector") is not None:
        spec["nodeSelector"] = dict(class_selector)
    pod_tolerations = spec.get("tolerations") or []
    class_tolerations = scheduling.get("tolerations") or []
    if not _all_tolerations(pod_tolerations) or not _all_tolerations(class_tolerations):
        return  # validation reports the malformed list
    merged = merge_tolerations(pod_tolerations, class_tolerations)
    if merged:
        # The class's tolerations are shared, not copied: stored objects are read-only, and
        # nothing after admission changes a toleration in place.
        spec["tolerations"] = merged
    else:
        spec.pop("tolerations", None)


def _all_tolerations(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(t, Mapping) for t in value)


def merge_tolerations(first: list[Any], second: list[Any]) -> list[Any]:
    """Both lists, in order, without a toleration that another one in them tolerates a
    superset of (of two equal ones, the first stays): pkg/util/tolerations.MergeTolerations."""
    every = [*first, *second]
    merged: list[Any] = []
    for i, t in enumerate(every):
        if any(_is_superset(kept, t) for kept in merged):
            continue
        if any(_fields(t) != _fields(later) and _is_superset(later, t) for later in every[i + 1 :]):
            continue
        merged.append(t)
    return merged


def _fields(t: Toleration) -> tuple[str, str, str, str, Any]:
    return (
        t.get("key") or "",
        t.get("operator") or "",
        t.get("value") or "",
        t.get("effect") or "",
        t.get("tolerationSeconds"),
    )


def _is_superset(ss: Toleration, t: Toleration) -> bool:
    """Whether `ss` tolerates every taint `t` does."""
    ss_fields, t_fields = _fields(ss), _fields(t)
    if ss_fields == t_fields:
        return True
    ss_key, ss_op, ss_value, ss_effect, ss_seconds = ss_fields
    t_key, t_op, t_value, t_effect, t_seconds = t_fields
    # An empty key with Exists matches every key; an empty effect every effect.
    if t_key != ss_key and (ss_key or ss_op != "Exists"):
        return False
    if t_effect != ss_effect and ss_effect:
        return False
    # A NoExecute toleration for a while covers only one for no longer.
    if (
        ss_effect == "NoExecute"
        and ss_seconds is not None
        and (t_seconds is None or t_seconds > ss_seconds)
    ):
        return False
    if ss_op in ("Equal", ""):
        return t_op == "Equal" and t_value == ss_value
    return ss_op == "Exists"


def _rejected(pod: Mapping[str, Any], why: str) -> StatusError:
    return forbidden("pods", pod, f"pod rejected: {why}")
