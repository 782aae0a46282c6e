"""RuntimeClass (node.k8s.io/v1): validation as Kubernetes v1.32
(pkg/apis/node/validation/validation.go).

A RuntimeClass names the container runtime configuration (`handler`) a pod runs with, the
fixed resources a pod of that class costs on top of its containers (`overhead.podFixed`), and
where such pods may run (`scheduling`: a node selector and tolerations). The RuntimeClass
admission plugin (`pinnace.apiserver.admission.runtime_class`) copies the last two into each
new pod that names the class. The group has no defaulting, and only `handler` is immutable.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_fields import read_dict, read_str
from pinnace.api.core.pod_resources import validate_overhead
from pinnace.api.core.pod_scheduling import validate_node_selector, validate_tolerations
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label
from pinnace.api.validation import GoValue, go_struct, list_field, validate_immutable

# Go shows a set pointer as its address, which means nothing to a reader; this one stands in.
_SET_SECONDS = GoValue("(*int64)(0xc000010000)")
_NO_SECONDS = GoValue("(*int64)(nil)")
_TOLERATION_IDENTITY = ("key", "operator", "value", "effect")


def validate_runtime_class(rc: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(rc, namespaced=False)
    handler = read_str(rc, "handler", Path(), errs)
    errs += [field.invalid(Path("handler"), handler, m) for m in is_dns1123_label(handler)]
    if rc.get("overhead") is not None:
        overhead = read_dict(rc, "overhead", Path(), errs)
        errs += validate_overhead(overhead.get("podFixed"), Path("overhead"))
    if rc.get("scheduling") is not None:
        errs += _validate_scheduling(read_dict(rc, "scheduling", Path(), errs), Path("scheduling"))
    return errs


def _validate_scheduling(scheduling: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if scheduling.get("nodeSelector") is not None:
        errs += validate_node_selector(scheduling["nodeSelector"], path.child("nodeSelector"))
    tolerations = scheduling.get("tolerations")
    errs += validate_tolerations(tolerations, path.child("tolerations"))
    return errs + _duplicate_tolerations(tolerations, path.child("tolerations"))


def _duplicate_tolerations(tolerations: Any, path: Path) -> list[FieldError]:
    """A toleration may appear once: key, operator, value and effect together identify it."""
    items, _ = list_field(tolerations, path)  # validate_tolerations reports a wrong type
    errs: list[FieldError] = []
    seen: set[tuple[str, ...]] = set()
    for i, toleration in enumerate(items):
        if not isinstance(toleration, dict):
            continue
        identity = tuple(str(toleration.get(k) or "") for k in _TOLERATION_IDENTITY)
        if identity in seen:
            errs.append(field.duplicate(path.index(i), _go_toleration(toleration)))
        seen.add(identity)
    return errs


def _go_toleration(toleration: dict[str, Any]) -> GoValue:
    """The toleration as `%#v` shows Kubernetes' internal core.Toleration."""
    fields: list[tuple[str, Any]] = [
        (key.capitalize(), str(toleration.get(key) or "")) for key in _TOLERATION_IDENTITY
    ]
    seconds = _NO_SECONDS if toleration.get("tolerationSeconds") is None else _SET_SECONDS
    return go_struct("core.Toleration", [*fields, ("TolerationSeconds", seconds)])


def validate_runtime_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    return errs + validate_immutable(new.get("handler"), old.get("handler"), Path("handler"))


RUNTIME_CLASS = Kind(
    group="node.k8s.io",
    version="v1",
    kind="RuntimeClass",
    plural="runtimeclasses",
    namespaced=False,
    model="V1RuntimeClass",
    validate=validate_runtime_class,
    validate_update=validate_runtime_class_update,
)
