"""The metadata of the objects a built-in object embeds (a Deployment's pod template, a
CronJob's job template, a StatefulSet's claim templates, an ephemeral volume's claim
template), as kube-apiserver v1.32 writes them: with `creationTimestamp: null`.

ObjectMeta's creationTimestamp is a metav1.Time, a struct, which Go's encoding/json writes
whatever its `omitempty`; a zero Time marshals as null. So every embedded ObjectMeta comes out
as `metadata: {creationTimestamp: null, ...}`, one the client left out included. Pinnace stores
templates without it (nothing reads it, and pod-template-hash is taken from the stored
template) and adds it where objects are written out: `written`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["written"]

Steps = tuple[str, ...]
"""Keys from an object to an embedded object that has ObjectMeta; "*" is each item of a list."""

_EPHEMERAL: Steps = ("spec", "volumes", "*", "ephemeral", "volumeClaimTemplate")
"""From a pod (or a pod template) to each ephemeral volume's claim template."""


def _template(*to: str) -> tuple[Steps, ...]:
    """A pod template at `to`, and its ephemeral volumes' claim templates."""
    return (to, to + _EPHEMERAL)


_EMBEDDED: Mapping[str, tuple[Steps, ...]] = {
    "V1Pod": (_EPHEMERAL,),
    "V1PodTemplate": _template("template"),
    "V1ReplicationController": _template("spec", "template"),
    "V1ReplicaSet": _template("spec", "template"),
    "V1Deployment": _template("spec", "template"),
    "V1DaemonSet": _template("spec", "template"),
    "V1StatefulSet": (*_template("spec", "template"), ("spec", "volumeClaimTemplates", "*")),
    "V1Job": _template("spec", "template"),
    "V1CronJob": (("spec", "jobTemplate"), *_template("spec", "jobTemplate", "spec", "template")),
}
"""Each built-in kind's embedded objects with ObjectMeta, by its client model."""

_BEFORE: frozenset[str] = frozenset(
    ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation")
)
"""ObjectMeta's fields that Go writes before creationTimestamp."""


def written(model: str, obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` (a `model` object) as kube-apiserver writes it: each embedded metadata with a
    creationTimestamp, null when it has none. `obj` is left as it is; what changes is
    copied, the rest shared."""
    for steps in _EMBEDDED.get(model, ()):
        obj = _with_timestamp(obj, steps)
    return obj


def _with_timestamp(value: Any, steps: Steps, at: int = 0) -> Any:
    """`value` with the metadata `steps[at:]` lead to stamped; itself when nothing changes."""
    if at == len(steps):
        if not isinstance(value, dict):
            return value
        meta = value.get("metadata")
        if isinstance(meta, dict) and "creationTimestamp" in meta:
            return value
        return {**value, "metadata": _stamped(meta if isinstance(meta, dict) else {})}
    step = steps[at]
    if step == "*":
        if not isinstance(value, list):
            return value
        changed = None
        for i, item in enumerate(value):
            new = _with_timestamp(item, steps, at + 1)
            if new is not item:
                changed = changed or list(value)
                changed[i] = new
        return value if changed is None else changed
    inner = value.get(step) if isinstance(value, dict) else None
    if inner is None:
        return value
    new = _with_timestamp(inner, steps, at + 1)
    return value if new is inner else {**value, step: new}


def _stamped(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with a null creationTimestamp, in Go's field order among the others."""
    later = {k: v for k, v in meta.items() if k not in _BEFORE}
    return {k: v for k, v in meta.items() if k in _BEFORE} | {"creationTimestamp": None} | later
