"""metrics.k8s.io: node and pod metrics as metrics-server v0.7 prints them, the name, one
column per resource of the usage (cpu, memory) and the window; a pod's usage is the sum of its
containers'."""

from __future__ import annotations

from pinnace.api.tables.columns import Column, Object, Printer, Row, items, name_of, section
from pinnace.resources.quantity import Quantity

_RESOURCES = ("cpu", "memory")
_COLUMNS = (
    Column("Name", "string", "Name of the resource", format="name"),
    *(Column(resource, "string", "", format="quantity") for resource in _RESOURCES),
    Column("Window", "string", "", format="duration"),
)


def _cells(name: str, usages: list[Object], window: str) -> Row:
    totals = [sum((Quantity(u.get(r) or "0") for u in usages), Quantity(0)) for r in _RESOURCES]
    return Row([name, *(str(total) for total in totals), window])


NODE_METRICS = Printer(
    _COLUMNS,
    lambda node, now: _cells(name_of(node), [section(node, "usage")], str(node.get("window", ""))),
)
POD_METRICS = Printer(
    _COLUMNS,
    lambda pod, now: _cells(
        name_of(pod),
        [section(c, "usage") for c in items(pod, "containers")],
        str(pod.get("window", "")),
    ),
)
