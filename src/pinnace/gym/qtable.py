"""A Q-table over a discretised state of pinnace.gym's `requests` observation: what
examples/research/qlearning.py learns, saves (`QTable.save`), and what PolicyScore and
PolicyPick load to place pods live (`policy: {model: PATH, kind: q-table}`).

The observation is a matrix of node features; the table needs few states, so they are
discretised:

- the state: how full the cluster is (the mean share of allocatable cpu requested, in
  `LOAD_BUCKETS`) and how big the pod is (its cpu request over the largest node's, in
  `POD_BUCKETS`);
- an action is a node, described by its bucket: 0 for an empty node, then the share of its
  cpu requested in `NODE_BUCKETS - 1` steps. The greedy choice is, among the feasible nodes,
  one of the bucket with the highest Q-value, so the table is states x buckets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pinnace.gym.observation import REQUESTS

FEATURES = REQUESTS
"""The observation's feature set the table's states are made of."""
LOAD_BUCKETS, POD_BUCKETS, NODE_BUCKETS = 4, 3, 5
# The columns of the observation with features="requests" (pinnace.gym.observation).
ALLOCATABLE_CPU, REQUESTED_CPU, PODS = 0, 2, 5
POD_CPU = 0

Observation = dict[str, np.ndarray]


def node_buckets(observation: Observation) -> np.ndarray:
    """Each row's bucket: 0 empty, else its requested cpu share in NODE_BUCKETS - 1 steps."""
    nodes = observation["nodes"]
    share = nodes[:, REQUESTED_CPU] / np.maximum(nodes[:, ALLOCATABLE_CPU], 1e-9)
    steps = 1 + np.minimum((share * (NODE_BUCKETS - 1)).astype(int), NODE_BUCKETS - 2)
    return np.where(nodes[:, PODS] > 0, steps, 0)


def state_of(observation: Observation) -> int:
    nodes, present = observation["nodes"], observation["present"].astype(bool)
    allocatable = nodes[present, ALLOCATABLE_CPU]
    if not len(allocatable):
        return 0
    load = nodes[present, REQUESTED_CPU].sum() / max(allocatable.sum(), 1e-9)
    size = observation["pod"][POD_CPU] / max(allocatable.max(), 1e-9)
    load_bucket = min(int(load * LOAD_BUCKETS), LOAD_BUCKETS - 1)
    pod_bucket = min(int(size * POD_BUCKETS * 2), POD_BUCKETS - 1)
    return load_bucket * POD_BUCKETS + pod_bucket


@dataclass
class QTable:
    values: np.ndarray = field(
        default_factory=lambda: np.zeros((LOAD_BUCKETS * POD_BUCKETS, NODE_BUCKETS))
    )

    def best(
        self, observation: Observation, mask: np.ndarray, rng: np.random.Generator | None = None
    ) -> int:
        """A feasible row of the bucket with the highest value: among equals one at random
        with `rng`, the first without."""
        feasible = np.flatnonzero(mask)
        buckets = node_buckets(observation)[feasible]
        q = self.values[state_of(observation), buckets]
        best = feasible[q == q.max()]
        return int(rng.choice(best)) if rng is not None else int(best[0])

    def next_value(self, observation: Observation, mask: np.ndarray) -> float:
        feasible = np.flatnonzero(mask)
        if not len(feasible):
            return 0.0
        buckets = node_buckets(observation)[feasible]
        return float(self.values[state_of(observation), buckets].max())

    def policy(self, seed: int = 0) -> Callable[[Observation, dict[str, Any]], int]:
        """The greedy policy, as `pinnace gym evaluate` calls one."""
        rng = np.random.default_rng(seed)
        return lambda observation, info: self.best(observation, info["action_mask"], rng)

    def save(self, path: str | Path) -> None:
        """The values, as a NumPy `.npy` file."""
        np.save(path, self.values, allow_pickle=False)

    @classmethod
    def load(cls, path: str | Path) -> QTable:
        values = np.load(path, allow_pickle=False)
        shape = (LOAD_BUCKETS * POD_BUCKETS, NODE_BUCKETS)
        if values.shape != shape:
            raise ValueError(f"a Q-table has shape {shape}, not {values.shape}")
        return cls(values.astype(np.float64))
