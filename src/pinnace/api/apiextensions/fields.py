"""How server-side apply sees a custom resource's fields: the `Shape` of one served version's
structural schema, as apiextensions-apiserver v1.32's customresource_handler builds its type
converter (the version's OpenAPI schema through kube-openapi's schemaconv into
structured-merge-diff's schema).

An object with properties is a struct of them, one with additionalProperties a map of its
values; `x-kubernetes-map-type: atomic` makes either one value. Arrays are atomic unless
`x-kubernetes-list-type` says `set`, or `map` keyed by `x-kubernetes-list-map-keys`. The
object's metadata is ObjectMeta's shape, as for any kind (and an embedded resource's too).

Simplified: a value under `x-kubernetes-preserve-unknown-fields` is one atomic value, where
structured-merge-diff deduces its fields from the value itself.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.patch.openapi import SCALAR, Field, Shape

_OBJECT_META = Shape("struct", type_name="meta.v1.ObjectMeta")
_TYPE_META = (("apiVersion", Field(SCALAR)), ("kind", Field(SCALAR)))


def object_shape(schema: dict[str, Any] | None) -> Shape:
    """The shape of a whole custom resource whose version has the structural `schema` (None
    when it has none)."""
    properties = (schema or {}).get("properties") or {}
    return _struct(properties, embedded=True, relationship="")


def _shape(schema: Any) -> Shape:
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return SCALAR
    relationship = "atomic" if schema.get("x-kubernetes-map-type") == "atomic" else ""
    if schema.get("type") == "array":
        return _list(schema)
    if schema.get("type") != "object":
        return SCALAR  # strings, numbers, booleans, int-or-string
    values = schema.get("additionalProperties")
    if isinstance(values, dict):
        return Shape("map", element=_shape(values), relationship=relationship)
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    return _struct(schema.get("properties") or {}, embedded=embedded, relationship=relationship)


def _struct(properties: dict[str, Any], *, embedded: bool, relationship: str) -> Shape:
    members = {name: Field(_shape(value)) for name, value in properties.items()}
    if embedded:
        members.update(_TYPE_META)
        members["metadata"] = Field(_OBJECT_META)
    return Shape("struct", relationship=relationship, members=tuple(sorted(members.items())))


def _list(schema: dict[str, Any]) -> Shape:
    element = _shape(schema.get("items"))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        return Shape("list", element=element, relationship="set")
    if list_type == "map":
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        return Shape("list", element=element, relationship="map", keys=keys)
    return Shape("list", element=element, relationship="atomic")
