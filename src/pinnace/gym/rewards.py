"""The reward components of the research environment, selectable by name and weighted.

Two kinds. A decision's own effect on the scheduler's node table, measured just before the
pod is placed and just after (so pods finishing meanwhile do not count), each the change of a
measure M, reward = -(M after - M before):

- `balance`: M = the mean, over cpu and memory, of the standard deviation across the nodes of
  requested / allocatable (the nodes with allocatable cpu). Spreading evenly is rewarded.
- `fragmentation`: M = the stranded share of free capacity for the placed pod's shape (its
  cpu, memory and one pod; `pinnace.metrics.fragmentation`): the free capacity no further pod of
  its shape can use over all the free capacity, the mean over cpu and memory (those it asks
  for; the pod count limits how many fit but is not averaged).
- `packing`: M = the nodes in use (with at least one pod): opening an empty node costs 1.

And what happens over time between one decision and the next (Δt seconds, the counts taken
right after the first of the two, from the scheduler's queue and node table):

- `pending`: -(pods pending in the scheduler's queue) × Δt: pod-seconds of waiting.
- `decima`: -(pods in the system: pending or on a node) × Δt, Decima's reward (Mao et al.,
  SIGCOMM 2019): its sum over an episode is about minus the total time pods spend in the
  system (a pod finishing between two decisions counts until the second).
- `evictions`: -(pods evicted, preempted or OOM-killed during Δt), from the simulation's
  observer.

Summed over an episode, a change telescopes: `packing` totals minus the nodes opened by
decisions, `balance` the imbalance removed by them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from pinnace.metrics.fragmentation import free_capacity
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.nodetable import CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN, NodeTable
from pinnace.scheduler.podinfo import PodInfo

BALANCE, FRAGMENTATION, PACKING = "balance", "fragmentation", "packing"
PENDING, DECIMA, EVICTIONS = "pending", "decima", "evictions"
DECISION_COMPONENTS = (BALANCE, FRAGMENTATION, PACKING)
"""Measured around each decision."""
TIME_COMPONENTS = (PENDING, DECIMA, EVICTIONS)
"""Accrued between decisions."""
COMPONENTS = DECISION_COMPONENTS + TIME_COMPONENTS
DEFAULT_REWARD = {DECIMA: 1.0}
_RESOURCES = [CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN]
_ONE_BY_ONE = 64
"""Up to this many changed rows are counted again one by one, more with NumPy."""


def weights(reward: str | Iterable[str] | Mapping[str, float] | None) -> dict[str, float]:
    """The components' weights from a name, names (weight 1 each) or names with weights."""
    if reward is None:
        chosen = dict(DEFAULT_REWARD)
    elif isinstance(reward, str):
        chosen = {name.strip(): 1.0 for name in reward.split("+")}
    elif isinstance(reward, Mapping):
        chosen = {str(name): float(weight) for name, weight in reward.items()}
    else:
        chosen = {str(name): 1.0 for name in reward}
    unknown = sorted(set(chosen) - set(COMPONENTS))
    if unknown:
        raise ValueError(
            f"unknown reward component {', '.join(map(repr, unknown))}: one of "
            f"{', '.join(COMPONENTS)}"
        )
    return chosen


@dataclass(frozen=True)
class Measures:
    """The node table's state the decision components compare."""

    balance: float
    fragmentation: float
    packing: float


def measure(
    table: NodeTable, pod: PodInfo, which: Collection[str] = DECISION_COMPONENTS
) -> Measures:
    """The measures of `table` (`pod` gives the shape for fragmentation); those not in
    `which` are left 0."""
    return Gauge(table, pod, which).measures()


class Gauge:
    """The measures of `table` for `pod`'s shape, from per-node figures kept so that
    `remeasure`, after a decision, recomputes only the nodes the table logged as changed (the
    figures of the others are the same, so the measures are those `measure` would give)."""

    def __init__(
        self, table: NodeTable, pod: PodInfo, which: Collection[str] = DECISION_COMPONENTS
    ) -> None:
        self.table = table
        self.which = which
        self.shape = pod_shape(pod)
        self._asked = self.shape > 0
        self._take(slice(None))

    def measures(self) -> Measures:
        which = self.which
        return Measures(
            balance=self._balance() if BALANCE in which else 0.0,
            fragmentation=self._fragmentation() if FRAGMENTATION in which else 0.0,
            packing=float(np.count_nonzero(self._requested[2])) if PACKING in which else 0.0,
        )

    def remeasure(self) -> Measures:
        """The measures of the table now."""
        table = self.table
        if table.epoch != self._epoch or len(table) != self._allocatable.shape[1]:
            self._take(slice(None))
        else:
            changed = set(table.changed_rows[self._logged :])
            self._take(np.fromiter(changed, np.intp, len(changed)))
        return self.measures()

    def _take(self, rows: slice | np.ndarray) -> None:
        """Read `rows` of the table (every row: a slice) and compute their figures. Nodes
        are columns here, so that each measure reduces contiguous rows."""
        table = self.table
        self._epoch, self._logged = table.epoch, len(table.changed_rows)
        allocatable = table.allocatable[rows][:, _RESOURCES].T
        requested = table.requested[rows][:, _RESOURCES].T
        if isinstance(rows, slice):
            self._allocatable = np.ascontiguousarray(allocatable)
            self._requested = np.ascontiguousarray(requested)
            self._ratios = np.zeros((2, len(table)))
            self._free = np.zeros((3, len(table)), np.int64)
            self._stranded = np.zeros((3, len(table)), np.int64)
        else:
            self._allocatable[:, rows] = allocatable
            self._requested[:, rows] = requested
        if BALANCE in self.which:
            with np.errstate(divide="ignore", invalid="ignore"):
                self._ratios[:, rows] = requested[:2] / allocatable[:2]
        if FRAGMENTATION in self.which:
            free = free_capacity(allocatable, requested)
            shape = self.shape[:, None]
            room = np.where(
                self._asked[:, None], free // np.maximum(shape, 1), np.iinfo(np.int64).max
            )
            self._free[:, rows] = free
            self._stranded[:, rows] = free - room.min(axis=0) * shape

    def _balance(self) -> float:
        """The mean over cpu and memory of the standard deviation across the nodes (with
        both allocatable) of requested / allocatable."""
        present = (self._allocatable[:2] > 0).all(axis=0)
        if not present.any():
            return 0.0
        ratios = self._ratios if present.all() else self._ratios[:, present]
        return float(ratios.std(axis=1).mean())

    def _fragmentation(self) -> float:
        """The share of free capacity no pod of the shape can use, the mean over cpu and
        memory where the shape asks for them (0 where nothing is free):
        `pinnace.metrics.fragmentation`'s share, from the per-node stranded and free capacity
        summed."""
        asked = self._asked[:2]
        if not self._free.shape[1] or not asked.any():
            return 0.0
        free = self._free[:2].sum(axis=1)
        stranded = self._stranded[:2].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(free > 0, stranded / free, 0.0)
        return float(share[asked].mean())


class PodsOnNodes:
    """The pods the node table holds on its nodes, kept from the rows it logged as changed
    since the last count (the whole column again after a new epoch, a node added or removed,
    or many rows changed): a sum over every node each decision took 1 % of a step at 5,000
    nodes."""

    def __init__(self) -> None:
        self._epoch = -1
        self._logged = 0
        self._pods = np.zeros(0, np.int64)
        self._total = 0

    def count(self, table: NodeTable) -> int:
        pods = table.requested[:, PODS_COLUMN]
        logged = len(table.changed_rows)
        changed = set(table.changed_rows[self._logged : logged])
        if table.epoch != self._epoch or len(pods) != len(self._pods) or len(changed) > _ONE_BY_ONE:
            self._pods = pods.copy()
            self._total = int(self._pods.sum())
        else:
            for i in changed:
                now = int(pods[i])
                self._total += now - int(self._pods[i])
                self._pods[i] = now
        self._epoch, self._logged = table.epoch, logged
        return self._total


def pod_shape(pod: PodInfo) -> np.ndarray:
    """cpu, memory and pods the pod asks for, in the columns `measure` uses."""
    return np.array([pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), 1], np.int64)


def decision_rewards(
    before: Measures, after: Measures, which: Collection[str] = DECISION_COMPONENTS
) -> dict[str, float]:
    """-(after - before) of each measure in `which`."""
    rewards = {
        BALANCE: before.balance - after.balance,
        FRAGMENTATION: before.fragmentation - after.fragmentation,
        PACKING: before.packing - after.packing,
    }
    return {name: value for name, value in rewards.items() if name in which}


def time_rewards(
    pending: int, in_system: int, seconds: float, disruptions: int
) -> dict[str, float]:
    """What `pending` and `in_system` pods over `seconds`, and `disruptions`, cost."""
    return {
        PENDING: -pending * seconds,
        DECIMA: -in_system * seconds,
        EVICTIONS: -float(disruptions),
    }


def total(components: Mapping[str, float], chosen: Mapping[str, float]) -> float:
    """The weighted sum of the chosen components."""
    return float(sum(weight * components.get(name, 0.0) for name, weight in chosen.items()))
