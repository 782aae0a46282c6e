"""A CustomResourceDefinition's structural schema at work on custom resources, as
apiextensions-apiserver v1.32 uses it: the structural checks a CRD's schema must pass
(apiserver/schema/validation.go), pruning of the fields it does not specify
(apiserver/schema/pruning), defaults (apiserver/schema/defaulting) and validation of values in
kube-openapi's words as apiserver/validation/validation.go turns them into field errors.

A schema here is the CRD's `openAPIV3Schema` as JSON (a dict). CEL rules
(`x-kubernetes-validations`) are kept but not evaluated (docs/differences.md).
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import re2

from pinnace.api import field
from pinnace.api.field import FieldError, Path

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"
_ROOT_KEPT = ("apiVersion", "kind", "metadata")


# --- structural checks of a CRD's schema ------------------------------------------------------


def structural_errors(schema: Any, path: Path) -> list[FieldError]:
    """What makes `schema` (an openAPIV3Schema) not structural, or not allowed in a CRD."""
    if not isinstance(schema, dict):
        return [field.required(path, "schemas are required")]
    errs: list[FieldError] = []
    root_type = schema.get("type")
    if not root_type:
        errs.append(field.required(path.child("type"), "must not be empty at the root"))
    elif root_type != "object":
        errs.append(field.invalid(path.child("type"), root_type, "must be object at the root"))
    metadata = (schema.get("properties") or {}).get("metadata")
    if isinstance(metadata, dict) and set(metadata.get("properties") or {}) - {
        "name",
        "generateName",
    }:
        errs.append(
            field.forbidden(
                path.child("properties").key("metadata"),
                "must not specify anything other than name and generateName, but metadata is "
                "implicitly specified",
            )
        )
    return errs + _node_errors(schema, path, root=True)


def _node_errors(schema: Schema, path: Path, *, root: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    if schema.get("uniqueItems") is True:
        errs.append(
            field.forbidden(
                path.child("uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    if properties and additional is not None and additional is not True:
        errs.append(
            field.forbidden(
                path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )
    typed = bool(schema.get("type")) or schema.get(INT_OR_STRING) or schema.get(PRESERVE)
    if not root and not typed:
        errs.append(
            field.required(path.child("type"), "must not be empty for specified object fields")
        )
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        errs.append(field.required(path.child("items"), "must be specified"))
    if schema.get(EMBEDDED) and schema.get("type") != "object":
        errs.append(field.invalid(path.child("type"), schema.get("type"), "must be object"))
    errs += _pattern_errors(schema.get("pattern"), path.child("pattern"))
    for name, sub in properties.items():
        if isinstance(sub, dict):
            errs += _node_errors(sub, path.child("properties").key(name))
    if isinstance(additional, dict):
        errs += _node_errors(additional, path.child("additionalProperties"))
    if isinstance(schema.get("items"), dict):
        errs += _node_errors(schema["items"], path.child("items"))
    return errs


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is the client's 422, not a line on stderr


@functools.lru_cache(maxsize=1024)
def compiled_pattern(pattern: str) -> re2._Regexp:
    """A schema's `pattern` compiled as Go's regexp compiles it: RE2 syntax, matched in linear
    time, so a hostile pattern cannot stall the server; a re2.error when it does not compile."""
    return re2.compile(pattern, _RE2_OPTIONS)


def _pattern_errors(pattern: Any, path: Path) -> list[FieldError]:
    """A pattern must compile (the error after the colon is RE2's words, not Go's)."""
    if not isinstance(pattern, str) or not pattern:
        return []
    try:
        compiled_pattern(pattern)
    except re2.error as e:
        why = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        return [
            field.invalid(path, pattern, f"must be a valid regular expression, but isn't: {why}")
        ]
    return []


# --- pruning ----------------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema | None) -> list[str]:
    """Drop, in place, every field `schema` does not specify (apiVersion, kind and metadata
    stay at the root); the JSON paths of the dropped fields."""
    pruned: list[str] = []
    if schema is None:
        return pruned
    _prune_object(obj, schema, "", pruned, root=True)
    return pruned


def prune_value(value: Any, schema: Schema) -> None:
    """Drop, in place, what `schema` does not specify in a value of it (a default)."""
    _prune(value, schema, "", [])


def _prune(value: Any, schema: Schema, where: str, pruned: list[str]) -> None:
    if isinstance(value, dict):
        _prune_object(value, schema, where, pruned, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(item, schema["items"], f"{where}[{i}]", pruned)


def _prune_object(
    obj: dict[str, Any], schema: Schema, where: str, pruned: list[str], *, root: bool
) -> None:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    kept = _ROOT_KEPT if root or schema.get(EMBEDDED) else ()
    for key in list(obj):
        path = f"{where}.{key}" if where else key
        if key in kept and key not in properties:
            continue
        sub = properties.get(key)
        if sub is not None and _non_nullable_null(obj[key], sub) and "default" not in sub:
            del obj[key]  # PruneNonNullableNullsWithoutDefaults: dropped, not unknown
            continue
        if sub is None and isinstance(additional, dict):
            sub = additional
        if sub is None:
            if not (schema.get(PRESERVE) or additional is True):
                del obj[key]
                pruned.append(path)
            continue
        _prune(obj[key], sub, path, pruned)


def _non_nullable_null(value: Any, schema: Schema) -> bool:
    return value is None and not schema.get("nullable")


# --- defaults ---------------------------------------------------------------------------------


def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Fill in, in place, the `default` of every specified field that is missing or null
    where null is not allowed (structural defaulting's Default)."""
    if schema is None:
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            missing = key not in value or _non_nullable_null(value[key], sub)
            if missing and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                apply_defaults(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key, item in value.items():
                if key not in properties:
                    if _non_nullable_null(item, additional) and "default" in additional:
                        value[key] = item = copy.deepcopy(additional["default"])
                    apply_defaults(item, additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])


# --- validation -------------------------------------------------------------------------------


def validate(
    obj: dict[str, Any], schema: Schema | None, path: Path | None = None
) -> list[FieldError]:
    """kube-openapi's validation of `obj` against `schema` (metadata left to ObjectMeta's own
    validation), as field errors in v1.32's words."""
    if schema is None:
        return []
    errs: list[FieldError] = []
    root = path or Path()
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in obj and name != "metadata":
            errs.append(field.required(_child(root, name)))
    for key, value in obj.items():
        if key in _ROOT_KEPT and key not in properties:
            continue
        if key == "metadata":
            continue
        sub = properties.get(key)
        if isinstance(sub, dict):
            errs += _validate(value, sub, _child(root, key))
    return errs


def validate_value(value: Any, schema: Schema) -> list[FieldError]:
    """kube-openapi's validation of a value of `schema` (a default) on its own: the errors'
    fields are relative to it ("" for the value itself)."""
    return _validate(value, schema, Path())


def _child(path: Path, name: str) -> Path:
    return path.child(name) if str(path) else Path(name)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


def _number(value: float) -> str:
    """A bound as Go's %v prints a float64."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _validate(value: Any, schema: Schema, path: Path) -> list[FieldError]:
    name = str(path)
    if value is None:
        if schema.get("nullable") or not schema.get("type"):
            return []
        return [_type_error(path, value, schema["type"])]
    if schema.get(INT_OR_STRING):
        if json_type(value) not in ("integer", "string"):
            return [_type_error(path, value, "integer,string")]
    elif schema.get("type") and not _type_ok(value, schema["type"]):
        return [_type_error(path, value, schema["type"])]
    errs: list[FieldError] = []
    if isinstance(value, str):
        errs += _string_errors(value, schema, path, name)
    if json_type(value) in ("integer", "number"):
        errs += _number_errors(value, schema, path, name)
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        supported = [e if isinstance(e, str) else json.dumps(e) for e in enum]
        errs.append(field.not_supported(path, value, supported))
    if isinstance(value, list):
        errs += _array_errors(value, schema, path, name)
    if isinstance(value, dict):
        errs += _object_errors(value, schema, path)
    return errs


def _type_error(path: Path, value: Any, wanted: str) -> FieldError:
    actual = json_type(value)
    return field.type_invalid(path, actual, f'{path} in body must be of type {wanted}: "{actual}"')


def _string_errors(value: str, schema: Schema, path: Path, name: str) -> list[FieldError]:
    errs = []
    max_length, min_length = schema.get("maxLength"), schema.get("minLength")
    if max_length is not None and len(value) > max_length:
        errs.append(field.too_long(path, value, int(max_length)))
    if min_length is not None and len(value) < min_length:
        detail = f"{name} in body should be at least {int(min_length)} chars long"
        errs.append(field.invalid(path, value, detail))
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and compiled_pattern(pattern).search(value) is None:
        errs.append(field.invalid(path, value, f"{name} in body should match '{pattern}'"))
    return errs


def _number_errors(value: float, schema: Schema, path: Path, name: str) -> list[FieldError]:
    errs = []
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            detail = f"{name} in body should be greater than {_number(low)}"
            errs.append(field.invalid(path, value, detail))
        elif value < low:
            detail = f"{name} in body should be greater than or equal to {_number(low)}"
            errs.append(field.invalid(path, value, detail))
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            detail = f"{name} in body should be less than {_number(high)}"
            errs.append(field.invalid(path, value, detail))
        elif value > high:
            detail = f"{name} in body should be less than or equal to {_number(high)}"
            errs.append(field.invalid(path, value, detail))
    return errs


def _array_errors(value: list[Any], schema: Schema, path: Path, name: str) -> list[FieldError]:
    errs = []
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if min_items is not None and len(value) < min_items:
        detail = f"{name} in body should have at least {int(min_items)} items"
        errs.append(field.invalid(path, len(value), detail))
    if max_items is not None and len(value) > max_items:
        errs.append(field.too_many(path, len(value), int(max_items)))
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            errs += _validate(item, items, path.index(i))
    return errs


def _object_errors(value: dict[str, Any], schema: Schema, path: Path) -> list[FieldError]:
    errs = []
    for name in schema.get("required") or ():
        if name not in value:
            errs.append(field.required(path.child(name)))
    if schema.get(EMBEDDED):
        for name in ("apiVersion", "kind"):
            if not value.get(name):
                errs.append(field.required(path.child(name), "must not be empty"))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key)
        if sub is None and isinstance(additional, dict):
            sub = additional
        if isinstance(sub, dict):
            errs += _validate(item, sub, path.child(key))
    return errs
