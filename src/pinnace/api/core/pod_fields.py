"""Typed reads of pod fields that report a wrong JSON type as a field error.

Each reader returns a usable value (empty when absent or of the wrong type) and appends a
"must be of type ..." error to `errs` when the type is wrong, so validators can go on
checking the rest of the object.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.field import FieldError, Path
from pinnace.api.validation import is_int, list_field, object_field, string_field, type_error


def read_str(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> str:
    value = obj.get(key)
    if isinstance(value, str) or value is None:
        return value or ""  # the usual cases, without building the field's path
    value, e = string_field(value, path.child(key))
    errs += e
    return value


def read_dict(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> dict[str, Any]:
    value = obj.get(key)
    if isinstance(value, dict) or value is None:
        return {} if value is None else value
    value, e = object_field(value, path.child(key))
    errs += e
    return value


def read_list(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> list[Any]:
    value = obj.get(key)
    if isinstance(value, list) or value is None:
        return [] if value is None else value
    value, e = list_field(value, path.child(key))
    errs += e
    return value


def read_int(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> int | None:
    """An optional integer field: None when absent or of the wrong type."""
    value = obj.get(key)
    if value is None:
        return None
    if not is_int(value):
        errs.append(type_error(path.child(key), value, "integer"))
        return None
    return int(value)


def read_bool(obj: dict[str, Any], key: str, path: Path, errs: list[FieldError]) -> bool:
    value = obj.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        errs.append(type_error(path.child(key), value, "boolean"))
        return False
    return value


def object_items(
    items: list[Any], path: Path, errs: list[FieldError]
) -> list[tuple[int, dict[str, Any]]]:
    """(index, element) of a list of objects; other elements are type errors."""
    good = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            good.append((i, item))
        else:
            errs.append(type_error(path.index(i), item, "object"))
    return good


def string_items(items: list[Any], path: Path, errs: list[FieldError]) -> list[tuple[int, str]]:
    good = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            good.append((i, item))
        else:
            errs.append(type_error(path.index(i), item, "string"))
    return good


def well_formed_selector(selector: Any, path: Path, errs: list[FieldError]) -> dict[str, Any]:
    """A metav1.LabelSelector whose parts all have the right JSON types, so the shared
    selector validation can read it; badly typed parts are reported and dropped."""
    if not isinstance(selector, dict):
        errs.append(type_error(path, selector, "object"))
        return {}
    result: dict[str, Any] = {}
    labels = read_dict(selector, "matchLabels", path, errs)
    label_path = path.child("matchLabels")
    result["matchLabels"] = {}
    for key, value in labels.items():
        if isinstance(value, str):
            result["matchLabels"][key] = value
        else:
            errs.append(type_error(label_path.key(key), value, "string"))
    exprs_path = path.child("matchExpressions")
    exprs = []
    for i, expr in object_items(
        read_list(selector, "matchExpressions", path, errs), exprs_path, errs
    ):
        expr_path = exprs_path.index(i)
        values = read_list(expr, "values", expr_path, errs)
        exprs.append(
            {
                "key": read_str(expr, "key", expr_path, errs),
                "operator": read_str(expr, "operator", expr_path, errs),
                "values": [v for _, v in string_items(values, expr_path.child("values"), errs)],
            }
        )
    result["matchExpressions"] = exprs
    return result
