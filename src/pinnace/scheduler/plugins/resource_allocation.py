"""What the resource scoring strategies share (noderesources/resource_allocation.go): for each
configured resource, the node's allocatable and its requested amount with the pod added.

NodeResourcesFit scores with non-zero requests (a container without a cpu or memory request
counting as 100m / 200Mi, on the node and for the pod); NodeResourcesBalancedAllocation with
the actual requests (`use_requested`). A scalar resource the pod does not request, and any
resource the node has none of, is left out of the node's score (allocatable 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from pinnace.scheduler.framework import CycleState, RowScores
from pinnace.scheduler.nodetable import NodeTable, RowCache, Rows, gather
from pinnace.scheduler.podinfo import PodInfo


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def resource_specs(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ResourceSpec, ...]:
    """`resources` from plugin arguments: [{name, weight}], weight defaulting to 1."""
    if not raw:
        return DEFAULT_RESOURCES
    return tuple(ResourceSpec(r["name"], int(r.get("weight") or 1)) for r in raw)


class Scored(NamedTuple):
    """One resource a node is scored on: its allocatable column, where its requested amount
    is (`requested` or `non_zero_requested`, and the column there), what the pod adds, and
    the resource's weight."""

    allocatable_column: int
    non_zero: bool
    requested_column: int
    pod_request: int
    weight: int


def scored_resources(
    table: NodeTable, pod: PodInfo, resources: Sequence[ResourceSpec], use_requested: bool
) -> tuple[Scored, ...]:
    """The configured resources that count for the pod, in order: a scalar resource the pod
    does not request, or that no node has, is left out."""
    out = []
    for spec in resources:
        name = spec.name
        if name in (CPU, MEMORY) and not use_requested:
            non_zero_column = 0 if name == CPU else 1
            pod_request = pod.non_zero_cpu if name == CPU else pod.non_zero_memory
            out.append(Scored(table.columns[name], True, non_zero_column, pod_request, spec.weight))
        elif name in (CPU, MEMORY, EPHEMERAL_STORAGE) or (
            is_scalar_resource(name) and pod.requests.get(name, 0) != 0
        ):
            column = table.columns.get(name)
            if column is not None:
                pod_request = pod.requests.get(name, 0)
                out.append(Scored(column, False, column, pod_request, spec.weight))
    return tuple(out)


class ScoredResources:
    """scored_resources for a strategy's resources, kept for the last pod shape: pods of one
    template share their requests mapping, so a pod like the last one costs a comparison."""

    def __init__(self, resources: Sequence[ResourceSpec], use_requested: bool) -> None:
        self.resources = tuple(resources)
        self.use_requested = use_requested
        self._last: tuple[Any, ...] = (None,)

    def of(self, table: NodeTable, pod: PodInfo) -> tuple[Scored, ...]:
        last = self._last
        if (
            last[0] == table.epoch  # epochs are unique across tables
            and last[1] is pod.requests
            and last[2] == pod.non_zero_cpu
            and last[3] == pod.non_zero_memory
        ):
            return last[4]
        scored = scored_resources(table, pod, self.resources, self.use_requested)
        self._last = (table.epoch, pod.requests, pod.non_zero_cpu, pod.non_zero_memory, scored)
        return scored


def allocatable_and_requested(
    table: NodeTable, scored: Sequence[Scored], rows: Rows
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Per scored resource: (allocatable, requested with the pod, weight) over `rows`."""
    allocatable, requested = table.allocatable[rows], table.requested[rows]
    non_zero = table.non_zero_requested[rows]
    return [
        (
            allocatable[:, r.allocatable_column],
            (non_zero if r.non_zero else requested)[:, r.requested_column] + r.pod_request,
            r.weight,
        )
        for r in scored
    ]


def row_allocatable_and_requested(
    table: NodeTable, scored: Sequence[Scored], i: int
) -> list[tuple[int, int, int]]:
    """allocatable_and_requested on row `i` alone, as Python integers."""
    allocatable, requested, non_zero = table.amounts(i)
    return [
        (allocatable[column], (non_zero if nz else requested)[amount] + pod_request, weight)
        for column, nz, amount, pod_request, weight in scored
    ]


class ResourceAllocationScorer:
    """The Score of a resource strategy (resourceAllocationScorer): each node's score depends on
    its own row alone, so the scores of every row are kept per pod shape (`row_scores`) and a
    cycle gathers the feasible ones. Subclasses score rows in bulk and one row at a time."""

    def __init__(self, resources: Sequence[ResourceSpec], use_requested: bool) -> None:
        self.resources = tuple(resources)
        self._scores = RowCache()
        self._scored = ScoredResources(self.resources, use_requested)
        self._last: tuple[NodeTable | None, RowScores | None] = (None, None)

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        return gather(self._scores.get(table, *self.row_scores(state, pod, table)), nodes)

    def row_scores(self, state: CycleState, pod: PodInfo, table: NodeTable) -> RowScores:
        scored = self._scored.of(table, pod)
        last_table, last = self._last
        if last_table is table and last is not None and last.key is scored:
            return last  # a pod like the last one: the same scores, and the same key object
        row_scores = RowScores(
            scored,
            partial(self._score_rows, table, scored),
            partial(self._score_node, table, scored),  # a partial's call is no Python frame
        )
        self._last = (table, row_scores)
        return row_scores

    def _score_rows(self, table: NodeTable, scored: tuple[Scored, ...], rows: Rows) -> np.ndarray:
        raise NotImplementedError

    def _score_node(self, table: NodeTable, scored: tuple[Scored, ...], i: int) -> int:
        raise NotImplementedError
