"""Binding (v1): a request to bind a pod to a node, checked as kube-apiserver v1.32 checks it.

Only the target is validated (no ObjectMeta rules): the binding endpoint compares the name
with the pod's in the URL itself.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.validation import object_field, string_field


def validate_binding(binding: dict[str, Any]) -> list[FieldError]:
    target, errs = object_field(binding.get("target"), Path("target"))
    kind, e = string_field(target.get("kind"), Path("target", "kind"))
    errs += e
    name, e = string_field(target.get("name"), Path("target", "name"))
    errs += e
    if kind and kind != "Node":
        errs.append(field.not_supported(Path("target", "kind"), kind, ("Node", "<empty>")))
    if not name:
        errs.append(field.required(Path("target", "name")))
    return errs


BINDING = Kind(
    group="",
    version="v1",
    kind="Binding",
    plural="bindings",
    namespaced=True,
    model="V1Binding",
    verbs=("create",),
    validate=validate_binding,
)
