"""Resource lists (`{name: Quantity}`) and their arithmetic.

Every function returns a new dict and leaves its arguments alone. Elementwise operations treat
a missing name as zero, as Kubernetes' resource list helpers do.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from reprlib import repr as brief
from typing import Any

from pinnace.resources.names import CPU
from pinnace.resources.quantity import Quantity, QuantityError

__all__ = [
    "ResourceList",
    "ResourceQuantityError",
    "add",
    "fits",
    "insufficient",
    "maximum",
    "parse_quantity",
    "parse_resource_list",
    "scheduler_value",
    "subtract",
]

ResourceList = dict[str, Quantity]


class ResourceQuantityError(QuantityError):
    """A bad quantity inside a resource list; the message names the field it came from."""

    def __init__(self, field: str, value: str, reason: str) -> None:
        super().__init__(value, reason)
        self.field = field
        self.args = (f'{field}: invalid quantity "{value}": {reason}',)


def parse_quantity(value: Any) -> Quantity:
    """One quantity from a decoded manifest, as resource.Quantity's JSON decoding reads it.

    A string is parsed without surrounding spaces, an int is whole units, null is zero and a
    float (YAML `cpu: 0.5`) is parsed from its shortest decimal text, as the JSON number was
    written; other JSON values are parsed from their JSON text. Raises QuantityError, or
    ValueError for values JSON cannot hold.
    """
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str):
        return Quantity(value.strip())
    if value is None:
        return Quantity(0)
    if isinstance(value, int) and not isinstance(value, bool):
        return Quantity(value)
    if isinstance(value, float) and math.isfinite(value):
        return Quantity(repr(value))
    try:
        # Any other JSON value is parsed from its JSON text, as Go's UnmarshalJSON does: a
        # bool, list or object then fails with the quantity's own format error.
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise ValueError(f"a quantity must be a string or a number, not {brief(value)}") from None
    return Quantity(text)


def parse_resource_list(raw: Any, field: str = "resources") -> ResourceList:
    """`{name: str | int | Quantity}` (or None) to `{name: Quantity}`.

    A bad quantity raises a ResourceQuantityError (a QuantityError) naming `field.name`; a
    value of the wrong shape raises ValueError naming it too.
    """
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{field}: must map resource names to quantities, not {brief(raw)}")
    parsed: ResourceList = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            raise ValueError(f"{field}: resource names must be strings, not {brief(name)}")
        try:
            parsed[name] = parse_quantity(value)
        except QuantityError as e:
            raise ResourceQuantityError(f"{field}.{name}", e.value, e.reason) from None
        except ValueError as e:
            raise ValueError(f"{field}.{name}: {e}") from None
    return parsed


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    result = dict(a)
    for name, q in b.items():
        result[name] = result[name] + q if name in result else q
    return result


def subtract(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """a - b for every name in either (a name only in b comes out negative)."""
    result = dict(a)
    for name, q in b.items():
        result[name] = result[name] - q if name in result else -q
    return result


def maximum(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    result = dict(a)
    for name, q in b.items():
        if name not in result or q > result[name]:
            result[name] = q
    return result


def insufficient(requested: Mapping[str, Quantity], available: Mapping[str, Quantity]) -> list[str]:
    """Names whose request exceeds what is available (a missing name has zero available)."""
    return [name for name, q in requested.items() if q > available.get(name, 0)]


def fits(requested: Mapping[str, Quantity], available: Mapping[str, Quantity]) -> bool:
    """Whether every request is at most what is available."""
    return not insufficient(requested, available)


def scheduler_value(name: str, quantity: Quantity) -> int:
    """The integer the scheduler keeps for a resource: millicores for cpu, whole units
    (bytes, counts) for everything else, each rounded up as Quantity does."""
    return quantity.milli_value() if name == CPU else quantity.value()
