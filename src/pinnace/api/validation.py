"""Validators shared by every kind: quantities, immutability, numbers, and shape checks.

Messages are worded as pkg/apis/core/validation and apimachinery's api/validation. The shape
checks (`object_field`, `list_field` ...) guard validators against input that decoding would
have rejected: a validator reports a field error where it would otherwise crash.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, TypeGuard

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.names import is_valid_percent
from pinnace.clock.rfc3339 import go_time_string, parse_time
from pinnace.resources.lists import parse_quantity
from pinnace.resources.names import is_integer_resource_name
from pinnace.resources.quantity import Quantity, QuantityError

IS_NEGATIVE_ERROR_MSG = "must be greater than or equal to 0"
IS_NOT_INTEGER_ERROR_MSG = "must be an integer"
FIELD_IMMUTABLE_ERROR_MSG = "field is immutable"


def parse_quantity_field(value: Any, path: Path) -> tuple[Quantity | None, list[FieldError]]:
    try:
        return _parse_quantity(value), []
    except QuantityError as e:
        return None, [field.invalid(path, value, e.reason)]
    except (TypeError, ValueError):
        return None, [field.invalid(path, value, "must be a quantity")]


def _parse_quantity(value: Any) -> Quantity:
    return _parse_quantity_text(value) if isinstance(value, str) else parse_quantity(value)


@lru_cache(maxsize=1024)
def _parse_quantity_text(text: str) -> Quantity:
    """Quantities are immutable, and the same few recur in every object."""
    return parse_quantity(text)


def validate_nonnegative_quantity(quantity: Quantity, path: Path) -> list[FieldError]:
    if quantity.sign() < 0:
        return [field.invalid(path, str(quantity), IS_NEGATIVE_ERROR_MSG)]
    return []


def validate_resource_quantity(name: str, value: Any, path: Path) -> list[FieldError]:
    """A resource amount: a non-negative quantity, whole for integer resources."""
    quantity, errs = parse_quantity_field(value, path)
    if quantity is None:
        return errs
    errs = validate_nonnegative_quantity(quantity, path)
    if is_integer_resource_name(name) and quantity.milli_value() % 1000 != 0:
        errs.append(field.invalid(path, go_quantity(quantity), IS_NOT_INTEGER_ERROR_MSG))
    return errs


def validate_nonnegative(value: Any, path: Path) -> list[FieldError]:
    if not is_int(value):
        return [type_error(path, value, "integer")]
    if value < 0:
        return [field.invalid(path, value, IS_NEGATIVE_ERROR_MSG)]
    return []


def validate_immutable(new: Any, old: Any, path: Path) -> list[FieldError]:
    if new != old:
        return [field.invalid(path, new, FIELD_IMMUTABLE_ERROR_MSG)]
    return []


def validate_int_or_percent(value: Any, path: Path) -> list[FieldError]:
    """An IntOrString that must be a non-negative integer or a percentage like "25%"."""
    if isinstance(value, str):
        return [field.invalid(path, value, msg) for msg in is_valid_percent(value)]
    if is_int(value):
        return validate_nonnegative(value, path)
    return [field.invalid(path, value, "must be an integer or percentage (e.g '5%')")]


# Shape checks.


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def type_error(path: Path, value: Any, json_type: str) -> FieldError:
    return field.type_invalid(path, value, f"must be of type {json_type}")


def object_field(value: Any, path: Path) -> tuple[dict[str, Any], list[FieldError]]:
    """`value` as a JSON object: absent (None) is empty, another type is an error."""
    if value is None:
        return {}, []
    if isinstance(value, dict):
        return value, []
    return {}, [type_error(path, value, "object")]


def list_field(value: Any, path: Path) -> tuple[list[Any], list[FieldError]]:
    if value is None:
        return [], []
    if isinstance(value, list):
        return value, []
    return [], [type_error(path, value, "array")]


def string_field(value: Any, path: Path) -> tuple[str, list[FieldError]]:
    if value is None:
        return "", []
    if isinstance(value, str):
        return value, []
    return "", [type_error(path, value, "string")]


def string_map(value: Any, path: Path) -> tuple[dict[str, str], list[FieldError]]:
    """A map of strings (labels, annotations, data); entries of other types are errors."""
    mapping, errs = object_field(value, path)
    good: dict[str, str] = {}
    for k, v in mapping.items():
        if isinstance(v, str):
            good[k] = v
        else:
            errs.append(type_error(path.key(k), v, "string"))
    return good, errs


def string_list(value: Any, path: Path) -> tuple[list[str], list[FieldError]]:
    items, errs = list_field(value, path)
    good: list[str] = []
    for i, v in enumerate(items):
        if isinstance(v, str):
            good.append(v)
        else:
            errs.append(type_error(path.index(i), v, "string"))
    return good, errs


class GoValue:
    """A bad value that a field error shows verbatim, as Go's `%#v` shows a struct."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def go_struct_slice(type_name: str, given: Any, items: list[GoValue]) -> GoValue:
    """`[]batch.Rule{...}` as `%#v` prints a slice: `[]batch.Rule(nil)` when it was absent
    (or null), its items in braces otherwise."""
    if not isinstance(given, list):
        return GoValue(f"[]{type_name}(nil)")
    return GoValue(f"[]{type_name}{{" + ", ".join(str(i) for i in items) + "}")


def go_address(type_name: str, value: Any) -> GoValue:
    """`(*int32)(0xc000010000)`: a set pointer as `%#v` prints it, with a made-up address."""
    return GoValue(f"(*{type_name})({'nil' if value is None else '0xc000010000'})")


def go_struct(type_name: str, fields: list[tuple[str, Any]]) -> GoValue:
    """`core.Taint{Key:"k", Value:"", ...}`; strings are quoted, GoValues shown as they are."""
    shown = ", ".join(f"{name}:{json.dumps(v) if isinstance(v, str) else v}" for name, v in fields)
    return GoValue(f"{type_name}{{{shown}}}")


def go_slice(element_type: str, items: list[str]) -> GoValue:
    """A string slice as `%#v` shows it: `[]string{"a", "b"}`."""
    shown = ", ".join(json.dumps(item, ensure_ascii=False) for item in items)
    return GoValue(f"[]{element_type}{{{shown}}}")


def go_quantity(quantity: Quantity) -> GoValue:
    """A Quantity handed to a field error as it is: shown through its String(), unquoted."""
    return GoValue(str(quantity))


def go_time(text: Any) -> Any:
    """A metav1.Time as a field error shows it, by its String(): `2026-01-01 00:00:00 +0000
    UTC`; text that is not a time, as it is."""
    try:
        return GoValue(go_time_string(parse_time(str(text))))
    except ValueError:
        return text
