"""Column definitions and the pieces of a printer every kind shares.

A printer is a list of columns and a function from one object to its cells (and, for pods,
row conditions). kube-apiserver always prints the wide form: columns of priority 1 are in
every table, and kubectl hides them unless asked for `-o wide`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.objects import Object
from pinnace.api.openapi.modeldocs import field_description
from pinnace.api.tables.age import since

Cell = str | int | float | bool | None


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True)
class Row:
    cells: list[Cell]
    conditions: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    row: Callable[[Object, float], Row]
    """(object, now) -> the row's cells, in column order."""


def doc(model: str, json_name: str) -> str:
    """A column description taken from a field's API documentation."""
    return field_description(model, json_name)


def name_column(priority: int = 0) -> Column:
    return Column("Name", "string", doc("V1ObjectMeta", "name"), priority, "name")


def age_column() -> Column:
    return Column("Age", "string", doc("V1ObjectMeta", "creationTimestamp"))


def containers_columns(selector_description: str) -> tuple[Column, ...]:
    """The wide Containers, Images and Selector columns of the workload kinds."""
    return (
        Column("Containers", "string", "Names of each container in the template.", 1),
        Column("Images", "string", "Images referenced by each container in the template.", 1),
        Column("Selector", "string", selector_description, 1),
    )


def meta(obj: Object) -> Object:
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def section(obj: Object, *path: str) -> Object:
    """The nested object at `path`, {} where any step is missing."""
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def items(obj: Object, *path: str) -> list[Object]:
    """The list at `path`, keeping only its object entries."""
    *parents, last = path
    value = section(obj, *parents).get(last)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def name_of(obj: Object) -> str:
    return str(meta(obj).get("name", ""))


def age_of(obj: Object, now: float) -> str:
    return since(meta(obj).get("creationTimestamp"), now)


def integer(value: Any) -> int:
    """An integer field as Go reads it: a missing value is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
