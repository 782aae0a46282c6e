"""Readers of the values a Scenario file holds (docs/simulation.md): times, numbers, quantities,
strings, lists and mappings. Each returns the value it read or refuses it with a
`ScenarioError` naming the field, in the words of Kubernetes' field errors
(pinnace.api.field), for the scenario's reader and the trace sources it names to share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NoReturn

from pinnace.api import field as fields
from pinnace.api.field import FieldError, Path
from pinnace.clock.duration import parse_duration
from pinnace.resources.quantity import Quantity, QuantityError


class ScenarioError(ValueError):
    """A bad scenario; the message names the file, the line and the field."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
        """The path of the field it is about ("" if it is about the whole)."""


def seconds(value: Any, path: Path, positive: bool = False, signed: bool = False) -> float:
    """Seconds: a Go duration ("1m30s") or a number of seconds; below zero only if `signed`."""
    if isinstance(value, str):
        try:
            result = parse_duration(value) / 1e9
        except ValueError as e:
            fail_at(path, str(e))
    elif is_number(value) and math.isfinite(value):
        result = float(value)
    else:
        fail(fields.invalid(path, value, 'must be a duration such as "1m30s", or seconds'))
    if (result < 0 and not signed) or (positive and result <= 0):
        fail(
            fields.invalid(
                path, value, "must be greater than 0" if positive else "must not be negative"
            )
        )
    return result


def cores(value: Any, path: Path) -> float:
    return amount(value, path, "a number of cores or a quantity such as 500m")


def byte_count(value: Any, path: Path) -> float:
    return amount(value, path, "a number of bytes or a quantity such as 512Mi")


def amount(value: Any, path: Path, what: str) -> float:
    """A quantity ("500m", "1Gi") or a plain number, at least 0."""
    if isinstance(value, str):
        try:
            result = float(Quantity(value).as_fraction())
        except QuantityError as e:
            fail(fields.invalid(path, value, str(e)))
    elif is_number(value):
        result = float(value)
    else:
        fail(fields.invalid(path, value, f"must be {what}"))
    if not 0 <= result < math.inf:
        fail(fields.invalid(path, value, "must not be negative"))
    return result


def number(value: Any, path: Path) -> float:
    if not is_number(value) or not math.isfinite(value):
        fail(fields.type_invalid(path, value, "must be a number"))
    return float(value)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def string(value: Any, path: Path) -> str:
    if value is None or value == "":
        fail(fields.required(path))
    if not isinstance(value, str):
        fail(fields.type_invalid(path, value, "must be of type string"))
    return value


def list_of(value: Any, path: Path) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        fail(fields.type_invalid(path, value, "must be of type array"))
    return value


def mapping(value: Any, path: Path, known: tuple[str, ...]) -> dict[str, Any]:
    """The mapping `value` ({} for None), with no field but the `known`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(fields.type_invalid(path, value, "must be of type object"))
    unknown(value, known, path)
    return value


def unknown(raw: Mapping[str, Any], known: tuple[str, ...], path: Path) -> None:
    for key in raw:
        if key not in known:
            where = f"{path}: " if str(path) else ""
            raise ScenarioError(f'{where}unknown field "{key}"', str(path.child(key)))


def fail(error: FieldError) -> NoReturn:
    raise ScenarioError(str(error), error.field)


def fail_at(path: Path, message: str) -> NoReturn:
    raise ScenarioError(f"{path}: {message}", str(path))
