"""NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go and the scoring
strategies beside it).

Filter: the pod fits if the node has room for one more pod and, for every resource the pod
requests (cpu, memory, ephemeral-storage, scalar resources), request <= allocatable - requested.
Score: LeastAllocated (default), MostAllocated or RequestedToCapacityRatio over the configured
resources and weights, in kube-scheduler's integer arithmetic (Go's truncating division).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, is_extended_resource_name
from pinnace.scheduler.events import (
    ASSIGNED_POD_DELETE,
    NODE,
    NODE_ADD,
    UPDATE_NODE_ALLOCATABLE,
    ClusterEvent,
)
from pinnace.scheduler.framework import (
    MAX_NODE_SCORE,
    SUCCESS,
    CycleState,
    Status,
    Verdicts,
    unschedulable,
)
from pinnace.scheduler.nodetable import PODS_COLUMN, NodeTable, RowCache, Rows, row_count
from pinnace.scheduler.plugins.resource_allocation import (
    ResourceAllocationScorer,
    Scored,
    allocatable_and_requested,
    resource_specs,
    row_allocatable_and_requested,
)
from pinnace.scheduler.podinfo import PodInfo

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
_STATE_KEY = "PreFilterNodeResourcesFit"
_NATIVE_ORDER = (CPU, MEMORY, EPHEMERAL_STORAGE)
TOO_MANY_PODS = "Too many pods"


def _go_div(numerator: np.ndarray, denominator: np.ndarray | int) -> np.ndarray:
    """Go's integer division, truncating toward zero (denominator > 0)."""
    quotient = np.abs(numerator) // denominator
    return np.where(numerator < 0, -quotient, quotient)


def least_requested_score(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """((capacity - requested) * 100) / capacity; 0 when over capacity or no capacity."""
    safe = np.maximum(capacity, 1)
    score = (capacity - requested) * MAX_NODE_SCORE // safe
    return np.where((capacity == 0) | (requested > capacity), 0, score)


def most_requested_score(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(requested * 100) / capacity with requested capped at capacity; 0 without capacity."""
    safe = np.maximum(capacity, 1)
    score = np.minimum(requested, capacity) * MAX_NODE_SCORE // safe
    return np.where(capacity == 0, 0, score)


def broken_linear(shape: Sequence[tuple[int, int]], p: np.ndarray) -> np.ndarray:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by
    utilization: the first point at or above p decides, interpolated from the one before."""
    result = np.full_like(p, shape[-1][1])
    for i in range(len(shape) - 1, -1, -1):  # backwards, so the first matching point wins
        utilization, score = shape[i]
        if i == 0:
            value = np.full_like(p, score)
        else:
            u0, s0 = shape[i - 1]
            value = s0 + _go_div((score - s0) * (p - u0), utilization - u0)
        result = np.where(p <= utilization, value, result)
    return result


def _fits(table: NodeTable, checked: tuple[tuple[str, int, int], ...], rows: Rows) -> np.ndarray:
    """Whether one more pod, and each checked request, fits on the `rows`."""
    allocatable, requested = table.allocatable[rows], table.requested[rows]
    fits = requested[:, PODS_COLUMN] < allocatable[:, PODS_COLUMN]
    for _, column, value in checked:
        fits &= allocatable[:, column] - requested[:, column] >= value
    return fits


def _fits_row(table: NodeTable, checked: tuple[tuple[str, int, int], ...], i: int) -> bool:
    """_fits on row `i` alone."""
    allocatable, requested, _ = table.amounts(i)
    return requested[PODS_COLUMN] < allocatable[PODS_COLUMN] and all(
        allocatable[column] - requested[column] >= value for _, column, value in checked
    )


def _in_reason_order(checked: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """fitsRequest's order: cpu, memory, ephemeral-storage, then scalar resources."""
    return sorted(checked, key=lambda r: _NATIVE_ORDER.index(r[0]) if r[0] in _NATIVE_ORDER else 3)


class NodeResourcesFit(ResourceAllocationScorer):
    name = "NodeResourcesFit"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        strategy = args.get("scoringStrategy") or {}
        self.strategy: str = strategy.get("type") or LEAST_ALLOCATED
        super().__init__(resource_specs(strategy.get("resources")), use_requested=False)
        self.ignored_resources = frozenset(args.get("ignoredResources") or ())
        self.ignored_resource_groups = frozenset(args.get("ignoredResourceGroups") or ())
        shape = (strategy.get("requestedToCapacityRatio") or {}).get("shape") or ()
        self.shape = tuple(
            (int(p["utilization"]), int(p["score"]) * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE))
            for p in shape
        )
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO and not self.shape:
            raise ValueError("scoringStrategy.requestedToCapacityRatio.shape: Required value")
        self._fits = RowCache()
        self._last_checked: tuple[Any, ...] = (None,)
        if self.strategy not in (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO):
            raise ValueError(
                f'scoringStrategy.type: Unsupported value: "{self.strategy}": supported values: '
                f'"{LEAST_ALLOCATED}", "{MOST_ALLOCATED}", "{REQUESTED_TO_CAPACITY_RATIO}"'
            )

    # Filter.
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        last = self._last_checked  # pods of one template share their requests mapping
        if last[0] == table.epoch and last[1] is pod.requests:  # epochs: unique across tables
            checked = last[2]
        else:
            checked = tuple(
                (name, table.column(name), value)
                for name, value in pod.requests.items()
                if not self._ignored(name)
            )
            self._last_checked = (table.epoch, pod.requests, checked)
        state.write(_STATE_KEY, checked)
        return SUCCESS

    def checked(self, state: CycleState) -> tuple[tuple[str, int, int], ...]:
        """What Filter checks for the pod: (resource, table column, request) of each resource
        it requests and does not ignore."""
        return state.read(_STATE_KEY)

    def _ignored(self, name: str) -> bool:
        return is_extended_resource_name(name) and (
            name in self.ignored_resources or name.split("/", 1)[0] in self.ignored_resource_groups
        )

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        checked = state.read(_STATE_KEY)
        fits = self._fits.get(
            table, checked, partial(_fits, table, checked), partial(_fits_row, table, checked)
        )
        return feasible & fits

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        """fitsRequest's reasons, in its order: pods, cpu, memory, ephemeral-storage, scalars."""
        allocatable, requested = table.allocatable[i], table.requested[i]
        reasons = []
        if requested[PODS_COLUMN] + 1 > allocatable[PODS_COLUMN]:
            reasons.append(TOO_MANY_PODS)
        for name, column, value in _in_reason_order(state.read(_STATE_KEY)):
            if value > allocatable[column] - requested[column]:
                reasons.append(f"Insufficient {name}")
        return unschedulable(*reasons) if reasons else SUCCESS

    def node_statuses(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Sequence[int] | np.ndarray,
        requested: np.ndarray | None = None,
    ) -> Verdicts:
        """node_status of many rows at once (with `requested` in place of the rows' own, if
        given)."""
        checked = _in_reason_order(state.read(_STATE_KEY))
        allocatable = table.allocatable[rows]
        if requested is None:
            requested = table.requested[rows]
        short = [requested[:, PODS_COLUMN] + 1 > allocatable[:, PODS_COLUMN]]
        short += [value > allocatable[:, c] - requested[:, c] for _, c, value in checked]
        reasons = [TOO_MANY_PODS, *(f"Insufficient {name}" for name, _, _ in checked)]
        codes = np.zeros(len(rows), np.int64)
        for bit, lacking in enumerate(short):
            codes |= lacking.astype(np.int64) << bit
        distinct, which = np.unique(codes, return_inverse=True)
        statuses = []
        for code in distinct.tolist():
            missing = [reason for bit, reason in enumerate(reasons) if code >> bit & 1]
            statuses.append(unschedulable(*missing) if missing else SUCCESS)
        return Verdicts(which.reshape(-1), tuple(statuses))

    # Score.
    def _score_node(self, table: NodeTable, scored: tuple[Scored, ...], i: int) -> int:
        """One node's score, as resourceAllocationScorer.score and the strategy's scorer."""
        node_score = weight_sum = 0
        for capacity, requested, weight in row_allocatable_and_requested(table, scored, i):
            if capacity == 0:
                continue
            if self.strategy == LEAST_ALLOCATED:
                score = 0 if requested > capacity else (capacity - requested) * 100 // capacity
            elif self.strategy == MOST_ALLOCATED:
                score = min(requested, capacity) * MAX_NODE_SCORE // capacity
            else:
                utilization = (
                    MAX_UTILIZATION
                    if requested > capacity
                    else requested * MAX_UTILIZATION // capacity
                )
                score = int(broken_linear(self.shape, np.array([utilization]))[0])
                if score <= 0:
                    continue
            node_score += score * weight
            weight_sum += weight
        if weight_sum == 0:
            return 0
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return (2 * node_score + weight_sum) // (2 * weight_sum)
        return node_score // weight_sum

    def _score_rows(self, table: NodeTable, scored: tuple[Scored, ...], rows: Rows) -> np.ndarray:
        node_score = np.zeros(row_count(table, rows), np.int64)
        weight_sum = np.zeros(row_count(table, rows), np.int64)
        for allocatable, requested, weight in allocatable_and_requested(table, scored, rows):
            counted = allocatable != 0
            if self.strategy == LEAST_ALLOCATED:
                resource_score = least_requested_score(requested, allocatable)
            elif self.strategy == MOST_ALLOCATED:
                resource_score = most_requested_score(requested, allocatable)
            else:
                resource_score = self._ratio_score(requested, allocatable)
                counted &= resource_score > 0
            if counted.all():
                node_score += resource_score * weight
                weight_sum += weight
            else:
                node_score += np.where(counted, resource_score * weight, 0)
                weight_sum += np.where(counted, weight, 0)
        safe = np.maximum(weight_sum, 1)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            # int64(math.Round(nodeScore / weightSum)): half away from zero, all non-negative
            total = (2 * node_score + safe) // (2 * safe)
        else:
            total = node_score // safe
        return np.where(weight_sum == 0, 0, total)

    def _ratio_score(self, requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        safe = np.maximum(capacity, 1)
        over = (capacity == 0) | (requested > capacity)
        utilization = np.where(over, MAX_UTILIZATION, requested * MAX_UTILIZATION // safe)
        return broken_linear(self.shape, utilization)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ASSIGNED_POD_DELETE, NODE_ADD, ClusterEvent(NODE, UPDATE_NODE_ALLOCATABLE)]
