"""The shapes of the served kinds' fields, read from the generated `strategies` table.

A `Shape` says how a value at some position merges: a scalar, a struct of named fields, a
list (atomic, a set, or a map keyed by some fields) or a map of string keys. Both strategic
merge patch (patch strategy and merge key) and server-side apply (list and map types) read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from pinnace.api.autoscaling import vpa_models
from pinnace.api.patch import strategies

__all__ = ["API_VERSIONS", "Field", "Shape", "field_of", "kind_shape", "object_shape", "root_type"]

# The generated table's kinds and types, and those of the kinds Pinnace serves as custom
# resources, whose shapes come from their CRDs' structural schemas.
ROOTS = {**strategies.ROOTS, (vpa_models.API_VERSION, vpa_models.KIND): vpa_models.PATCH_ROOT}
API_VERSIONS = {**strategies.API_VERSIONS, vpa_models.KIND: vpa_models.API_VERSION}
TYPES = {**strategies.TYPES, **vpa_models.PATCH_TYPES}


@dataclass(frozen=True)
class Field:
    """A struct field: its value's shape and its strategic-merge metadata."""

    shape: Shape
    strategies: tuple[str, ...] = ()
    merge_key: str = ""


@dataclass(frozen=True)
class Shape:
    kind: str
    """"scalar", "struct", "list" or "map"."""
    type_name: str = ""
    """The struct's type, for kind "struct"."""
    element: Shape | None = None
    """Items of a list or values of a map."""
    relationship: str = ""
    """Lists: "atomic", "set" or "map"; maps and structs: "atomic" or ""."""
    keys: tuple[str, ...] = ()
    """A list map's key fields."""
    members: tuple[tuple[str, Field], ...] = ()
    """A struct's fields when it has no type in the table (a custom resource's, from its
    CRD's structural schema)."""
    unknown_fields: bool = False
    """A struct that keeps fields it does not declare (x-kubernetes-preserve-unknown-fields):
    each of them is one atomic value."""

    @property
    def atomic(self) -> bool:
        return self.kind == "scalar" or self.relationship == "atomic"

    def fields(self) -> dict[str, Field]:
        if self.kind != "struct":
            return {}
        return _fields(self.type_name) if self.type_name else dict(self.members)

    def child(self, name: str) -> Shape | None:
        """The shape of a struct field or map value; None for an undeclared field."""
        if self.kind == "map":
            return self.element
        found = self.fields().get(name)
        return found.shape if found else None

    def key_default(self, key: str) -> Any:
        """The schema default of a list map key field, for items that omit it."""
        if self.element is None:
            return None
        return strategies.KEY_DEFAULTS.get((self.element.type_name, key))


SCALAR = Shape("scalar")

# Struct fields the Go types hold by value rather than by pointer: Go always serializes them
# (as `{}` at least), so kube-apiserver never sees them appear or disappear. The OpenAPI
# definitions do not say which fields these are; this lists them for the served kinds
# (a kind without one of its root's parts simply has none).
_OBJECT_PARTS = ("metadata", "spec", "status")
VALUE_STRUCT_FIELDS: dict[str, tuple[str, ...]] = {
    **{root: _OBJECT_PARTS for root in ROOTS.values()},
    "apps.v1.DaemonSetSpec": ("template", "updateStrategy"),
    "apps.v1.DeploymentSpec": ("template", "strategy"),
    "apps.v1.ReplicaSetSpec": ("template",),
    "apps.v1.StatefulSetSpec": ("template", "updateStrategy"),
    "autoscaling.v1.HorizontalPodAutoscalerSpec": ("scaleTargetRef",),
    "autoscaling.v2.HorizontalPodAutoscalerSpec": ("scaleTargetRef",),
    "batch.v1.CronJobSpec": ("jobTemplate",),
    "batch.v1.JobSpec": ("template",),
    "batch.v1.JobTemplateSpec": ("metadata", "spec"),
    "core.v1.Container": ("resources",),
    "core.v1.Event": ("metadata", "involvedObject", "source"),
    "core.v1.NodeDaemonEndpoints": ("kubeletEndpoint",),
    "core.v1.NodeStatus": ("daemonEndpoints", "nodeInfo"),
    "core.v1.PersistentVolumeClaimSpec": ("resources",),
    "core.v1.PodTemplateSpec": ("metadata", "spec"),
    "events.v1.Event": ("metadata", "regarding", "deprecatedSource"),
}
# Lists without `omitempty`: an unset one is serialized as null, present but empty.
NULL_LIST_FIELDS: dict[str, tuple[str, ...]] = {"core.v1.PodSpec": ("containers",)}


def root_type(kind: str, api_version: str = "") -> str | None:
    """The type of `kind` at `api_version`, by default the version it is stored at."""
    return ROOTS.get((api_version or API_VERSIONS.get(kind, ""), kind))


@cache
def kind_shape(kind: str, api_version: str = "") -> Shape | None:
    """The shape of a whole object of `kind` ("Pod", "Deployment") at `api_version` (by
    default the stored one), None if not served."""
    name = root_type(kind, api_version)
    return _struct(name) if name else None


def object_shape(kind: Any) -> tuple[str, Shape] | None:
    """The apiVersion managedFields record and the shape of a whole object of `kind` (a
    `pinnace.api.kind.Kind` or a kind's name), None if server-side apply does not know it.
    A kind that brings its own shape (a custom resource's) has it; the others' are the
    table's."""
    own = getattr(kind, "apply_shape", None)
    if own is not None:
        return str(kind.api_version), own
    if isinstance(kind, str):
        name, version = kind, API_VERSIONS.get(kind, "")
    else:
        name, version = getattr(kind, "kind", ""), getattr(kind, "api_version", "")
    shape = kind_shape(name, version) if name and version else None
    return (version, shape) if shape else None


def field_of(type_name: str, name: str) -> Field | None:
    return _fields(type_name).get(name)


def required_fields(type_name: str) -> tuple[str, ...]:
    entry = TYPES.get(type_name)
    return tuple(entry[2].split()) if entry else ()


def _struct(type_name: str) -> Shape:
    return Shape(
        "struct",
        type_name=type_name,
        relationship="atomic" if type_name in strategies.ATOMIC_TYPES else "",
    )


@cache
def _fields(type_name: str) -> dict[str, Field]:
    entry = TYPES.get(type_name)
    if entry is None:
        return {}
    scalars, complex_fields, _ = entry
    fields = {name: Field(SCALAR) for name in scalars.split()}
    for name, (ref, strategy, merge_key, relationship, keys) in complex_fields.items():
        patch_strategies = tuple(strategy.split(",")) if strategy else ()
        fields[name] = Field(
            _shape(ref, patch_strategies, merge_key, relationship, tuple(keys)),
            patch_strategies,
            merge_key,
        )
    return fields


def _shape(
    ref: str,
    patch_strategies: tuple[str, ...],
    merge_key: str,
    relationship: str,
    keys: tuple[str, ...],
) -> Shape:
    if ref.startswith("["):
        element = _shape(ref[1:], (), "", "", ())
        if not relationship:
            # Without +listType, structured-merge-diff's schema conversion falls back on
            # the patch strategy: merge with a key is a map, merge without one a set.
            if "merge" in patch_strategies:
                relationship = "map" if merge_key else "set"
            else:
                relationship = "atomic"
        if relationship == "map" and not keys:
            keys = (merge_key,)
        return Shape("list", element=element, relationship=relationship, keys=keys)
    if ref.startswith("{"):
        return Shape("map", element=_shape(ref[1:], (), "", "", ()), relationship=relationship)
    return _struct(ref) if ref else SCALAR
