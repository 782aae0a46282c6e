"""NodeResourcesBalancedAllocation (noderesources/balanced_allocation.go, v1.32): favours nodes
whose resources would be used evenly with the pod placed, score = (1 - std) * 100 where std is
the standard deviation of the requested/allocatable fractions (each capped at 1); with exactly
two resources kube-scheduler uses |f1 - f2| / 2. Float arithmetic in Go's order, truncated.

Best-effort pods are scored too: skipping them came in v1.33.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pinnace.scheduler.events import (
    ASSIGNED_POD_DELETE,
    NODE,
    NODE_ADD,
    UPDATE_NODE_ALLOCATABLE,
    ClusterEvent,
)
from pinnace.scheduler.framework import MAX_NODE_SCORE
from pinnace.scheduler.nodetable import NodeTable, Rows, row_count
from pinnace.scheduler.plugins.resource_allocation import (
    ResourceAllocationScorer,
    Scored,
    allocatable_and_requested,
    resource_specs,
    row_allocatable_and_requested,
)


def balanced_resource_score(fractions: list[float]) -> int:
    """balancedResourceScorer for one node: the fractions of the resources it has."""
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        squares = 0.0
        for f in fractions:
            squares = squares + (f - mean) * (f - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


class NodeResourcesBalancedAllocation(ResourceAllocationScorer):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        super().__init__(resource_specs((args or {}).get("resources")), use_requested=True)

    def _score_node(self, table: NodeTable, scored: tuple[Scored, ...], i: int) -> int:
        amounts = row_allocatable_and_requested(table, scored, i)
        return balanced_resource_score(
            [min(requested / capacity, 1.0) for capacity, requested, _ in amounts if capacity]
        )

    def _score_rows(self, table: NodeTable, scored: tuple[Scored, ...], rows: Rows) -> np.ndarray:
        entries = allocatable_and_requested(table, scored, rows)
        if not entries:
            return np.full(row_count(table, rows), MAX_NODE_SCORE, np.int64)
        allocatable = np.stack([e[0] for e in entries])
        requested = np.stack([e[1] for e in entries])
        counted = allocatable != 0
        fractions = np.minimum(requested / np.where(counted, allocatable, 1), 1.0)
        complete = counted.all(axis=0)
        k = len(entries)
        # Nodes with every resource: vectorised, in Go's order of operations.
        if k == 2:
            std = np.abs((fractions[0] - fractions[1]) / 2)
        elif k > 2:
            total = fractions[0]
            for f in fractions[1:]:
                total = total + f
            mean = total / k
            squares = (fractions[0] - mean) * (fractions[0] - mean)
            for f in fractions[1:]:
                squares = squares + (f - mean) * (f - mean)
            std = np.sqrt(squares / k)
        else:
            std = np.zeros(fractions.shape[1])
        scores = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
        # Nodes lacking some resource: the plain algorithm over the ones they have.
        for j in np.flatnonzero(~complete).tolist():
            scores[j] = balanced_resource_score(fractions[counted[:, j], j].tolist())
        return scores

    def events_to_register(self) -> list[ClusterEvent]:
        return [ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent(NODE, UPDATE_NODE_ALLOCATABLE)]
