"""The scalar checks of structured-merge-diff's validation of an applied configuration
(typed/validate.go, validateScalar), by the Go types `pinnace.api.schema` knows: a number
where the schema says numeric, a string where it says string, a boolean where it says
boolean. The quantities, int-or-strings and free-form values (untyped to it) are not looked
at here: the merged object's conversion refuses what they cannot hold.

The applied values are as sigs.k8s.io/yaml decodes them, every number a float64, and the
messages print them as smd does: `%T` of the value, `%#v` and `%v` of its wrapper.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.patch.errors import go_value
from pinnace.api.patch.fieldpath import path_string
from pinnace.api.patch.openapi import SCALAR, Shape
from pinnace.api.patch.typed import ValidationErrors, item_element
from pinnace.api.schema import ListOf, MapOf, Scalar, Struct, Type

__all__ = ["check_scalars"]

_NUMERIC = frozenset({"int", "float"})
_STRING = frozenset({"string", "time", "microtime", "bytes"})


def check_scalars(applied: dict[str, Any], root: Struct, shape: Shape) -> None:
    """ValidationErrors for the scalars of `applied` that are not of their field's type."""
    errors: list[str] = []
    _walk(applied, root, shape, (), errors)
    if errors:
        raise ValidationErrors(errors)


def _walk(value: Any, t: Type, shape: Shape, path: tuple[str, ...], errors: list[str]) -> None:
    if value is None:
        return
    if isinstance(t, Struct):
        if isinstance(value, dict):
            fields = t.fields
            for name, child in value.items():
                if name in fields:
                    below = shape.child(name) or SCALAR
                    _walk(child, fields[name], below, (*path, "f:" + name), errors)
    elif isinstance(t, MapOf):
        if isinstance(value, dict):
            for key, child in value.items():
                _walk(child, t.value, shape.element or SCALAR, (*path, "f:" + key), errors)
    elif isinstance(t, ListOf):
        if isinstance(value, list):
            for n, item in enumerate(value):
                try:
                    element = item_element(shape, item, n)
                except ValueError:
                    continue  # the field set's own walk reports it
                _walk(item, t.item, shape.element or SCALAR, (*path, element), errors)
    else:
        problem = _scalar_problem(t, value)
        if problem:
            errors.append(f"{path_string(path)}: {problem}")


def _scalar_problem(t: Scalar, value: Any) -> str:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if t.name in _NUMERIC and not number:
        return f"expected numeric (int or float), got {_go_type(value)}"
    if t.name in _STRING and not isinstance(value, str):
        return f"expected string, got &value.valueUnstructured{{Value:{_go_syntax(value)}}}"
    if t.name == "bool" and not isinstance(value, bool):
        return f"expected boolean, got &{{{go_value(value)}}}"
    return ""


def _go_type(value: Any) -> str:
    """`%T` of a value decoded from JSON into an interface{}."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    return {str: "string", bool: "bool"}.get(type(value), "float64")


def _go_syntax(value: Any) -> str:
    """`%#v` of a value decoded from JSON into an interface{} (maps print sorted by key)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        items = ", ".join(f"{_go_syntax(k)}:{_go_syntax(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + items + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_syntax(v) for v in value) + "}"
    return go_value(value)
