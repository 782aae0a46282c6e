"""The scheduler's nodes as a struct of arrays: one row per node, one NumPy column per resource.

kube-scheduler keeps a NodeInfo object per node and asks each plugin about one node at a time.
Pinnace keeps the same facts in arrays so that a plugin can filter or score every node in a few
vectorised operations, and updates one row after each bind instead of rebuilding a snapshot:

- `allocatable`, `requested` (n_nodes x n_resources, int64): cpu in millicores, memory,
  ephemeral-storage and scalar resources in whole units, and the `pods` column holding the
  allowed pod count and the number of pods on the node. A resource first seen on a node or a
  pod gets a new column.
- `non_zero_requested` (n_nodes x 2): cpu and memory as the scoring strategies count them,
  a container without a request counting as 100m / 200Mi.
- `unschedulable`, and taints interned into groups (`hard_taint_group` for NoSchedule and
  NoExecute, `soft_taint_group` for PreferNoSchedule) so a pod's tolerations are checked once
  per distinct set of taints rather than once per node.
- Per-node Python lists for what plugins read one node at a time: node objects, labels, taints,
  pods, host ports; `image_states` maps each image name to the nodes holding it.
- `pods_with_affinity`: per node, its pods with inter-pod affinity or anti-affinity terms (as
  NodeInfo.PodsWithAffinity), the only ones InterPodAffinity reads its existing pods' terms
  from; `pods_with_affinity_count` counts them over every row (none, as in most clusters:
  there are no existing pods' terms to look at).
- `pods_by_labels`: the pods on the table's nodes not being deleted, by namespace and labels,
  and how many of each are on which node: the pods of a workload share their labels, so the pods
  a selector matches on every node are counted by matching each set of labels once.
- `_by_level`: per priority level of the pods on the table's nodes, what they request on each
  node (n_nodes x n_resources, the `pods` column counting them), kept up to date as pods come
  and go, so preemption learns what evicting every pod below a priority would free by summing
  the few levels, without a pass over the pods.
- `capacity` (n_nodes x 2): cpu millicores and memory bytes of `status.capacity`.
- Usage, once a usage-aware plugin asks for it (`track_usage`): each node's cpu (millicores)
  and memory working set (bytes) as sampled from the metrics API every `interval` seconds,
  kept in a ring of the samples of the last `window` seconds, with their mean and (population)
  standard deviation, `usage_mean`, `usage_std` (n_nodes x 2, float64), how many samples
  they are of, `usage_count`, and their exponentially weighted mean, `usage_forecast`
  (`pinnace.forecast.ewma` over each node's samples in the window). The statistics are
  recomputed for every node at once when a sample arrives, never while scoring.
  `recent_placements` holds the pods placed since shortly before the last sample (Trimaran's
  ScheduledPodsCache): their usage is not in it yet.
  `placement_log` lists its changes since it was last pruned (a new list then), so a plugin
  can keep a sum over it up to date without going over every placement each cycle.

Arrays grow by doubling. Removing a node moves the last row into its place, so row numbers are
stable only between changes; names are the identity.

Rows changed by a pod or a node update are logged, so a `RowCache` can keep per-node vectors
(a filter's verdicts, a score) for pods of one shape and recompute only the rows that changed:
after a bind that is one row, not every node.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.forecast import DEFAULT_ALPHA
from pinnace.resources.lists import parse_quantity, parse_resource_list, scheduler_value
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_scalar_resource
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.hostports import HostPort
from pinnace.scheduling.taints import PREFER_NO_SCHEDULE, Taint

CPU_COLUMN, MEMORY_COLUMN, EPHEMERAL_STORAGE_COLUMN, PODS_COLUMN = 0, 1, 2, 3
_FIXED_COLUMNS = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
_HARD_EFFECTS = ("NoSchedule", "NoExecute")
_INITIAL_ROWS = 16
_MAX_LOGGED_CHANGES = 1 << 20
_EPOCHS = itertools.count()
_ONE_BY_ONE = 8  # changed rows up to which a RowCache recomputes row by row
RECENT_SECONDS = 60.0
"""How long before the last usage sample a placed pod still counts as not in it (Trimaran's
metricsAgentReportingIntervalSeconds: a metrics agent reports once a minute)."""

Rows = np.ndarray | slice
"""Node rows to compute: an array of row numbers, or a slice of all of them."""
LabelSet = tuple[tuple[str, str], ...]
"""A pod's labels, sorted: the key of `NodeTable.pods_by_labels`."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node's row, as Python values, for plugins that look at one node at a time."""

    index: int
    name: str
    node: Mapping[str, Any]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Mapping[str, int]
    requested: Mapping[str, int]
    non_zero_requested: tuple[int, int]  # cpu millicores, memory bytes
    pods: tuple[PodInfo, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """A pod placed on a node recently (see `NodeTable.recent_placements`)."""

    time: float
    node_name: str
    pod: PodInfo


@functools.lru_cache(maxsize=8)
def _decay(slots: int) -> np.ndarray:
    """(1 - alpha)^r for r from 0 to `slots` - 1: the EWMA's weights by rank."""
    return (1 - DEFAULT_ALPHA) ** np.arange(slots)


class NodeTable:
    def __init__(self) -> None:
        self.columns: dict[str, int] = {name: i for i, name in enumerate(_FIXED_COLUMNS)}
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.nodes: list[Mapping[str, Any]] = []
        self.labels: list[Mapping[str, str]] = []
        self.taints: list[tuple[Taint, ...]] = []
        self.pods: list[dict[str, PodInfo]] = []
        self.pods_with_affinity: list[dict[str, PodInfo]] = []
        self.pods_with_affinity_count = 0  # over every row
        self.host_ports: list[dict[HostPort, int]] = []  # port -> pods using it
        self.image_states: dict[str, dict[str, int]] = {}  # image name -> node name -> size
        # namespace -> sorted labels -> (the labels, node name -> pods not being deleted)
        self.pods_by_labels: dict[str, dict[LabelSet, tuple[Mapping[str, str], dict[str, int]]]]
        self.pods_by_labels = {}
        self.taint_groups: list[tuple[Taint, ...]] = [()]  # group 0: no taints
        self._taint_group_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self._images: list[dict[str, int]] = []
        # Pods bound to nodes the table does not have (yet): kept until the node arrives.
        self._orphans: dict[str, dict[str, PodInfo]] = {}
        # The pods on the table's nodes by priority: pod key -> node name.
        self._by_priority: dict[int, dict[str, str]] = {}
        # What they request, by priority level (see the module docstring).
        self._by_level: dict[int, np.ndarray] = {}
        # Rows whose contents changed are logged (a removed node's row takes the last node, so
        # that row changes too); a new resource column starts a new epoch. Epochs are unique
        # across tables, so vectors kept for one table are never taken for another's.
        self.epoch = next(_EPOCHS)
        self.changed_rows: list[int] = []
        self._amounts: tuple[Any, ...] = (None, None)
        rows, width = _INITIAL_ROWS, len(_FIXED_COLUMNS)
        self._allocatable = np.zeros((rows, width), np.int64)
        self._requested = np.zeros((rows, width), np.int64)
        self._non_zero_requested = np.zeros((rows, 2), np.int64)
        self._unschedulable = np.zeros(rows, bool)
        self.unschedulable_nodes = 0  # how many are cordoned
        self._hard_taint_group = np.zeros(rows, np.int32)
        self._soft_taint_group = np.zeros(rows, np.int32)
        self._capacity = np.zeros((rows, 2), np.int64)
        # Usage: a ring of samples per node (no slots until track_usage), the statistics.
        self.usage_window = 0.0
        self.usage_interval = 0.0
        self.usage_time: float | None = None  # when the last sample was taken
        self.usage_samples_taken = 0
        self.recent_placements: dict[str, Placement] = {}
        self.placement_log: list[tuple[str, Placement | None]] = []  # (pod key, None: gone)
        self._now: Callable[[], float] | None = None
        # Samples as (row, resource, slot), a row's slots side by side; 0 where not valid.
        self._usage_samples = np.zeros((rows, 2, 0))
        self._usage_valid = np.zeros((rows, 0), bool)
        self._usage_mean = np.zeros((rows, 2))
        self._usage_std = np.zeros((rows, 2))
        self._usage_count = np.zeros(rows, np.int64)
        self._usage_forecast = np.zeros((rows, 2))

    # Views of the live rows.
    def __len__(self) -> int:
        return len(self.names)

    @property
    def allocatable(self) -> np.ndarray:
        return self._allocatable[: len(self.names)]

    @property
    def requested(self) -> np.ndarray:
        return self._requested[: len(self.names)]

    @property
    def non_zero_requested(self) -> np.ndarray:
        return self._non_zero_requested[: len(self.names)]

    @property
    def unschedulable(self) -> np.ndarray:
        return self._unschedulable[: len(self.names)]

    @property
    def hard_taint_group(self) -> np.ndarray:
        return self._hard_taint_group[: len(self.names)]

    @property
    def soft_taint_group(self) -> np.ndarray:
        return self._soft_taint_group[: len(self.names)]

    @property
    def capacity(self) -> np.ndarray:
        return self._capacity[: len(self.names)]

    @property
    def usage_mean(self) -> np.ndarray:
        return self._usage_mean[: len(self.names)]

    @property
    def usage_std(self) -> np.ndarray:
        return self._usage_std[: len(self.names)]

    @property
    def usage_count(self) -> np.ndarray:
        return self._usage_count[: len(self.names)]

    @property
    def usage_forecast(self) -> np.ndarray:
        return self._usage_forecast[: len(self.names)]

    def column(self, resource: str) -> int:
        """The column of `resource`, added (zero everywhere) on first sight."""
        column = self.columns.get(resource)
        if column is None:
            column = self.columns[resource] = len(self.columns)
            self._allocatable = _widen(self._allocatable)
            self._requested = _widen(self._requested)
            self._by_level = {level: _widen(m) for level, m in self._by_level.items()}
            self._new_epoch()
        return column

    # Nodes.
    def add_node(self, node: Mapping[str, Any]) -> int:
        name = node["metadata"]["name"]
        if name in self.index:
            self.update_node(node)
            return self.index[name]
        i = len(self.names)
        if i == len(self._unschedulable):
            self._grow()
        self.names.append(name)
        self.index[name] = i
        self.nodes.append(node)
        self.labels.append({})
        self.taints.append(())
        self.pods.append({})
        self.pods_with_affinity.append({})
        self.host_ports.append({})
        self._images.append({})
        self._set_node(i, node)
        for pod in self._orphans.pop(name, {}).values():
            self.add_pod(pod, name)
        return i

    def update_node(self, node: Mapping[str, Any]) -> None:
        self._set_node(self.index[node["metadata"]["name"]], node)

    def remove_node(self, name: str) -> None:
        """Drop the node; pods still bound to it wait as orphans until they are removed."""
        i = self.index.pop(name)
        self._set_images(i, name, {})
        self.pods_with_affinity_count -= len(self.pods_with_affinity[i])
        if self.pods[i]:
            self._orphans[name] = self.pods[i]
            for pod in self.pods[i].values():
                self._unindex(pod)
                self._file_labels(pod, name, -1)
                self._forget_placement(pod.key)
        self.unschedulable_nodes -= int(self._unschedulable[i])
        last = len(self.names) - 1
        for array in (*self._arrays(), *self._by_level.values()):
            array[i] = array[last]
            array[last] = 0
        for values in self._lists():
            values[i] = values[last]
            values.pop()
        if i != last:
            self.index[self.names[i]] = i
            self._changed(i)
        for level in [level for level in self._by_level if level not in self._by_priority]:
            del self._by_level[level]  # its only pods were on the node

    # Pods.
    def add_pod(self, pod: PodInfo, node_name: str) -> None:
        """Account `pod` on `node_name` (a bound or assumed pod)."""
        i = self.index.get(node_name)
        if i is None:
            self._orphans.setdefault(node_name, {})[pod.key] = pod
            return
        self._account(i, pod, 1)
        self._place(i, pod, node_name)
        if self._now is not None:
            placement = Placement(self._now(), node_name, pod)
            self.recent_placements[pod.key] = placement
            self.placement_log.append((pod.key, placement))

    def replace_pod(self, pod: PodInfo, node_name: str) -> None:
        """`remove_pod` of the pod of `pod.key` on `node_name`, then `add_pod` of `pod`, as an
        assumed pod's binding is confirmed. When `pod` takes what the pod it replaces took
        (a binding changes no request), the node's amounts are left as they are, so nothing
        worked out from them is worked out again. The pod keeps its place in
        `recent_placements`: Trimaran's cache notes a pod when it is assigned to a node, not
        when its status or resources change."""
        i = self.index.get(node_name)
        old = None if i is None else self.pods[i].get(pod.key)
        if i is None or old is None:
            self.remove_pod(pod.key, node_name)
            self.add_pod(pod, node_name)
            return
        if _filed_alike(old, pod) and old.pod_affinity == pod.pod_affinity:
            self._refile(i, pod, pod.pod_affinity)
        else:
            self._unplace(i, old, node_name)
            if not _takes_the_same(old, pod) or old.priority != pod.priority:
                self._account(i, old, -1)
                self._account(i, pod, 1)
            self._place(i, pod, node_name)
        if old.pod_affinity or pod.pod_affinity:
            self._changed(i)  # the row's pods with terms are read again (see ExistingPodTerms)

    def _refile(self, i: int, pod: PodInfo, with_affinity: bool) -> None:
        """`_unplace` then `_place` of a pod filed as the one of its key on row `i` is: its
        labels, priority, ports and amounts stay counted; only the PodInfo is swapped, last
        among the row's pods as a new placing puts it."""
        del self.pods[i][pod.key]
        self.pods[i][pod.key] = pod
        if with_affinity:
            del self.pods_with_affinity[i][pod.key]
            self.pods_with_affinity[i][pod.key] = pod

    def _place(self, i: int, pod: PodInfo, node_name: str) -> None:
        """File `pod` on row `i`, whose amounts count it."""
        self.pods[i][pod.key] = pod
        if pod.pod_affinity:
            self.pods_with_affinity[i][pod.key] = pod
            self.pods_with_affinity_count += 1
        self._file_labels(pod, node_name, 1)
        self._by_priority.setdefault(pod.priority, {})[pod.key] = node_name
        ports = self.host_ports[i]
        for port in pod.host_ports:
            ports[port] = ports.get(port, 0) + 1

    def pod(self, pod_key: str, node_name: str) -> PodInfo | None:
        """The pod accounted on `node_name` under `pod_key`, if any."""
        i = self.index.get(node_name)
        if i is None:
            return self._orphans.get(node_name, {}).get(pod_key)
        return self.pods[i].get(pod_key)

    def remove_pod(self, pod_key: str, node_name: str) -> PodInfo | None:
        i = self.index.get(node_name)
        if i is None:
            return self._orphans.get(node_name, {}).pop(pod_key, None)
        pod = self.pods[i].get(pod_key)
        if pod is None:
            return None
        self._unplace(i, pod, node_name)
        self._account(i, pod, -1)
        self._forget_placement(pod.key)
        return pod

    def _unplace(self, i: int, pod: PodInfo, node_name: str) -> None:
        """Take `pod` off row `i`, whose amounts still count it."""
        del self.pods[i][pod.key]
        if self.pods_with_affinity[i].pop(pod.key, None) is not None:
            self.pods_with_affinity_count -= 1
        self._unindex(pod)
        self._file_labels(pod, node_name, -1)
        ports = self.host_ports[i]
        for port in pod.host_ports:
            if ports[port] == 1:
                del ports[port]
            else:
                ports[port] -= 1

    # Usage.
    def track_usage(self, window: float, interval: float, now: Callable[[], float]) -> None:
        """Keep the usage samples of the last `window` seconds, one every `interval` seconds,
        and note when pods are placed (`now` tells the time)."""
        slots = max(1, round(window / interval))
        self.usage_window, self.usage_interval, self._now = window, interval, now
        rows = len(self._usage_count)
        self._usage_samples = np.zeros((rows, 2, slots))
        self._usage_valid = np.zeros((rows, slots), bool)
        self._usage_mean[:] = 0
        self._usage_std[:] = 0
        self._usage_count[:] = 0
        self._usage_forecast[:] = 0
        self.usage_samples_taken = 0

    def record_usage(self, time: float, usage: Mapping[str, tuple[float, float]]) -> None:
        """A sample at `time`: node name -> (cpu millicores, memory bytes) in use. A node left
        out has no sample this time; one the table does not have is ignored."""
        slots = self._usage_samples.shape[2]
        if slots == 0:
            raise RuntimeError("usage is not tracked: call track_usage first")
        slot = self.usage_samples_taken % slots
        self.usage_samples_taken += 1
        self.usage_time = time
        known = [(self.index[name], value) for name, value in usage.items() if name in self.index]
        self._usage_valid[:, slot] = False
        self._usage_samples[:, :, slot] = 0
        if known:
            rows = np.fromiter((i for i, _ in known), np.intp, len(known))
            self._usage_samples[rows, :, slot] = [value for _, value in known]
            self._usage_valid[rows, slot] = True
        self._usage_statistics()
        since = time - RECENT_SECONDS
        self.recent_placements = {
            key: placed for key, placed in self.recent_placements.items() if placed.time > since
        }
        self.placement_log = []

    def _usage_statistics(self) -> None:
        """Every live row's mean and standard deviation over its valid samples."""
        n = len(self.names)
        samples, valid = self._usage_samples[:n], self._usage_valid[:n]
        count = valid.sum(axis=1)
        divisor = np.maximum(count, 1)[:, None]
        mean = samples.sum(axis=2) / divisor  # samples not valid are 0
        deviation = samples - mean[:, :, None]
        deviation *= valid[:, None, :]
        np.square(deviation, out=deviation)
        self._usage_mean[:n] = mean
        self._usage_std[:n] = np.sqrt(deviation.sum(axis=2) / divisor)
        self._usage_count[:n] = count
        self._usage_forecast[:n] = self._usage_ewma(samples, valid, count)

    def _usage_ewma(self, samples: np.ndarray, valid: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Each row's `pinnace.forecast.ewma` of its valid samples: the r-th newest weighs
        alpha (1 - alpha)^r, the oldest of m (1 - alpha)^(m - 1)."""
        slots = samples.shape[2]
        newest = (self.usage_samples_taken - 1) % slots
        by_age = (newest - np.arange(slots)) % slots  # slot of age 0 (newest), 1, ...
        valid_by_age = valid[:, by_age]
        rank = np.cumsum(valid_by_age, axis=1) - 1  # among the valid ones, 0 the newest
        # (1 - alpha)^r looked up, not raised to each rank's power: -1 (no valid sample yet)
        # takes the last entry, weighed 0 below like every sample not valid.
        decay = _decay(slots)[rank]
        oldest = rank == (count - 1)[:, None]
        weights = np.where(oldest, decay, DEFAULT_ALPHA * decay) * valid_by_age
        return np.einsum("rs,rcs->rc", weights, samples[:, :, by_age])

    def copy_usage(self, other: NodeTable) -> None:
        """Take `other`'s usage of the nodes both tables have, and its tracking (a table built
        apart, to explain a decision of the scheduler that keeps `other`)."""
        if other._now is None:
            return
        self.track_usage(other.usage_window, other.usage_interval, other._now)
        self.usage_time, self.usage_samples_taken = other.usage_time, other.usage_samples_taken
        pairs = [(i, other.index[name]) for i, name in enumerate(self.names) if name in other.index]
        if pairs:
            mine, theirs = (np.array(side, np.intp) for side in zip(*pairs, strict=True))
            for array, source in zip(self._usage_arrays(), other._usage_arrays(), strict=True):
                array[mine] = source[theirs]
        # The placements of the pods this table holds too (not of a pod being explained).
        self.recent_placements = {
            key: placed
            for key, placed in other.recent_placements.items()
            if placed.node_name in self.index and key in self.pods[self.index[placed.node_name]]
        }
        self.placement_log = []

    def _forget_placement(self, pod_key: str) -> None:
        if self.recent_placements.pop(pod_key, None) is not None:
            self.placement_log.append((pod_key, None))

    def _usage_arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self._usage_samples,
            self._usage_valid,
            self._usage_mean,
            self._usage_std,
            self._usage_count,
            self._usage_forecast,
        )

    def requested_at_or_above(self, priority: int) -> np.ndarray:
        """What the pods of at least `priority` request on each node (the `requested`
        columns): the rest is what evicting every pod of lower priority would free."""
        n = len(self.names)
        kept = np.zeros_like(self.requested)
        for level, requested in self._by_level.items():
            if level >= priority:
                kept += requested[:n]
        return kept

    def lower_priority_pods(self, priority: int) -> np.ndarray:
        """How many pods of priority below `priority` each node has."""
        n = len(self.names)
        count = np.zeros(n, np.int64)
        for level, requested in self._by_level.items():
            if level < priority:
                count += requested[:n, PODS_COLUMN]
        return count

    def amounts(self, i: int) -> tuple[list[int], list[int], list[int]]:
        """Row `i`'s allocatable, requested and non-zero requested amounts as Python integers,
        for plugins looking at one row (cheaper than indexing the arrays item by item). Kept
        until the table changes: several plugins read the row a bind changed. Read-only."""
        version = (i, self.epoch, len(self.changed_rows))
        if self._amounts[0] != version:
            self._amounts = (
                version,
                (
                    self._allocatable[i].tolist(),
                    self._requested[i].tolist(),
                    self._non_zero_requested[i].tolist(),
                ),
            )
        return self._amounts[1]

    def node_info(self, i: int) -> NodeInfo:
        names = list(self.columns)
        return NodeInfo(
            index=i,
            name=self.names[i],
            node=self.nodes[i],
            labels=self.labels[i],
            taints=self.taints[i],
            unschedulable=bool(self._unschedulable[i]),
            allocatable=dict(zip(names, self._allocatable[i].tolist(), strict=True)),
            requested=dict(zip(names, self._requested[i].tolist(), strict=True)),
            non_zero_requested=(
                int(self._non_zero_requested[i, 0]),
                int(self._non_zero_requested[i, 1]),
            ),
            pods=tuple(self.pods[i].values()),
        )

    # Internals.
    def _unindex(self, pod: PodInfo) -> None:
        same = self._by_priority[pod.priority]
        del same[pod.key]
        if not same:
            del self._by_priority[pod.priority]

    def _count_at_level(self, i: int, pod: PodInfo, sign: int) -> None:
        """Count `pod`'s requests in (sign 1) or out of (-1) row `i` of its level's matrix, as
        its node's amounts (`_account`): a pod whose binding or status changes nothing it takes
        is left alone. A level left with no pod (`_unindex` first) is dropped."""
        level = self._by_level.get(pod.priority)
        if level is None:
            level = self._by_level[pod.priority] = np.zeros_like(self._requested)
        row = level[i]
        columns = self.columns
        for resource, value in pod.requests.items():
            row[columns[resource]] += sign * value
        row[PODS_COLUMN] += sign
        if sign < 0 and pod.priority not in self._by_priority:
            del self._by_level[pod.priority]

    def _file_labels(self, pod: PodInfo, node_name: str, sign: int) -> None:
        if pod.deleting:
            return
        by_labels = self.pods_by_labels.setdefault(pod.namespace, {})
        label_set = tuple(sorted(pod.labels.items()))
        found = by_labels.get(label_set)
        if found is None:
            found = by_labels[label_set] = (pod.labels, {})
        on_nodes = found[1]
        count = on_nodes.get(node_name, 0) + sign
        if count:
            on_nodes[node_name] = count
            return
        del on_nodes[node_name]
        if not on_nodes:
            del by_labels[label_set]
            if not by_labels:
                del self.pods_by_labels[pod.namespace]

    def _new_epoch(self) -> None:
        self.epoch = next(_EPOCHS)
        self.changed_rows.clear()

    def _changed(self, i: int) -> None:
        if len(self.changed_rows) >= _MAX_LOGGED_CHANGES:
            self._new_epoch()
        else:
            self.changed_rows.append(i)

    def _account(self, i: int, pod: PodInfo, sign: int) -> None:
        self._changed(i)
        row = self._requested[i]
        for resource, value in pod.requests.items():
            column = self.columns.get(resource)
            if column is None:
                column = self.column(resource)
                row = self._requested[i]
            row[column] += sign * value
        row[PODS_COLUMN] += sign
        non_zero = self._non_zero_requested[i]
        non_zero[0] += sign * pod.non_zero_cpu
        non_zero[1] += sign * pod.non_zero_memory
        self._count_at_level(i, pod, sign)

    def _set_node(self, i: int, node: Mapping[str, Any]) -> None:
        name = node["metadata"]["name"]
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        self._changed(i)
        self.nodes[i] = node
        self.labels[i] = node["metadata"].get("labels") or {}
        taints = tuple(
            Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
            for t in spec.get("taints") or ()
        )
        self.taints[i] = taints
        unschedulable = bool(spec.get("unschedulable"))
        self.unschedulable_nodes += unschedulable - int(self._unschedulable[i])
        self._unschedulable[i] = unschedulable
        self._hard_taint_group[i] = self._taint_group(
            tuple(t for t in taints if t.effect in _HARD_EFFECTS)
        )
        self._soft_taint_group[i] = self._taint_group(
            tuple(t for t in taints if t.effect == PREFER_NO_SCHEDULE)
        )
        capacity = status.get("capacity") or {}
        self._capacity[i] = [
            scheduler_value(resource, parse_quantity(capacity[resource]))
            if resource in capacity
            else 0
            for resource in (CPU, MEMORY)
        ]
        allocatable = parse_resource_list(status.get("allocatable"), "status.allocatable")
        self._allocatable[i] = 0
        for resource, q in allocatable.items():
            if resource in _FIXED_COLUMNS or is_scalar_resource(resource):
                column = self.column(resource)  # may widen the matrix: look it up first
                self._allocatable[i, column] = scheduler_value(resource, q)
        images = {
            image_name: int(image.get("sizeBytes") or 0)
            for image in status.get("images") or ()
            for image_name in image.get("names") or ()
        }
        self._set_images(i, name, images)

    def _set_images(self, i: int, node_name: str, images: dict[str, int]) -> None:
        for image_name in self._images[i]:
            holders = self.image_states[image_name]
            del holders[node_name]
            if not holders:
                del self.image_states[image_name]
        for image_name, size in images.items():
            self.image_states.setdefault(image_name, {})[node_name] = size
        self._images[i] = images

    def _taint_group(self, taints: tuple[Taint, ...]) -> int:
        group = self._taint_group_ids.get(taints)
        if group is None:
            group = self._taint_group_ids[taints] = len(self.taint_groups)
            self.taint_groups.append(taints)
        return group

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (
            self._allocatable,
            self._requested,
            self._non_zero_requested,
            self._unschedulable,
            self._hard_taint_group,
            self._soft_taint_group,
            self._capacity,
            *self._usage_arrays(),
        )

    def _lists(self) -> tuple[list[Any], ...]:
        return (
            self.names,
            self.nodes,
            self.labels,
            self.taints,
            self.pods,
            self.pods_with_affinity,
            self.host_ports,
            self._images,
        )

    def _grow(self) -> None:
        (
            self._allocatable,
            self._requested,
            self._non_zero_requested,
            self._unschedulable,
            self._hard_taint_group,
            self._soft_taint_group,
            self._capacity,
            self._usage_samples,
            self._usage_valid,
            self._usage_mean,
            self._usage_std,
            self._usage_count,
            self._usage_forecast,
        ) = (_double(array) for array in self._arrays())
        self._by_level = {level: _double(m) for level, m in self._by_level.items()}


class RowCache:
    """Vectors over every node row, one per key (a pod shape), kept up to date by recomputing
    only the rows logged as changed since the last use. Holds at most `limit` keys.

    `top(key)` gives the rows holding a vector's highest value, kept up to date from the
    changed rows as well: selectHost's choice among every node then needs no pass over them."""

    def __init__(self, limit: int = 64) -> None:
        self._limit = limit
        # key -> [table epoch, changes logged when computed, vector, top or None], least
        # recently used first; top: (the highest value, the rows holding it in order).
        self._entries: dict[Hashable, list[Any]] = {}
        # The last key asked, checked first: a run of pods of one shape asks for the same key
        # (a new but equal tuple, whose items are shared: cheaper to compare than to hash).
        self._recent_key: Hashable = _NO_KEY
        self._recent: list[Any] = []

    def get(
        self,
        table: NodeTable,
        key: Hashable,
        compute: Callable[[Rows], np.ndarray],
        compute_one: Callable[[int], Any] | None = None,
    ) -> np.ndarray:
        """The vector for `key`. `compute(rows)` gives its values on many rows at once;
        `compute_one(row)`, if given, on one row (cheaper than NumPy for a handful)."""
        if key == self._recent_key:
            entry = self._recent
        else:
            entry = self._entries.pop(key, [-1, 0, None, None])
            if len(self._entries) >= self._limit:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = entry  # re-inserted: most recently used
            self._recent_key, self._recent = key, entry
        changes = table.changed_rows
        logged, n = len(changes), len(table.names)
        top = entry[3]
        if entry[0] != table.epoch:
            vector, top = compute(slice(0, n)), None
        elif entry[1] == logged and len(entry[2]) == n:
            return entry[2]
        else:
            vector = entry[2]
            if len(vector) != n:  # nodes were added or removed
                known = min(len(vector), n)
                vector = np.concatenate([vector[:known], compute(slice(known, n))])
                top = None
            changed = {i for i in changes[entry[1] :] if i < n}
            if compute_one is not None and len(changed) <= _ONE_BY_ONE:
                for i in changed:
                    vector[i] = compute_one(i)
            elif changed:
                rows = np.fromiter(changed, np.intp, len(changed))
                vector[rows] = compute(rows)
            if top is not None:
                top = _updated_top(top, vector, changed)
        entry[:] = table.epoch, logged, vector, top
        return vector

    def top(self, key: Hashable) -> list[int]:
        """The rows, in order, holding the highest value of the vector `get` last gave for
        `key` (call it right after): shared, not to be changed."""
        entry = self._recent if key == self._recent_key else self._entries[key]
        top = entry[3]
        if top is None:
            vector = entry[2]
            best = int(np.maximum.reduce(vector)) if len(vector) else 0
            top = entry[3] = (best, np.flatnonzero(vector == best).tolist())
        return top[1]


def _updated_top(
    top: tuple[int, list[int]], vector: np.ndarray, changed: set[int]
) -> tuple[int, list[int]] | None:
    """`top` of a vector whose `changed` rows changed, or None when it must be found again
    (the rows of the highest value all fell, or too many rows changed to follow)."""
    if len(changed) > _ONE_BY_ONE:
        return None
    best, rows = top
    for i in changed:
        value = int(vector[i])
        at = bisect.bisect_left(rows, i)
        held = at < len(rows) and rows[at] == i
        if value > best:
            best, rows = value, [i]
        elif value == best:
            if not held:
                rows.insert(at, i)
        elif held:
            del rows[at]
    return (best, rows) if rows else None


_NO_KEY = object()


def _takes_the_same(old: PodInfo, new: PodInfo) -> bool:
    """Whether the two pods count the same in a node's amounts."""
    return (
        (old.requests is new.requests or old.requests == new.requests)
        and old.non_zero_cpu == new.non_zero_cpu
        and old.non_zero_memory == new.non_zero_memory
    )


def _filed_alike(old: PodInfo, new: PodInfo) -> bool:
    """Whether `_place` files the two pods alike: same labels, deletion state, priority and
    host ports, and the same amounts counted (`_takes_the_same`)."""
    return (
        (old.labels is new.labels or old.labels == new.labels)
        and old.deleting == new.deleting
        and old.priority == new.priority
        and old.host_ports == new.host_ports
        and _takes_the_same(old, new)
    )


@functools.lru_cache(maxsize=8)
def every_row(n: int) -> np.ndarray:
    """The row numbers 0..n-1, one shared read-only array per n."""
    rows = np.arange(n)
    rows.flags.writeable = False
    return rows


@functools.lru_cache(maxsize=8)
def everywhere(n: int) -> np.ndarray:
    """True for each of n rows, one shared read-only array per n."""
    mask = np.ones(n, bool)
    mask.flags.writeable = False
    return mask


def row_count(table: NodeTable, rows: Rows) -> int:
    return len(range(*rows.indices(len(table)))) if isinstance(rows, slice) else len(rows)


def gather(vector: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`vector[nodes]`, without the copy when `nodes` is every row in order."""
    if len(nodes) == len(vector) and (
        len(nodes) == 0 or (nodes[0] == 0 and nodes[-1] == len(nodes) - 1)
    ):
        return vector
    return vector[nodes]


def _double(array: np.ndarray) -> np.ndarray:
    grown = np.zeros((2 * array.shape[0], *array.shape[1:]), array.dtype)
    grown[: array.shape[0]] = array
    return grown


def _widen(matrix: np.ndarray) -> np.ndarray:
    return np.concatenate([matrix, np.zeros((matrix.shape[0], 1), matrix.dtype)], axis=1)
