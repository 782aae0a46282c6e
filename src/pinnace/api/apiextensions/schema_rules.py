"""The rules a CustomResourceDefinition's schema keeps beyond being structural, as
apiextensions-apiserver v1.32 checks them (apis/apiextensions/validation/validation.go,
ValidateCustomResourceDefinitionOpenAPISchema, specStandardValidatorV3 and
validateMapListKeysMapSet): the OpenAPI keywords and types a CRD may use, the static form of
`x-kubernetes-validations` rules (their CEL compiled by `validation_rules`),
`x-kubernetes-list-type`, `-list-map-keys` and `-map-type`; and defaults that validate against
their own schema and hold no field it would prune (apiserver/schema/defaulting/validation.go,
ValidateDefaults).

Two of the list rules were added after CRDs could break them, so an update keeps to them only
if the CRD it replaces did (v1.32's requireAtomicSetType and
requireMapListKeysMapSetValidation): `Ratchet` says which still apply.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pinnace.api import field
from pinnace.api.apiextensions import schema as structural
from pinnace.api.field import FieldError, Path

Schema = dict[str, Any]
OPENAPI_TYPES = ("array", "boolean", "integer", "number", "object", "string")
RULE_REASONS = (
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
)
_UNSUPPORTED = (
    ("id", "id is not supported"),
    ("additionalItems", "additionalItems is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("$ref", "$ref is not supported"),
)
LIST_TYPES = ("atomic", "set", "map")
MAP_TYPES = ("atomic", "granular")
_KEY_DEFAULT = (
    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required "
    "property"
)
_SET_ITEM = "must be atomic as item of a list with x-kubernetes-list-type=set"


@dataclass(frozen=True)
class Ratchet:
    atomic_sets: bool = True
    """A set's object or list items must be atomic."""
    map_keys: bool = True
    """A map list's keys must be required or defaulted, and its items not nullable."""


def ratchet(old_schemas: list[Any]) -> Ratchet:
    """The rules an update must keep, given the schemas of the CRD it replaces."""
    nodes = [(node, path) for s in old_schemas for node, path in _walk(s, Path())]
    return Ratchet(
        atomic_sets=not any(_set_item_errors(n, p) for n, p in nodes),
        map_keys=not any(_map_list_errors(n, p) for n, p in nodes),
    )


def rule_errors(schema: Any, path: Path, rules: Ratchet = Ratchet()) -> list[FieldError]:
    """What breaks the rules in `schema` (at `path`), deepest first."""
    # CEL (celpy, lark) is imported once a CRD is written, not by every process at its start.
    from pinnace.api.apiextensions import validation_rules

    errs: list[FieldError] = []
    if isinstance(schema, dict) and schema.get("nullable"):
        errs.append(field.forbidden(path.child("nullable"), "nullable cannot be true at the root"))
    forbidden = validation_rules.uncorrelatable(schema, path)
    for node, at in _walk(schema, path):
        errs += _keyword_errors(node, at) + _node_errors(node, at, rules)
        found = _validation_rule_errors(node.get("x-kubernetes-validations"), at)
        found += validation_rules.field_path_errors(node, at)
        # As v1.32, the CEL is compiled only where the rest of the rules hold.
        errs += found or list(validation_rules.compile_errors(node, at, forbidden.get(id(node))))
    return errs


def _keyword_errors(node: Schema, path: Path) -> list[FieldError]:
    """specStandardValidatorV3: the types and keywords a CRD's schema may use."""
    errs: list[FieldError] = []
    kind = node.get("type")
    if kind and kind not in OPENAPI_TYPES:
        errs.append(field.not_supported(path.child("type"), kind, OPENAPI_TYPES))
    for keyword, detail in _UNSUPPORTED:
        if node.get(keyword):
            errs.append(field.forbidden(path.child(keyword), detail))
    if kind == "null":
        detail = "type cannot be set to null, use nullable as an alternative"
        errs.append(field.forbidden(path.child("type"), detail))
    if isinstance(node.get("items"), list):
        detail = "items must be a schema object and not an array"
        errs.append(field.forbidden(path.child("items"), detail))
    if node.get(structural.PRESERVE) is False:
        errs.append(
            field.invalid(path.child(structural.PRESERVE), False, "must be true or undefined")
        )
    return errs


def _validation_rule_errors(rules: Any, path: Path) -> list[FieldError]:
    """The static checks of `x-kubernetes-validations`, before their CEL is compiled."""
    errs: list[FieldError] = []
    for i, rule in enumerate(rules if isinstance(rules, list) else ()):
        if not isinstance(rule, dict):
            continue
        at = path.child("x-kubernetes-validations").index(i)
        text, message = str(rule.get("rule") or ""), rule.get("message")
        trimmed = str(message or "").strip()
        if not text.strip():
            errs.append(field.required(at.child("rule"), "rule is not specified"))
        elif message and not trimmed:
            detail = "message must be non-empty if specified"
            errs.append(field.invalid(at.child("message"), message, detail))
        elif _has_newlines(trimmed):
            detail = "message must not contain line breaks"
            errs.append(field.invalid(at.child("message"), message, detail))
        elif _has_newlines(text.strip()) and not trimmed:
            detail = "message must be specified if rule contains line breaks"
            errs.append(field.required(at.child("message"), detail))
        expression = rule.get("messageExpression")
        if expression and not str(expression).strip():
            detail = "messageExpression must be non-empty if specified"
            errs.append(field.required(at.child("messageExpression"), detail))
        reason = rule.get("reason")
        if reason is not None and reason not in RULE_REASONS:
            errs.append(field.not_supported(at.child("reason"), reason, RULE_REASONS))
        field_path = rule.get("fieldPath")
        if field_path and not str(field_path).strip():
            detail = "fieldPath must be non-empty if specified"
            errs.append(field.invalid(at.child("fieldPath"), field_path, detail))
        if field_path and _has_newlines(str(field_path)):
            detail = "fieldPath must not contain line breaks"
            errs.append(field.invalid(at.child("fieldPath"), field_path, detail))
    return errs


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


def _walk(schema: Any, path: Path, additional: bool = True) -> Iterator[tuple[Schema, Path]]:
    """Every schema node under and including `schema`, children before their parent; those
    under additionalProperties only if `additional`."""
    if not isinstance(schema, dict):
        return
    for name, sub in (schema.get("properties") or {}).items():
        yield from _walk(sub, path.child("properties").key(name), additional)
    if additional:
        yield from _walk(schema.get("additionalProperties"), path.child("additionalProperties"))
    yield from _walk(schema.get("items"), path.child("items"), additional)
    yield schema, path


def _node_errors(node: Schema, path: Path, rules: Ratchet) -> list[FieldError]:
    errs: list[FieldError] = []
    kind, list_type = node.get("type"), node.get("x-kubernetes-list-type")
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        errs.append(_type_error(path, kind, "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in MAP_TYPES:
        errs.append(field.not_supported(path.child("x-kubernetes-map-type"), map_type, MAP_TYPES))
    if list_type is not None and kind != "array":
        errs.append(_type_error(path, kind, "must be array if x-kubernetes-list-type is specified"))
    elif rules.atomic_sets:
        errs += _set_item_errors(node, path)
    if list_type is not None and list_type not in LIST_TYPES:
        errs.append(
            field.not_supported(path.child("x-kubernetes-list-type"), list_type, LIST_TYPES)
        )
    keys = node.get("x-kubernetes-list-map-keys") or []
    if keys and list_type != "map":
        detail = "must be map if x-kubernetes-list-map-keys is non-empty"
        at = path.child("x-kubernetes-list-type")
        errs.append(
            field.required(at, detail)
            if list_type is None
            else field.invalid(at, list_type, detail)
        )
    if list_type == "map":
        errs += _map_list_shape_errors(node, path, keys)
    if rules.map_keys:
        errs += _map_list_errors(node, path)
    return errs


def _type_error(path: Path, kind: Any, detail: str) -> FieldError:
    at = path.child("type")
    return field.required(at, detail) if not kind else field.invalid(at, kind, detail)


def _set_item_errors(node: Schema, path: Path) -> list[FieldError]:
    items = node.get("items")
    if node.get("x-kubernetes-list-type") != "set" or not isinstance(items, dict):
        return []
    inner = items.get("x-kubernetes-list-type")
    if items.get("type") == "array" and inner not in (None, "atomic"):
        return [field.invalid(path.child("items", "x-kubernetes-list-type"), inner, _SET_ITEM)]
    if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        # v1.32 reports the items' list type (unset: null) as the bad value.
        return [field.invalid(path.child("items", "x-kubernetes-map-type"), inner, _SET_ITEM)]
    return []


def _map_list_shape_errors(node: Schema, path: Path, keys: list[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not keys:
        errs.append(
            field.required(
                path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            )
        )
    items = node.get("items")
    if not isinstance(items, dict):
        errs.append(
            field.required(
                path.child("items"), "must have a schema if x-kubernetes-list-type is map"
            )
        )
        return errs
    if items.get("type") != "object":
        detail = "must be object if parent array's x-kubernetes-list-type is map"
        errs.append(field.invalid(path.child("items", "type"), items.get("type"), detail))
        return errs
    properties = items.get("properties") or {}
    seen: set[str] = set()
    for key in keys:
        sub = properties.get(key)
        if not isinstance(sub, dict):
            errs.append(
                field.invalid(
                    path.child("x-kubernetes-list-map-keys"),
                    keys,
                    "entries must all be names of item properties",
                )
            )
        elif sub.get("type") in ("array", "object"):
            errs.append(
                field.invalid(
                    path.child("items", "properties").key(key).child("type"),
                    "object",
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                )
            )
        if key in seen:
            errs.append(
                field.invalid(
                    path.child("x-kubernetes-list-map-keys"),
                    keys,
                    "must not contain duplicate entries",
                )
            )
        seen.add(key)
    return errs


def _map_list_errors(node: Schema, path: Path) -> list[FieldError]:
    """validateMapListKeysMapSet: a set's or map's items are not nullable, a map's keys are
    required or defaulted and not nullable."""
    items, list_type = node.get("items"), node.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    errs: list[FieldError] = []
    if items.get("nullable"):
        errs.append(
            field.forbidden(
                path.child("items", "nullable"),
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    if list_type != "map":
        return errs
    required = set(items.get("required") or ())
    properties = items.get("properties") or {}
    for key in node.get("x-kubernetes-list-map-keys") or ():
        sub = properties.get(key)
        if not isinstance(sub, dict):
            continue
        at = path.child("items", "properties").key(key)
        if key not in required and "default" not in sub:
            errs.append(field.required(at.child("default"), _KEY_DEFAULT))
        if sub.get("nullable"):
            errs.append(
                field.forbidden(
                    at.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                )
            )
    return errs


# --- defaults ---------------------------------------------------------------------------------


def default_errors(schema: Any, path: Path) -> list[FieldError]:
    """Each `default` that its schema would prune or refuse, in kube-openapi's words at
    `<path>.default` (those under additionalProperties unchecked, as ValidateDefaults does
    not go there)."""
    errs: list[FieldError] = []
    for node, at in _walk(schema, path, additional=False):
        if "default" not in node:
            continue
        value, where = node["default"], at.child("default")
        pruned = copy.deepcopy(value)
        structural.prune_value(pruned, node)
        if pruned != value:
            errs.append(field.invalid(where, value, "must not have unknown fields"))
        errs += [_rebased(e, where) for e in structural.validate_value(value, node)]
    return errs


def _rebased(error: FieldError, root: Path) -> FieldError:
    """An error found in a default value, under the default's path as ValidateCustomResource
    puts it: the value's own errors at the path, the others at the path's child named by
    kube-openapi's name for the field (`default.[1]`, `default.a`)."""
    inner = error.field
    return replace(error, field=str(root) if inner == "[]" else f"{root}.{inner}")
