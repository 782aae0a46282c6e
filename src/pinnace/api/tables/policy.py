"""policy/v1: pod disruption budgets."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    integer,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import int_or_string


def _bound(spec: Object, key: str) -> str:
    value = spec.get(key)
    return "N/A" if value is None else int_or_string(value)


def _row(pdb: Object, now: float) -> Row:
    spec = section(pdb, "spec")
    return Row(
        [
            name_of(pdb),
            _bound(spec, "minAvailable"),
            _bound(spec, "maxUnavailable"),
            integer(section(pdb, "status").get("disruptionsAllowed")),
            age_of(pdb, now),
        ]
    )


POD_DISRUPTION_BUDGETS = Printer(
    (
        name_column(),
        Column("Min Available", "string", "The minimum number of pods that must be available."),
        Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        Column(
            "Allowed Disruptions",
            "integer",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        age_column(),
    ),
    _row,
)
