"""The OpenAPI definitions of custom resources, as apiextensions-apiserver v1.32 publishes a
served CRD version's structural schema (pkg/controller/openapi/builder): the schema with
apiVersion, kind and metadata added, under the reversed-group name
(`com.example.stable.v1.CronTab`), and its list kind beside it.

OpenAPI v3 gets the schema as written; Swagger 2.0 gets what it can say (ToStructuralOpenAPIV2,
simplified): types, formats, descriptions, required fields, properties, items, additional
properties and extensions, a nullable field without its type, and a root that keeps unknown
fields as a bare object (kubectl would otherwise refuse the fields it does not know).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.openapi import modeldocs
from pinnace.api.openapi.definitions import V3_REFS, Definitions, gvk

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_V2_KEYS = frozenset(
    {"type", "format", "description", "required", "properties", "items", "additionalProperties"}
)


def published(kinds: Iterable[Kind]) -> tuple[Kind, ...]:
    """The kinds whose schema is published: custom resources with a structural schema."""
    return tuple(k for k in kinds if k.openapi_schema is not None)


def definition_name(kind: Kind, list_kind: bool = False) -> str:
    """kube-openapi's name for a CRD's type: its group reversed, version and kind."""
    group = ".".join(reversed(kind.group.split(".")))
    return f"{group}.{kind.version}.{kind.kind}{'List' * list_kind}"


def add_kinds(found: Definitions, kinds: Iterable[Kind]) -> None:
    """Add each kind's and its list's definition to `found`, with what they reference, and
    the kinds its subresources are served as (a scale subresource's Scale)."""
    v3 = found.ref_prefix == V3_REFS
    found.add_model("V1ObjectMeta", "meta.v1.ObjectMeta")
    found.add_model("V1ListMeta", "meta.v1.ListMeta")
    for kind in kinds:
        assert kind.openapi_schema is not None
        name, list_name = definition_name(kind), definition_name(kind, list_kind=True)
        found.schemas[name] = _kind_schema(kind, kind.openapi_schema, found.ref_prefix, v3)
        found.references[name] = {OBJECT_META}
        found.schemas[list_name] = _list_schema(kind, name, found.ref_prefix, v3)
        found.references[list_name] = {LIST_META, name}
        found.add_subresource_kinds(kind)


def _kind_schema(kind: Kind, structural: Mapping[str, Any], refs: str, v3: bool) -> dict[str, Any]:
    if not v3 and structural.get(_PRESERVE):
        out: dict[str, Any] = {"type": "object"}
    else:
        out = dict(structural) if v3 else _v2(structural)
        properties = dict(out.get("properties") or {})
        properties["metadata"] = _ref(
            refs, OBJECT_META, modeldocs.field_description("V1Pod", "metadata"), v3
        )
        properties |= _type_meta()
        out["properties"] = properties
    out["x-kubernetes-group-version-kind"] = [gvk(kind.group, kind.version, kind.kind)]
    return out


def _list_schema(kind: Kind, item: str, refs: str, v3: bool) -> dict[str, Any]:
    items = {"type": "array", "items": {"$ref": refs + item}}
    items["description"] = f"The {kind.plural}."
    return {
        "description": f"{kind.kind}List is a list of {kind.kind}.",
        "required": ["items"],
        "properties": {
            "items": items,
            "metadata": _ref(
                refs, LIST_META, modeldocs.field_description("V1PodList", "metadata"), v3
            ),
            **_type_meta(),
        },
        "x-kubernetes-group-version-kind": [gvk(kind.group, kind.version, kind.kind + "List")],
    }


def _type_meta() -> dict[str, Any]:
    return {
        name: {"description": modeldocs.field_description("V1Pod", name), "type": "string"}
        for name in ("apiVersion", "kind")
    }


def _ref(refs: str, name: str, description: str, v3: bool) -> dict[str, Any]:
    # OpenAPI v3 ignores a $ref's siblings: the description needs the ref wrapped.
    ref: dict[str, Any] = {"$ref": refs + name}
    if v3:
        return {"allOf": [ref], "description": description}
    return ref | {"description": description}


def _v2(schema: Mapping[str, Any]) -> dict[str, Any]:
    """What Swagger 2.0 can say of a structural schema node."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-"):
            out[key] = value
        elif key not in _V2_KEYS:
            continue
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _v2(sub) for name, sub in value.items() if isinstance(sub, Mapping)}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _v2(value)
        else:
            out[key] = value
    if schema.get("nullable"):
        out.pop("type", None)  # Swagger 2.0 has no null: the field takes any type
    return out
