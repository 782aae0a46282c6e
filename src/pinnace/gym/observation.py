"""The environment's observation: the policy plugins' feature matrix, padded and scaled.

The node and pod features are PolicyScore's (`pinnace.scheduler.plugins.policy`,
`NODE_FEATURES`, `POD_FEATURES`), the ones a policy trained here sees when it runs in the
scheduler, chosen by `features`:

- `requests`: what pods ask for: allocatable and requested cpu, memory and pods per node; the
  pod's cpu and memory requests and its priority.
- `usage`: what pods use: allocatable, the pods on the node, the usage mean and standard
  deviation over the window, its sample count and its forecast (the EWMA of the samples); the
  pod's forecast use and its priority.
- `both`: every feature.

Cpu is in cores and memory in GiB (the features' millicores / 1000 and bytes / 2^30), counts
as they are; a forecast the workload has no history for is -1. After them come one-hot
columns: the node's NoSchedule/NoExecute taints (`TAINT_SLOTS` columns: none, then the first
distinct sets of taints seen, the last column for any further set) and its zone
(`topology.kubernetes.io/zone`, `ZONE_SLOTS` columns, in the order zones are first seen, the
last for any further zone and for none).

    observation = {
        "nodes":   float32 (max_nodes, node columns), zero rows past the table's nodes,
        "present": int8 (max_nodes,), 1 for the rows that are nodes,
        "pod":     float32 (pod columns,),
    }
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pinnace.scheduler.nodetable import NodeTable, RowCache, Rows, every_row
from pinnace.scheduler.plugins.policy import (
    NODE_FEATURES,
    POD_FEATURES,
    node_feature_row,
    node_features,
    pod_features,
)
from pinnace.scheduler.podinfo import PodInfo

REQUESTS, USAGE, BOTH = "requests", "usage", "both"
FEATURE_SETS = (REQUESTS, USAGE, BOTH)
ZONE_LABEL = "topology.kubernetes.io/zone"
TAINT_SLOTS = 4
ZONE_SLOTS = 4
NO_FORECAST = -1.0
_ONE_BY_ONE = 8
"""Up to this many changed rows are made again one by one in Python, more with NumPy."""

_NODE_SETS = {
    REQUESTS: (
        "allocatable_cpu",
        "allocatable_memory",
        "requested_cpu",
        "requested_memory",
        "allocatable_pods",
        "pods",
    ),
    USAGE: (
        "allocatable_cpu",
        "allocatable_memory",
        "allocatable_pods",
        "pods",
        "usage_cpu",
        "usage_memory",
        "usage_cpu_std",
        "usage_memory_std",
        "usage_samples",
        "usage_cpu_forecast",
        "usage_memory_forecast",
    ),
    BOTH: NODE_FEATURES,
}
_POD_SETS = {
    REQUESTS: ("request_cpu", "request_memory", "priority"),
    USAGE: ("forecast_cpu", "forecast_memory", "priority"),
    BOTH: POD_FEATURES,
}


def _scale(names: Sequence[str]) -> np.ndarray:
    return np.array(
        [1000.0 if "cpu" in n else float(1 << 30) if "memory" in n else 1.0 for n in names]
    )


class Observer:
    """Builds observations of one table for `features`, for at most `max_nodes` nodes."""

    def __init__(self, features: str, max_nodes: int) -> None:
        if features not in FEATURE_SETS:
            raise ValueError(f"unknown features {features!r}: one of {', '.join(FEATURE_SETS)}")
        self.features = features
        self.max_nodes = max_nodes
        self.node_names = _NODE_SETS[features]
        self.pod_names = _POD_SETS[features]
        self._node_columns = [NODE_FEATURES.index(n) for n in self.node_names]
        self._pod_columns = [POD_FEATURES.index(n) for n in self.pod_names]
        self._node_scale = _scale(self.node_names)
        self._node_scale_list: list[float] = self._node_scale.tolist()
        self._pod_scale = _scale(self.pod_names)
        self.node_columns = (
            *self.node_names,
            *(f"taints_{i}" for i in range(TAINT_SLOTS)),
            *(f"zone_{i}" for i in range(ZONE_SLOTS)),
        )
        self._zones: dict[str, int] = {}
        self._one_hots = RowCache(limit=1)
        self._nodes = np.zeros((max_nodes, len(self.node_columns)), np.float32)
        self._present = np.zeros(max_nodes, np.int8)
        # What `_nodes` was last made of: the table's epoch, its changes logged by then, its
        # nodes and its usage samples; only the rows changed since are made again.
        self._made_of: tuple[int, int, int, tuple[int, float | None]] | None = None
        self.row_names: tuple[str, ...] = ()
        """The node of each row of the last observation."""

    @property
    def uses_usage(self) -> bool:
        return self.features != REQUESTS

    def empty(self) -> dict[str, np.ndarray]:
        """An observation of no node and no pod (after an episode's end)."""
        return {
            "nodes": np.zeros_like(self._nodes),
            "present": np.zeros_like(self._present),
            "pod": np.zeros(len(self.pod_names), np.float32),
        }

    def observe(
        self, table: NodeTable, pod: PodInfo, forecast: tuple[float, float] | None
    ) -> dict[str, np.ndarray]:
        n = len(table)
        if n > self.max_nodes:
            raise ValueError(
                f"the cluster has {n} nodes, more than the environment's max_nodes "
                f"({self.max_nodes}): make the environment with a larger max_nodes"
            )
        self._refresh(table, n)
        features = pod_features(pod, forecast)[self._pod_columns] / self._pod_scale
        features[np.isnan(features)] = NO_FORECAST
        return {
            "nodes": self._nodes.copy(),
            "present": self._present.copy(),
            "pod": features.astype(np.float32),
        }

    def _refresh(self, table: NodeTable, n: int) -> None:
        """Bring the node rows up to date with `table`: every row after a new epoch, a change
        in the nodes or a usage sample (which changes every row's usage), else the rows the
        table logged as changed (a pod placed or gone, a node updated)."""
        usage = (table.usage_samples_taken, table.usage_time)
        made_of = self._made_of
        logged = len(table.changed_rows)
        if made_of is None or made_of[0] != table.epoch or made_of[2] != n or made_of[3] != usage:
            self.row_names = tuple(table.names)
            self._nodes[n:] = 0
            self._present[:n] = 1
            self._present[n:] = 0
            self._remake(table, slice(0, n))
        elif made_of[1] != logged:
            changed = set(table.changed_rows[made_of[1] :])
            if any(table.names[i] != self.row_names[i] for i in changed):  # a node replaced
                self.row_names = tuple(table.names)
            if len(changed) > _ONE_BY_ONE:
                self._remake(table, np.fromiter(changed, np.intp, len(changed)))
            else:
                for i in changed:
                    self._nodes[i] = self._row(table, i)
        self._made_of = (table.epoch, logged, n, usage)

    def _remake(self, table: NodeTable, rows: Rows) -> None:
        """Make `rows` again with NumPy, many at a time."""
        width = len(self.node_names)
        raw = node_features(table, every_row(len(table))[rows])
        self._nodes[rows, :width] = raw[:, self._node_columns] / self._node_scale
        one_hots = self._one_hots.get(table, "one-hot", lambda some: self._one_hot(table, some))
        self._nodes[rows, width:] = one_hots[rows]

    def _row(self, table: NodeTable, i: int) -> list[float]:
        """Row `i` made in Python: the same values as `_remake`'s (the same float64 divisions
        before the float32 rounding), without NumPy's cost per call for a single row."""
        raw = node_feature_row(table, i)
        row = [raw[c] / s for c, s in zip(self._node_columns, self._node_scale_list, strict=True)]
        one_hot = [0.0] * (TAINT_SLOTS + ZONE_SLOTS)
        taints, zone = self._slots(int(table.hard_taint_group[i]), table.labels[i])
        one_hot[taints] = one_hot[TAINT_SLOTS + zone] = 1.0
        return row + one_hot

    def _one_hot(self, table: NodeTable, rows: Rows) -> np.ndarray:
        index = range(len(table))[rows] if isinstance(rows, slice) else rows.tolist()
        out = np.zeros((len(index), TAINT_SLOTS + ZONE_SLOTS), np.float32)
        groups, labels = table.hard_taint_group, table.labels
        for k, i in enumerate(index):
            taints, zone = self._slots(int(groups[i]), labels[i])
            out[k, taints] = out[k, TAINT_SLOTS + zone] = 1
        return out

    def _slots(self, taint_group: int, labels: Mapping[str, str]) -> tuple[int, int]:
        """The taint and zone slots (the one-hot columns set, each from 0) of a node in
        `taint_group` (of its NoSchedule/NoExecute taints) with `labels`."""
        zone = labels.get(ZONE_LABEL)
        return (
            min(taint_group, TAINT_SLOTS - 1),
            self._zone_slot(zone) if zone is not None else ZONE_SLOTS - 1,
        )

    def _zone_slot(self, zone: str) -> int:
        slot = self._zones.get(zone)
        if slot is None:
            slot = self._zones[zone] = min(len(self._zones), ZONE_SLOTS - 1)
        return slot


def spaces(observer: Observer) -> Any:
    """The gymnasium observation space of `observer`'s observations."""
    from gymnasium import spaces as gym_spaces

    return gym_spaces.Dict(
        {
            "nodes": gym_spaces.Box(
                NO_FORECAST, np.inf, (observer.max_nodes, len(observer.node_columns)), np.float32
            ),
            "present": gym_spaces.MultiBinary(observer.max_nodes),
            "pod": gym_spaces.Box(-np.inf, np.inf, (len(observer.pod_names),), np.float32),
        }
    )
