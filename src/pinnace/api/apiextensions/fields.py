"""How server-side apply sees a custom resource's fields: the `Shape` of one served version's
structural schema, as apiextensions-apiserver v1.32's customresource_handler builds its type
converter (the version's OpenAPI schema through kube-openapi's schemaconv, pkg/schemaconv/
openapi.go, into structured-merge-diff's schema).

An object with properties is a struct of them, one with additionalProperties a map of its
values; `x-kubernetes-map-type: atomic` makes either one value. Arrays are atomic unless
`x-kubernetes-list-type` says `set`, or `map` keyed by `x-kubernetes-list-map-keys`. The
object's metadata is ObjectMeta's shape, as for any kind (and an embedded resource's too).
Under `x-kubernetes-preserve-unknown-fields` objects keep fields they do not declare.

Simplified: a field no property declares is one atomic value, where structured-merge-diff
deduces its shape from the value itself (merging the maps in it field by field).
"""

from __future__ import annotations

from typing import Any

from pinnace.api.patch.openapi import SCALAR, Field, Shape

_OBJECT_META = Shape("struct", type_name="meta.v1.ObjectMeta")
_TYPE_META = (("apiVersion", Field(SCALAR)), ("kind", Field(SCALAR)))
_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def object_shape(schema: dict[str, Any] | None) -> Shape:
    """The shape of a whole custom resource whose version has the structural `schema` (None
    when it has none)."""
    schema = schema or {}
    unknown = bool(schema.get(_PRESERVE))
    return _struct(schema, embedded=True, unknown=unknown, relationship="")


def _shape(schema: Any, unknown: bool) -> Shape:
    """`unknown`: the schema is below one that keeps unknown fields, as its objects do too."""
    if not isinstance(schema, dict):
        return SCALAR
    unknown = unknown or bool(schema.get(_PRESERVE))
    relationship = "atomic" if schema.get("x-kubernetes-map-type") == "atomic" else ""
    if schema.get("type") == "array":
        return _list(schema, unknown)
    if schema.get("type") != "object":
        return SCALAR  # strings, numbers, booleans, int-or-string
    values = schema.get("additionalProperties")
    if isinstance(values, dict):
        return Shape("map", element=_shape(values, unknown), relationship=relationship)
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    return _struct(schema, embedded=embedded, unknown=unknown, relationship=relationship)


def _struct(schema: dict[str, Any], *, embedded: bool, unknown: bool, relationship: str) -> Shape:
    properties = schema.get("properties") or {}
    members = {name: Field(_shape(value, unknown)) for name, value in properties.items()}
    if embedded:
        members.update(_TYPE_META)
        members["metadata"] = Field(_OBJECT_META)
    return Shape(
        "struct",
        relationship=relationship,
        members=tuple(sorted(members.items())),
        # An object without properties holds whatever it is given (a free-form object).
        unknown_fields=unknown or not properties,
    )


def _list(schema: dict[str, Any], unknown: bool) -> Shape:
    element = _shape(schema.get("items"), unknown)
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        return Shape("list", element=element, relationship="set")
    if list_type == "map":
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        return Shape("list", element=element, relationship="map", keys=keys)
    return Shape("list", element=element, relationship="atomic")
