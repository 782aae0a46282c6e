"""NodeResourcesBalancedAllocation (noderesources/balanced_allocation.go, v1.32): favours nodes
whose resources would be used evenly with the pod placed, score = (1 - std) * 100 where std is
the standard deviation of the requested/allocatable fractions (each capped at 1); with exactly
two resources kube-scheduler uses |f1 - f2| / 2. Float arithmetic in Go's order, truncated.

Best-effort pods are scored too: skipping them came in v1.33.
"""

from __future__ import annotations

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
from pinnace.scheduler.framework import MAX_NODE_SCORE, CycleState
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.resource_allocation import (
    allocatable_and_requested,
    resource_specs,
)
from pinnace.scheduler.podinfo import PodInfo


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.resources = resource_specs((args or {}).get("resources"))

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        entries = [
            e
            for e in allocatable_and_requested(
                table, pod, self.resources, nodes, use_requested=True
            )
            if e is not None
        ]
        n = len(nodes)
        fractions, present = [], []
        for allocatable, requested, _ in entries:
            counted = allocatable != 0
            fraction = requested / np.where(counted, allocatable, 1)
            fractions.append(np.minimum(fraction, 1.0))
            present.append(counted)
        count = np.zeros(n, np.int64)
        total = np.zeros(n)
        first, second = np.zeros(n), np.zeros(n)
        for fraction, counted in zip(fractions, present, strict=True):
            total = total + np.where(counted, fraction, 0.0)
            first = np.where(counted & (count == 0), fraction, first)
            second = np.where(counted & (count == 1), fraction, second)
            count += counted
        std = np.abs((first - second) / 2)
        if len(entries) > 2:
            k = np.maximum(count, 1)
            mean = total / k
            squares = np.zeros(n)
            for fraction, counted in zip(fractions, present, strict=True):
                squares = squares + np.where(counted, (fraction - mean) * (fraction - mean), 0.0)
            std = np.where(count > 2, np.sqrt(squares / k), std)
        std = np.where(count < 2, 0.0, std)
        return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent(NODE, UPDATE_NODE_ALLOCATABLE)]
