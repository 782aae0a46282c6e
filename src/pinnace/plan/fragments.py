"""Fragmentation of the free capacity a plan leaves, for the pod shapes of the cluster's
workloads, over the cluster, per pool and per node (`pinnace.metrics.fragmentation`'s measures).

Free capacity is the scheduler's: allocatable less what the pods bound to the node request, the
pod count among the resources; a node that is not Ready or is cordoned has none. A shape is the
requests of a workload's pods (with one pod), named by its first workload; workloads whose pods
ask for exactly the same share a shape. For each scope and shape: how many more pods of the
shape fit (`fits`), the most one node holds (`largestMultiple`), and per resource the share of
the free capacity that cannot hold one more (`unusable`); and per scope the largest free amount
of each resource on one node (`largestFree`: the largest request of that resource alone that
still fits somewhere).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api.objects import Object
from pinnace.metrics.fragmentation import Amounts, fragmentation, free_capacity
from pinnace.plan.cluster import is_ready, pool_of, quantity
from pinnace.resources.names import PODS
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo
from pinnace.sim.lifecycle import controller_of, workload_of
from pinnace.sim.tables import resource_rank

CLUSTER = "cluster"


@dataclass
class Shape:
    requests: dict[str, int]
    """Scheduler units, `pods` 1 among them."""
    workloads: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        more = len(self.workloads) - 1
        return self.workloads[0] + (f" (+{more} more)" if more else "")


def workload(pod: Object) -> str:
    """The pod's workload, as the simulation's report names it ("Deployment ns/name")."""
    return workload_of(pod, *controller_of(pod))


def shapes_of(pods: Iterable[Object], *, daemons: bool = False) -> list[Shape]:
    """The distinct shapes of `pods`, in the order first seen; DaemonSets' pods left out
    unless `daemons` (one per node: no more of them can be placed)."""
    found: dict[tuple[tuple[str, int], ...], Shape] = {}
    seen: set[tuple[str, str]] = set()
    for pod in pods:
        kind, _ = controller_of(pod)
        if kind == "DaemonSet" and not daemons:
            continue
        name = workload(pod)
        # Pods of one workload mostly ask alike: their requests are read once.
        asked = (name, repr(_resources_of(pod)))
        if asked in seen:
            continue
        seen.add(asked)
        requests = {**PodInfo.from_pod(pod).requests, PODS: 1}
        shape = found.setdefault(tuple(sorted(requests.items())), Shape(requests))
        if name not in shape.workloads:
            shape.workloads.append(name)
    return list(found.values())


def _resources_of(pod: Object) -> tuple[Any, ...]:
    """What a pod's requests are made of: its containers' resources and its overhead."""
    spec = pod.get("spec") or {}
    return (
        [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or ()],
        [c.get("resources") for c in spec.get("containers") or ()],
        spec.get("overhead"),
    )


def report(table: NodeTable, shapes: Sequence[Shape]) -> dict[str, Any]:
    """The fragmentation section of a plan's JSON (see the module's docstring)."""
    resources = _resources(table, shapes)
    columns = [table.column(r) for r in resources]
    usable = np.array(
        [is_ready(n) and not (n.get("spec") or {}).get("unschedulable") for n in table.nodes],
        dtype=bool,
    )
    free = free_capacity(table.allocatable[:, columns], table.requested[:, columns])
    free = free * usable[:, None]
    vectors = np.array(
        [[s.requests.get(r, 0) for r in resources] for s in shapes], dtype=np.int64
    ).reshape(len(shapes), len(resources))
    pools = [pool_of(n) for n in table.nodes]
    scopes = [(CLUSTER, np.ones(len(pools), bool))]
    # A node without a pool label counts in the cluster's scope only, as in the simulation's.
    scopes += [
        (f"pool:{p}", np.array([q == p for q in pools], bool)) for p in sorted(set(pools) - {""})
    ]
    return {
        "resources": resources,
        "shapes": [
            {
                "name": s.name,
                "workloads": s.workloads,
                "requests": {r: quantity(r, s.requests[r]) for r in resources if r in s.requests},
            }
            for s in shapes
        ],
        "scopes": [
            _scope(name, free[rows], vectors, resources, shapes, int(rows.sum()))
            for name, rows in scopes
            if rows.any()
        ],
        "nodes": _nodes(table, pools, free, vectors, resources, shapes),
    }


def _resources(table: NodeTable, shapes: Sequence[Shape]) -> list[str]:
    """The resources some node offers or some shape asks for."""
    offered = {r for r, c in table.columns.items() if (table.allocatable[:, c] > 0).any()}
    asked = {r for s in shapes for r in s.requests}
    return sorted(offered | asked, key=resource_rank)


def _scope(
    name: str,
    free: Amounts,
    vectors: Amounts,
    resources: list[str],
    shapes: Sequence[Shape],
    nodes: int,
) -> dict[str, Any]:
    scope: dict[str, Any] = {
        "scope": name,
        "nodes": nodes,
        "free": _amounts(resources, free.sum(axis=0)),
        "largestFree": _amounts(resources, free.max(axis=0, initial=0)),
        "shapes": [],
    }
    if shapes:
        measures = fragmentation(free, vectors)
        for i, shape in enumerate(shapes):
            scope["shapes"].append(
                {
                    "shape": shape.name,
                    "fits": int(measures.fits[:, i].sum()),
                    "largestMultiple": int(measures.largest_multiple[i]),
                    "unusable": _shares(resources, measures.share[i]),
                }
            )
    return scope


def _nodes(
    table: NodeTable,
    pools: list[str],
    free: Amounts,
    vectors: Amounts,
    resources: list[str],
    shapes: Sequence[Shape],
) -> list[dict[str, Any]]:
    rows = []
    measures = fragmentation(free, vectors) if shapes else None
    for i, name in enumerate(table.names):
        row: dict[str, Any] = {"name": name, "pool": pools[i], "free": _amounts(resources, free[i])}
        if measures is not None:
            fits = measures.fits[i]
            stranded = free[i][None, :] - fits[:, None] * vectors
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where((vectors > 0) & (free[i] > 0), stranded / free[i], np.nan)
            row["shapes"] = [
                {"shape": s.name, "fits": int(fits[j]), "unusable": _shares(resources, share[j])}
                for j, s in enumerate(shapes)
            ]
        rows.append(row)
    return sorted(rows, key=lambda r: (r["pool"], r["name"]))


def _amounts(resources: list[str], values: Amounts) -> dict[str, str]:
    return {r: quantity(r, int(v)) for r, v in zip(resources, values.tolist(), strict=True)}


def _shares(resources: list[str], values: Any) -> dict[str, float | None]:
    # math.isnan on the listed floats: numpy's on each Python float costs ten times as much
    return {
        r: None if math.isnan(v) else round(v, 6)
        for r, v in zip(resources, np.asarray(values, dtype=float).tolist(), strict=True)
    }


def summary_rows(section: Mapping[str, Any]) -> list[list[str]]:
    """One row per scope and shape: fits, largest multiple, the unusable share of cpu and
    memory (the text table's)."""
    rows = []
    for scope in section["scopes"]:
        for shape in scope["shapes"]:
            unusable = shape["unusable"]
            rows.append(
                [
                    scope["scope"],
                    shape["shape"],
                    str(shape["fits"]),
                    str(shape["largestMultiple"]),
                    *(_percent(unusable.get(r)) for r in ("cpu", "memory")),
                ]
            )
    return rows


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"
