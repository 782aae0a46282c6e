"""The schema definitions of the served kinds, named as kube-apiserver names them
(io.k8s.api.core.v1.Pod, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta).

Field types come from the structural schema (`pinnace.api.schema`), descriptions and required
fields from the client models (`modeldocs`), and the list, map and patch semantics from the
generated strategies table, whose type names also give each model its definition name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api import schema
from pinnace.api.kind import Kind
from pinnace.api.openapi import modeldocs
from pinnace.api.patch import strategies

V3_REFS = "#/components/schemas/"
V2_REFS = "#/definitions/"

_META = "meta.v1."
_APIEXTENSIONS = "apiextensions.v1."
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
_MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"

# Models outside the strategies table (it holds only what the served kinds reach), with the
# type each one is in the Kubernetes API.
_TYPE_NAMES = {
    "V1ListMeta": "meta.v1.ListMeta",
    "V1Status": "meta.v1.Status",
    "V1StatusDetails": "meta.v1.StatusDetails",
    "V1StatusCause": "meta.v1.StatusCause",
    "V1DeleteOptions": "meta.v1.DeleteOptions",
    "V1Preconditions": "meta.v1.Preconditions",
    "V1Scale": "autoscaling.v1.Scale",
    "V1ScaleSpec": "autoscaling.v1.ScaleSpec",
    "V1ScaleStatus": "autoscaling.v1.ScaleStatus",
    "V1Eviction": "policy.v1.Eviction",
}

# Subresource kinds: (model, group, version, kind).
SUBRESOURCE_KINDS = {
    "scale": ("V1Scale", "autoscaling", "v1", "Scale"),
    "eviction": ("V1Eviction", "policy", "v1", "Eviction"),
}

# Scalar types every document may reference, in v3 and v2 form. The descriptions are ours.
_SCALAR_DEFINITIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    _QUANTITY: (
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"type": "string"},
    ),
    _INT_OR_STRING: (
        {"oneOf": [{"type": "integer"}, {"type": "string"}], "format": "int-or-string"},
        {"type": "string", "format": "int-or-string"},
    ),
    _TIME: ({"type": "string", "format": "date-time"}, {"type": "string", "format": "date-time"}),
    _MICRO_TIME: (
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "date-time"},
    ),
    PATCH: ({"type": "object"}, {"type": "object"}),
}
_SCALAR_DESCRIPTIONS = {
    _QUANTITY: 'A fixed-point amount of a resource, written as a string such as "500m", '
    '"1.5", "128Mi" or "2e3" (a bare number is accepted too). The server stores it in '
    "canonical form, keeping the kind of suffix it was written with.",
    _INT_OR_STRING: 'Either a 32-bit integer or a string (such as a percentage "25%" or a '
    "named port); the value keeps whichever type it was given.",
    _TIME: "A timestamp in RFC 3339 form, to the second, in UTC.",
    _MICRO_TIME: "A timestamp in RFC 3339 form, to the microsecond, in UTC.",
    PATCH: "The body of a PATCH request: a JSON patch, merge patch, strategic merge patch or "
    "apply configuration, as the request's Content-Type says.",
}

_SCALAR_SCHEMAS = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "float": {"type": "number", "format": "double"},
    "bytes": {"type": "string", "format": "byte"},
    "object": {"type": "object"},
}
_SCALAR_REFS = {
    "time": _TIME,
    "microtime": _MICRO_TIME,
    "quantity": _QUANTITY,
    "intorstring": _INT_OR_STRING,
}


def definition_name(type_name: str) -> str:
    """The OpenAPI name of a strategies type name ("core.v1.Pod", "meta.v1.ObjectMeta",
    "apiextensions.v1.CustomResourceDefinition")."""
    if type_name.startswith(_META):
        return "io.k8s.apimachinery.pkg.apis." + type_name
    if type_name.startswith(_APIEXTENSIONS):
        return "io.k8s.apiextensions-apiserver.pkg.apis." + type_name
    return "io.k8s.api." + type_name


def gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def subresource_kind(sub: str) -> tuple[str, dict[str, str]]:
    """The definition name and group-version-kind of a subresource served as its own kind."""
    model, group, version, kind = SUBRESOURCE_KINDS[sub]
    return definition_name(_TYPE_NAMES[model]), gvk(group, version, kind)


@dataclass
class Definitions:
    """Every definition the served kinds reach, in one ref style, and what each references."""

    ref_prefix: str
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    references: dict[str, set[str]] = field(default_factory=dict)
    _type_names: dict[str, str] = field(default_factory=lambda: dict(_TYPE_NAMES))

    def closure(self, roots: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The definitions `roots` reach, roots included, sorted by name."""
        seen: set[str] = set()
        pending = list(roots)
        while pending:
            name = pending.pop()
            if name not in seen:
                seen.add(name)
                pending.extend(self.references.get(name, ()))
        return {name: self.schemas[name] for name in sorted(seen)}

    def add_model(self, model: str, type_name: str) -> str:
        """Define `model` as `type_name` and everything it reaches; returns its name."""
        self._type_names[model] = type_name
        name = definition_name(type_name)
        if name in self.schemas:
            return name
        self.schemas[name] = {}  # placeholder: recursive types stop here
        refs: set[str] = set()
        table = strategies.TYPES.get(type_name, ("", {}, ""))[1]
        properties = {}
        for json_name, field_type in schema.struct(model).fields.items():
            ref = table.get(json_name, ("",))[0].lstrip("[{")
            opaque = modeldocs.field_ref(model, json_name)
            prop = self._property(field_type, ref, opaque, refs)
            description = modeldocs.field_description(model, json_name)
            if description:
                if "$ref" in prop and self.ref_prefix == V3_REFS:
                    # OpenAPI v3 ignores a $ref's siblings, so the field's own description
                    # (which `kubectl explain` shows) needs the ref wrapped.
                    prop = {"allOf": [prop]}
                prop["description"] = description
            prop.update(_extensions(table.get(json_name)))
            properties[json_name] = prop
        definition: dict[str, Any] = {}
        description = modeldocs.kind_description(model)
        if description:
            definition["description"] = description
        definition["type"] = "object"
        definition["properties"] = properties
        required = list(modeldocs.required_fields(model))
        if required:
            definition["required"] = required
        if type_name in strategies.ATOMIC_TYPES:
            definition["x-kubernetes-map-type"] = "atomic"
        self.schemas[name] = definition
        self.references[name] = refs
        return name

    def add_kind(self, model: str, type_name: str, group: str, version: str, kind: str) -> str:
        name = self.add_model(model, type_name)
        self.schemas[name]["x-kubernetes-group-version-kind"] = [gvk(group, version, kind)]
        return name

    def add_subresource_kinds(self, kind: Kind) -> None:
        """The kinds `kind`'s subresources are served as (autoscaling/v1 Scale, policy/v1
        Eviction)."""
        for sub in kind.subresources:
            if sub in SUBRESOURCE_KINDS:
                model, group, version, sub_kind = SUBRESOURCE_KINDS[sub]
                self.add_kind(model, _TYPE_NAMES[model], group, version, sub_kind)

    def _property(self, t: schema.Type, ref: str, opaque: str, refs: set[str]) -> dict[str, Any]:
        """The schema of a field of type `t`; `ref` names the strategies type of its struct
        values, `opaque` the API's definition of its untyped ones (the client models type
        IntOrString, RawExtension or a JSON schema's JSON fields as a bare object)."""
        if isinstance(t, schema.ListOf):
            return {"type": "array", "items": self._property(t.item, ref, opaque, refs)}
        if isinstance(t, schema.MapOf):
            value = self._property(t.value, ref, opaque, refs)
            return {"type": "object", "additionalProperties": value}
        if isinstance(t, schema.Struct):
            type_name = ref or self._type_names.get(t.model)
            if type_name is None:
                raise KeyError(f"no Kubernetes type name known for model {t.model}")
            name = self.add_model(t.model, type_name)
            refs.add(name)
            return {"$ref": self.ref_prefix + name}
        if t.name == "int":
            return {"type": "integer", "format": t.go_type}
        if t.name in _SCALAR_REFS:
            name = _SCALAR_REFS[t.name]
            refs.add(name)
            return {"$ref": self.ref_prefix + name}
        if t.name == "object" and opaque:
            if opaque not in self.schemas:
                self.schemas[opaque] = modeldocs.opaque_definition(opaque)
            refs.add(opaque)
            return {"$ref": self.ref_prefix + opaque}
        return dict(_SCALAR_SCHEMAS[t.name])


def _extensions(entry: tuple[Any, ...] | None) -> dict[str, Any]:
    """The x-kubernetes-* vendor extensions of a field's strategies entry."""
    if entry is None:
        return {}
    ref, strategy, merge_key, relationship, keys = entry
    out: dict[str, Any] = {}
    if relationship and ref.startswith("["):
        out["x-kubernetes-list-type"] = relationship
        if keys:
            out["x-kubernetes-list-map-keys"] = list(keys)
    elif relationship:
        out["x-kubernetes-map-type"] = relationship
    if merge_key:
        out["x-kubernetes-patch-merge-key"] = merge_key
    if strategy:
        out["x-kubernetes-patch-strategy"] = strategy
    return out


def build(kinds: Iterable[Kind], ref_prefix: str, others: Iterable[Kind] = ()) -> Definitions:
    """The definitions of `kinds`, their lists and subresource kinds, Status, DeleteOptions
    and Patch, with refs written as `ref_prefix` + name; DeleteOptions serves `others` (kinds
    defined elsewhere: custom resources) too."""
    v3 = ref_prefix == V3_REFS
    kinds = tuple(kinds)
    found = Definitions(ref_prefix)
    for name, (v3_form, v2_form) in _SCALAR_DEFINITIONS.items():
        found.schemas[name] = {"description": _SCALAR_DESCRIPTIONS[name]} | (
            v3_form if v3 else v2_form
        )
    meta_kinds = [gvk(k.group, k.version, "DeleteOptions") for k in (*kinds, *others)]
    found.add_model("V1Status", _TYPE_NAMES["V1Status"])
    found.schemas[STATUS]["x-kubernetes-group-version-kind"] = [gvk("", "v1", "Status")]
    found.add_model("V1DeleteOptions", _TYPE_NAMES["V1DeleteOptions"])
    found.schemas[DELETE_OPTIONS]["x-kubernetes-group-version-kind"] = _unique(meta_kinds)
    for kind in kinds:
        type_name = strategies.ROOTS[(kind.api_version, kind.kind)]
        found.add_kind(kind.model, type_name, kind.group, kind.version, kind.kind)
        if "list" in kind.verbs:
            found.add_kind(
                kind.model + "List",
                type_name + "List",
                kind.group,
                kind.version,
                kind.kind + "List",
            )
        found.add_subresource_kinds(kind)
    return found


def _unique(items: list[dict[str, str]]) -> list[dict[str, str]]:
    seen = {tuple(sorted(item.items())): item for item in items}
    return [seen[key] for key in sorted(seen)]
