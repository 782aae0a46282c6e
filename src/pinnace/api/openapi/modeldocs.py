"""The Kubernetes v1.32 API documentation of each type and field, and which fields are required.

Descriptions come from the v1.32 API definitions that the `kubernetes-validate` package ships
(generated from kube-apiserver's OpenAPI document); the `kubernetes` client's models name the
types and say which fields are required (the setters that refuse None; tabled in
`pinnace.api.client_models`).
"""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from pinnace.api import client_models

_MODEL_NAME = re.compile(r"^([A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")
_DEFINITIONS = ("kubernetes-json-schema", "v1.32.0-local", "_definitions.json")


@cache
def _api_definitions() -> dict[str, dict[str, Any]]:
    # Found without importing the package, which would import jsonschema for nothing.
    spec = importlib.util.find_spec("kubernetes_validate")
    assert spec is not None and spec.submodule_search_locations is not None
    path = Path(spec.submodule_search_locations[0]).joinpath(*_DEFINITIONS)
    definitions: dict[str, dict[str, Any]] = json.loads(path.read_text())["$defs"]
    return definitions


@cache
def _by_version_and_name() -> dict[tuple[str, str], list[str]]:
    index: dict[tuple[str, str], list[str]] = {}
    for name in _api_definitions():
        *_, version, type_name = name.split(".")
        index.setdefault((version, type_name), []).append(name)
    return index


@cache
def api_type_name(model: str) -> str:
    """The full API type name of a client model: "V1Pod" -> "io.k8s.api.core.v1.Pod",
    "V1ObjectMeta" -> "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"; "" if unknown."""
    found = _MODEL_NAME.match(model)
    if not found:
        return ""
    group, version, name = found.groups()
    candidates = _by_version_and_name().get((version.lower(), name), [])
    if group:
        candidates = [c for c in candidates if f".{group.lower()}." in c]
    # A name several groups share without a prefix is the core or meta type.
    preferred = [c for c in candidates if ".core." in c or ".meta." in c]
    return (preferred or candidates or [""])[0]


def _definition(model: str) -> dict[str, Any]:
    return _api_definitions().get(api_type_name(model), {})


def field_description(model: str, json_name: str) -> str:
    """The description of field `json_name` of `model`, "" when the API gives none."""
    prop = _definition(model).get("properties", {}).get(json_name, {})
    return str(prop.get("description", ""))


def required_fields(model: str) -> tuple[str, ...]:
    """The JSON names of the fields `model` requires, in declaration order."""
    return client_models.REQUIRED.get(model, ())


def kind_description(model: str) -> str:
    """The description of the type itself ("Pod is a collection of containers…")."""
    return str(_definition(model).get("description", ""))


def field_ref(model: str, json_name: str) -> str:
    """The API definition field `json_name` of `model` (or its items, or its map's values)
    refers to: "io.k8s.apimachinery.pkg.runtime.RawExtension"; "" for none."""
    prop = _definition(model).get("properties", {}).get(json_name, {})
    while "$ref" not in prop:
        inner = prop.get("items") or prop.get("additionalProperties")
        if not isinstance(inner, dict):
            return ""
        prop = inner
    return str(prop["$ref"]).rsplit("/", 1)[-1]


def opaque_definition(name: str) -> dict[str, Any]:
    """API definition `name` of a value without fields of its own (RawExtension, FieldsV1,
    apiextensions' JSON): its description, and its type when the API gives one."""
    definition = _api_definitions()[name]
    out: dict[str, Any] = {"description": definition["description"]}
    # The JSON-schema rendering allows null beside each type; OpenAPI leaves that implicit.
    types = [t for t in definition.get("type", ()) if t != "null"]
    if types:
        out["type"] = types[0]
    return out
