"""The list-type rules v1.32 added after CRDs could break them hold for new CRDs and for
updates of CRDs that kept them, but an update of a CRD stored breaking one may keep breaking
it (requireMapListKeysMapSetValidation, requireAtomicSetType)."""

from __future__ import annotations

import copy
from typing import Any

from tests.apiextensions.gadgets import gadget_crd

from pinnace.api.apiextensions.crd import validate_crd, validate_crd_update
from pinnace.api.objects import Object

KEYED_LIST = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
}
OBJECT_SET = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}


def _crd(**properties: Any) -> Object:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": properties}},
    }
    return gadget_crd(schema)


def _fields(errors: list[Any]) -> list[str]:
    return sorted(e.field.rsplit("properties[spec].", 1)[-1] for e in errors)


def test_a_new_crd_keeps_the_rules() -> None:
    assert _fields(validate_crd(_crd(ports=KEYED_LIST, tags=OBJECT_SET))) == [
        "properties[ports].items.properties[name].default",
        "properties[tags].items.x-kubernetes-map-type",
    ]


def test_an_update_keeps_only_the_rules_its_crd_kept() -> None:
    old = _crd(ports=KEYED_LIST, tags=OBJECT_SET)
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "more"
    ] = KEYED_LIST
    assert validate_crd_update(new, old) == []
    assert _fields(validate_crd_update(new, _crd())) == [
        "properties[more].items.properties[name].default",
        "properties[ports].items.properties[name].default",
        "properties[tags].items.x-kubernetes-map-type",
    ]
