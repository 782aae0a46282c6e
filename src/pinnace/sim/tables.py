"""The tables of a simulation's report: its time series (one row per sample), its pods (one
row per pod), its nodes at the end and its incidents, written as CSV.

CSV (the standard library's writer) rather than Parquet: it needs no further dependency,
opens in a spreadsheet, and pandas or polars read it in one call. Amounts are in display
units: cpu in cores, memory and other resources in bytes or counts. A time-series column is
named by what it holds, dot-separated: `cluster.cpu.requested`, `pool:general.memory.used`,
`pods.Pending`, `nodes.Ready`, `pool:general.nodes` (its nodes present), `cost.perHour` (what
they cost an hour, when pools have a cost), `failedScheduling.<reason>` (since the previous sample),
`largestFree.<resource>`, `stranded.<shape>.<resource>` (the share of free capacity that
cannot hold one more pod of the shape) and `largestMultiple.<shape>`.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pinnace.resources.names import CPU, MEMORY, PODS
from pinnace.sim.lifecycle import PodRecord, Shape
from pinnace.sim.observe import Incident, NodeState, Sample

Value = float | int | str | None
CLUSTER = "cluster"
WHAT = ("allocatable", "requested", "used")
_RESOURCE_RANK = {CPU: 0, MEMORY: 1, PODS: 2}


def display(resource: str, amount: float) -> float:
    """An amount in the scheduler's units in display units: cpu in cores, the rest as is."""
    return amount / 1000 if resource == CPU else amount


def resource_rank(resource: str) -> tuple[int, str]:
    """cpu, memory, pods, then the rest by name."""
    return _RESOURCE_RANK.get(resource, 3), resource


def scope_name(pool: str) -> str:
    return f"pool:{pool}"


@dataclass
class Table:
    """Rows of named columns; a row without a value for a column holds None."""

    columns: list[str]
    rows: list[list[Value]]

    def column(self, name: str) -> npt.NDArray[np.float64]:
        """A numeric column (NaN where empty)."""
        at = self.columns.index(name)
        return np.array([np.nan if r[at] is None else r[at] for r in self.rows], dtype=float)

    def write_csv(self, path: Path) -> None:
        with path.open("w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(self.columns)
            writer.writerows([_cell(v) for v in row] for row in self.rows)


def _cell(value: Value) -> Value:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def _table(keyed_rows: Sequence[Mapping[tuple[Any, ...], tuple[str, Value]]]) -> Table:
    """A table of rows given as {sort key: (column, value)}; columns in the order of their
    sort keys."""
    names: dict[tuple[Any, ...], str] = {}
    for row in keyed_rows:
        names.update((key, name) for key, (name, _) in row.items())
    keys = sorted(names)
    return Table(
        [names[k] for k in keys],
        [[row[k][1] if k in row else None for k in keys] for row in keyed_rows],
    )


def timeseries(samples: Sequence[Sample]) -> Table:
    table = _table([_sample_cells(s) for s in samples])
    # a FailedScheduling reason not seen in an interval happened 0 times in it
    for at, name in enumerate(table.columns):
        if name.startswith("failedScheduling."):
            for row in table.rows:
                row[at] = row[at] or 0
    return table


def _sample_cells(s: Sample) -> dict[tuple[Any, ...], tuple[str, Value]]:
    cells: dict[tuple[Any, ...], tuple[str, Value]] = {(0,): ("time", s.time)}
    for i, (name, count) in enumerate(s.pods.items()):
        cells[(1, i)] = (f"pods.{name}", count)
    for i, (name, count) in enumerate(s.nodes.items()):
        cells[(2, 0, i)] = (f"nodes.{name}", count)
    for pool, count in s.pool_nodes.items():
        cells[(2, 1, pool)] = (f"{scope_name(pool)}.nodes", count)
    if s.cost_per_hour is not None:
        cells[(2, 2)] = ("cost.perHour", number(s.cost_per_hour))
    scopes = [((0, ""), CLUSTER), *(((1, p), scope_name(p)) for p in s.pools)]
    for row, (scope_key, scope) in enumerate(scopes):
        for col, resource in enumerate(s.resources):
            amounts = (s.allocatable[row, col], s.requested[row, col], s.used[row, col])
            for w, (what, amount) in enumerate(zip(WHAT, amounts, strict=True)):
                if not math.isnan(amount):
                    name = f"{scope}.{resource}.{what}"
                    cells[(3, scope_key, resource_rank(resource), w)] = (
                        name,
                        number(display(resource, amount)),
                    )
    for reason, count in s.failed_scheduling.items():
        cells[(4, reason)] = (f"failedScheduling.{reason}", count)
    frag = s.fragmentation
    for col, resource in enumerate(s.resources):
        largest = display(resource, float(frag.largest_free[col]))
        cells[(5, resource_rank(resource))] = (f"largestFree.{resource}", number(largest))
    for k, shape in enumerate(s.shapes):
        for col, resource in enumerate(s.resources):
            share = float(frag.share[k, col])
            if not math.isnan(share):
                cells[(6, k, resource_rank(resource))] = (f"stranded.{shape}.{resource}", share)
        cells[(7, k)] = (f"largestMultiple.{shape}", int(frag.largest_multiple[k]))
    return cells


def number(value: float) -> float | int:
    """Whole amounts as integers, so a table reads 3 rather than 3.0."""
    value = float(value)
    return int(value) if value.is_integer() else value


POD_COLUMNS = (
    "namespace",
    "name",
    "uid",
    "workload",
    "ownerKind",
    "ownerName",
    "node",
    "created",
    "scheduled",
    "running",
    "finished",
    "deleted",
    "phase",
    "restarts",
    "oomKills",
    "evicted",
    "evictedAt",
    "failedScheduling",
    "lastFailedScheduling",
)


def pods(records: Iterable[PodRecord], shapes: Sequence[Shape]) -> Table:
    """One row per pod, its requests last (`requests.<resource>`)."""
    records = list(records)
    resources = sorted({r for s in shapes for r in s.requests}, key=resource_rank)
    rows: list[list[Value]] = []
    for p in records:
        requests = shapes[p.shape].requests
        rows.append(
            [
                p.namespace,
                p.name,
                p.uid,
                p.workload,
                p.owner_kind,
                p.owner_name,
                p.node,
                p.created,
                p.scheduled,
                p.running,
                p.finished,
                p.deleted,
                p.phase,
                p.restarts,
                p.oom_kills,
                p.evicted,
                p.evicted_at,
                p.failed_scheduling,
                p.last_failed_scheduling,
                *(number(display(r, requests.get(r, 0))) for r in resources),
            ]
        )
    return Table([*POD_COLUMNS, *(f"requests.{r}" for r in resources)], rows)


def nodes(state: NodeState) -> Table:
    """One row per node at the end: pool, ready, schedulable, then per resource allocatable,
    requested and used (for those the metrics API measures), then how many more pods of each
    shape it holds (`fits.<shape>`)."""
    measured = [not np.isnan(state.used[:, i]).all() for i in range(len(state.resources))]
    columns = ["name", "pool", "ready", "schedulable"]
    for i, r in enumerate(state.resources):
        columns += [f"{r}.allocatable", f"{r}.requested"] + ([f"{r}.used"] if measured[i] else [])
    columns += [f"fits.{shape}" for shape in state.shapes]
    rows: list[list[Value]] = []
    for n, name in enumerate(state.names):
        row: list[Value] = [name, state.pools[n], bool(state.ready[n]), bool(state.schedulable[n])]
        for i, r in enumerate(state.resources):
            amounts = (state.allocatable[n, i], state.requested[n, i], state.used[n, i])
            row += [number(display(r, a)) for a in amounts[: 3 if measured[i] else 2]]
        row += [int(f) for f in state.fragmentation.fits[n]]
        rows.append(row)
    return Table(columns, rows)


def incidents(found: Iterable[Incident]) -> Table:
    return Table(["time", "kind", "subject"], [[i.time, i.kind, i.subject] for i in found])
