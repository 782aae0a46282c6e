"""scheduling.k8s.io: priority classes."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    integer,
    name_column,
    name_of,
)


def _row(pc: Object, now: float) -> Row:
    return Row(
        [
            name_of(pc),
            integer(pc.get("value")),
            pc.get("globalDefault") is True,
            age_of(pc, now),
            str(pc.get("preemptionPolicy") or ""),
        ]
    )


PRIORITY_CLASSES = Printer(
    (
        name_column(),
        Column("Value", "integer", doc("V1PriorityClass", "value")),
        Column("Global-Default", "boolean", doc("V1PriorityClass", "globalDefault")),
        age_column(),
        Column("PreemptionPolicy", "string", doc("V1PriorityClass", "preemptionPolicy")),
    ),
    _row,
)
