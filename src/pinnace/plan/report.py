"""What a plan answers, three ways: `document` (JSON, `planVersion` 1, the same for the same
input and seed), plain-text tables, and one self-contained HTML page (plotly.js inline, as the
simulation's report) with the tables and plots of the nodes' requests and the fragmentation.

Every document has `planVersion`, `command`, `cluster` (where the snapshot came from, its nodes,
pods and pools), the command's own keys, `nodes` (per node: pool, allocatable and requested after
the plan) and `fragmentation` (`pinnace.plan.fragments`). Amounts are Kubernetes quantities
(`1500m`, `4Gi`); shares are fractions (0.25 is 25 %).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]

from pinnace.plan import fragments
from pinnace.plan.cluster import Snapshot, pool_of, quantity
from pinnace.plan.fragments import Shape
from pinnace.plan.placement import Placer
from pinnace.resources.lists import parse_resource_list, scheduler_value
from pinnace.sim.html import page

PLAN_VERSION = 1
Figure = Callable[[Mapping[str, Any]], go.Figure]
SHOWN = ("cpu", "memory", "pods")
"""The resources the text tables show (the JSON has them all)."""


@dataclass
class Table:
    title: str
    head: Sequence[str]
    rows: list[list[str]]

    def text(self) -> str:
        if not self.rows:
            return ""
        cells = [list(self.head), *self.rows]
        widths = [max(len(r[c]) for r in cells) for c in range(len(self.head))]
        lines = [self.title]
        lines += [
            "   ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells
        ]
        return "\n".join(lines)

    def html(self) -> str:
        if not self.rows:
            return ""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
            for row in self.rows
        )
        return f"<h2>{html.escape(self.title)}</h2><table><tr>{head}</tr>{body}</table>"


@dataclass
class PlanReport:
    """A plan's answer: `document` is the JSON; `headline` the lines said first."""

    document: dict[str, Any]
    headline: list[str]
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, Figure]] = field(default_factory=list)
    """The command's own plots, by element id, made from the document when the page is."""
    answered_no: bool = False
    """The question asked whether something can be done and the answer is no: the workloads
    do not fit (`plan fit`), no count of nodes up to the limit makes everything schedule
    (`plan nodes`). `pinnace plan` then exits 3."""

    def json(self) -> str:
        return json.dumps(self.document, indent=2)

    def text(self) -> str:
        parts = ["\n".join(self.headline), *(t.text() for t in self.tables)]
        return "\n\n".join(p for p in parts if p) + "\n"

    def html(self) -> str:
        title = f"Pinnace plan {self.document['command']}: {self.document['cluster']['source']}"
        figures = [*self.figures, *STANDARD_FIGURES]
        lines = "".join(f"<p>{html.escape(line)}</p>" for line in self.headline)
        tables = "\n".join(t.html() for t in self.tables)
        plots = [(plot_id, figure(self.document)) for plot_id, figure in figures]
        return page(title, f"{lines}\n{tables}", plots)

    def write_html(self, path: str | Path) -> None:
        Path(path).write_text(self.html(), encoding="utf-8")


def document(command: str, snapshot: Snapshot, body: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's JSON: the version, the command, the cluster, then `body`."""
    return {
        "planVersion": PLAN_VERSION,
        "command": command,
        "cluster": {
            "source": snapshot.source,
            "nodes": len(snapshot.nodes),
            "pods": len(snapshot.pods),
            "pendingPods": len(snapshot.pending_pods()),
            "pools": {
                pool: sum(1 for n in snapshot.nodes if pool_of(n) == pool)
                for pool in snapshot.pool_names()
            },
            "schedulerConfiguration": (
                snapshot.scheduler_config.describe() if snapshot.scheduler_config else "default"
            ),
        },
        **body,
    }


def cluster_sections(placer: Placer, shapes: Sequence[Shape]) -> dict[str, Any]:
    """`nodes` and `fragmentation`, as the placer's scheduler sees the cluster now."""
    table = placer.core.table
    rows = []
    for i, name in enumerate(table.names):
        node = table.nodes[i]
        allocatable = _allocatable(node)
        requested = {r: quantity(r, int(table.requested[i, table.column(r)])) for r in allocatable}
        rows.append(
            {
                "name": name,
                "pool": pool_of(node),
                "allocatable": {r: quantity(r, v) for r, v in allocatable.items()},
                "requested": requested,
                "pods": int(table.requested[i, table.column("pods")]),
            }
        )
    rows.sort(key=lambda r: (r["pool"], r["name"]))
    return {"nodes": rows, "fragmentation": fragments.report(table, shapes)}


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    listed = parse_resource_list((node.get("status") or {}).get("allocatable"), "allocatable")
    return {r: scheduler_value(r, q) for r, q in listed.items()}


def node_table(doc: Mapping[str, Any], title: str = "Nodes after the plan") -> Table:
    rows = []
    for node in doc["nodes"]:
        cells = [node["name"], node["pool"] or "-"]
        for r in SHOWN:
            cells.append(f"{node['requested'].get(r, '0')}/{node['allocatable'].get(r, '0')}")
        rows.append(cells)
    return Table(title, ["NODE", "POOL", *(f"{r.upper()} REQ/ALLOC" for r in SHOWN)], rows)


def fragmentation_table(doc: Mapping[str, Any], when: str = "") -> Table:
    """The fragmentation table; `when` says of which moment, if not the plan's end."""
    rows = fragments.summary_rows(doc["fragmentation"])
    head = ["SCOPE", "SHAPE", "FITS", "LARGEST MULTIPLE", "UNUSABLE CPU", "UNUSABLE MEMORY"]
    return Table(f"Fragmentation of the free capacity, per workload shape{when}", head, rows)


def _requested(doc: Mapping[str, Any]) -> go.Figure:
    nodes = doc.get("nodes") or []
    figure = go.Figure()
    names = [f"{n['name']} ({n['pool']})" if n["pool"] else n["name"] for n in nodes]
    for resource in SHOWN:
        shares = []
        for n in nodes:
            allocatable = _amount(resource, n["allocatable"].get(resource))
            requested = _amount(resource, n["requested"].get(resource))
            shares.append(100 * requested / allocatable if allocatable else None)
        figure.add_trace(go.Bar(x=names, y=shares, name=resource))
    figure.update_layout(
        title="Requested, % of allocatable, per node after the plan",
        yaxis_title="%",
        barmode="group",
        template="plotly_white",
        height=420,
    )
    return figure


def _fragmentation(doc: Mapping[str, Any]) -> go.Figure:
    figure = go.Figure()
    for scope in (doc.get("fragmentation") or {}).get("scopes") or []:
        shapes = [s["shape"] for s in scope["shapes"]]
        for resource in ("cpu", "memory"):
            shares = [s["unusable"].get(resource) for s in scope["shapes"]]
            values = [None if v is None else 100 * v for v in shares]
            figure.add_trace(go.Bar(x=shapes, y=values, name=f"{scope['scope']} {resource}"))
    figure.update_layout(
        title="Free capacity that cannot hold one more pod of each shape",
        yaxis_title="% of free",
        barmode="group",
        template="plotly_white",
        height=420,
    )
    return figure


STANDARD_FIGURES: list[tuple[str, Figure]] = [
    ("nodes-requested", _requested),
    ("fragmentation", _fragmentation),
]


def _amount(resource: str, text: str | None) -> int:
    if not text:
        return 0
    parsed = parse_resource_list({resource: text}, "amount")
    return scheduler_value(resource, parsed[resource])
