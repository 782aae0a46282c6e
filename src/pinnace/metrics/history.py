"""Usage history: samples of the cluster kept in memory at a fixed resolution for a bounded
window, as a Prometheus server keeps them for its retention (here a ring per series, so the
memory stays what the window needs however long the cluster runs).

Two kinds of series:
- the cluster's (`cluster_series`): one value per sample, such as CPU used or pods pending;
- an object's (`ObjectRows`: a container's CPU and memory used, a workload's replicas): rows of
  a NumPy matrix per field, a row per object, NaN where the object had no value at a sample;
  the rows of objects not seen for a whole window are reused.

Usage is kept per container, as cAdvisor's `container_cpu_usage_seconds_total` and
`container_memory_working_set_bytes` are, and a pod's is the sum of its containers' when read
(so a pod of one container costs what it did when pods' totals were kept).

Costs, float32 per value: a container's usage row is 2 fields x (window / resolution) x 4
bytes, so 2.9 KiB for the default hour at 10 s; the cluster's series are float64 over 6 hours
(17 KiB each).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

RESOLUTION = 10.0
WINDOW = 6 * 3600.0
OBJECT_WINDOW = 3600.0

Floats = npt.NDArray[np.float64]


class _Ring:
    """Where the sample taken at each tick goes: slot `tick % slots`; reading in time order
    starts at the oldest slot still held."""

    def __init__(self, slots: int) -> None:
        self.slots = slots

    def order(self, ticks: int) -> npt.NDArray[np.intp]:
        if ticks <= self.slots:
            return np.arange(ticks, dtype=np.intp)
        start = ticks % self.slots
        return (np.arange(self.slots, dtype=np.intp) + start) % self.slots


class ObjectRows:
    """Per-object series of `fields` over `slots` samples."""

    def __init__(self, fields: Sequence[str], slots: int) -> None:
        self.fields = tuple(fields)
        self.ring = _Ring(slots)
        self.rows: dict[str, int] = {}
        self._free: list[int] = []
        self._last_tick = np.zeros(0, np.int64)
        self._values = np.full((len(self.fields), 0, slots), np.nan, np.float32)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def nbytes(self) -> int:
        return self._values.nbytes + self._last_tick.nbytes

    def record(self, tick: int, values: Mapping[str, Sequence[float]]) -> None:
        """The sample at `tick`: by object key, a value per field."""
        slot = tick % self.ring.slots
        self._values[:, :, slot] = np.nan
        if values:
            rows = np.fromiter((self._row(key) for key in values), np.intp, len(values))
            matrix = np.asarray(list(values.values()), np.float32).reshape(len(values), -1)
            self._values[:, rows, slot] = matrix.T
            self._last_tick[rows] = tick
        self._forget(tick)

    def at(self, tick: int) -> dict[str, tuple[float, ...]]:
        """Every object's values at `tick`, of the objects sampled then."""
        seen = [(key, row) for key, row in self.rows.items() if self._last_tick[row] == tick]
        if not seen:
            return {}
        rows = np.fromiter((row for _, row in seen), np.intp, len(seen))
        values = self._values[:, rows, tick % self.ring.slots].T.tolist()
        return {key: tuple(v) for (key, _), v in zip(seen, values, strict=True)}

    def read(self, key: str, ticks: int) -> dict[str, list[float | None]] | None:
        """Each field's samples in time order (None where the object had none), or None for an
        object not held."""
        row = self.rows.get(key)
        if row is None:
            return None
        order = self.ring.order(ticks)
        return {f: _plain(self._values[i, row, order]) for i, f in enumerate(self.fields)}

    def read_sum(self, keys: Iterable[str], ticks: int) -> dict[str, list[float | None]] | None:
        """The sum of the objects' samples, field by field in time order (None where none of
        them had one), or None when none of them is held."""
        rows = [row for row in (self.rows.get(key) for key in keys) if row is not None]
        if not rows:
            return None
        values = self._values[:, rows][:, :, self.ring.order(ticks)]
        missing = np.isnan(values).all(axis=1)
        total = np.where(missing, np.nan, np.nansum(values, axis=1))
        return {f: _plain(total[i]) for i, f in enumerate(self.fields)}

    def _row(self, key: str) -> int:
        row = self.rows.get(key)
        if row is None:
            if not self._free:
                self._grow()
            row = self.rows[key] = self._free.pop()
            self._values[:, row, :] = np.nan
        return row

    def _grow(self) -> None:
        had = self._values.shape[1]
        more = max(16, had)
        values = np.full((len(self.fields), had + more, self.ring.slots), np.nan, np.float32)
        values[:, :had] = self._values
        self._values = values
        self._last_tick = np.concatenate([self._last_tick, np.zeros(more, np.int64)])
        self._free.extend(range(had + more - 1, had - 1, -1))

    def _forget(self, tick: int) -> None:
        """Free the rows of objects last seen a whole window ago: every sample they had is
        overwritten by now."""
        if tick % self.ring.slots or not self.rows:
            return
        stale = [
            k for k, row in self.rows.items() if tick - self._last_tick[row] >= self.ring.slots
        ]
        for key in stale:
            self._free.append(self.rows.pop(key))


class UsageHistory:
    """The cluster's samples, one every `resolution` seconds: its own series for `window`
    seconds, pods' usage and workloads' replicas for `object_window` seconds."""

    def __init__(
        self,
        resolution: float = RESOLUTION,
        window: float = WINDOW,
        object_window: float = OBJECT_WINDOW,
    ) -> None:
        if resolution <= 0 or window < resolution or object_window < resolution:
            raise ValueError("the window must hold at least one sample of a positive resolution")
        self.resolution = resolution
        self.ring = _Ring(int(window // resolution))
        object_slots = int(object_window // resolution)
        self.ticks = 0
        self._times = np.full(self.ring.slots, np.nan)
        self._object_times = np.full(object_slots, np.nan)
        self._cluster: dict[str, Floats] = {}
        self.containers = ObjectRows(("cpu", "memory"), object_slots)
        """namespace/pod/container -> CPU used (cores) and memory working set (bytes)."""
        self._pod_containers: dict[str, tuple[str, ...]] = {}
        """namespace/name -> the names of its containers held."""
        self.workloads = ObjectRows(("desired", "ready"), object_slots)
        """kind/namespace/name -> the replicas wanted and the replicas ready."""
        self.recommendations = ObjectRows(("cpu", "memory"), object_slots)
        """namespace/name of a VerticalPodAutoscaler -> its target: CPU (cores), memory (bytes)."""
        self.nodes = ObjectRows(("cpu", "memory", "pods"), object_slots)
        """node name -> CPU used (cores), memory working set (bytes), pods running."""
        self.stranded = ObjectRows(("cpu", "memory"), object_slots)
        """pod shape (named after its first workload) -> the share of the free CPU and memory
        that cannot hold one more pod of the shape (`metrics.fragmentation`)."""

    def record(
        self,
        time: float,
        cluster: Mapping[str, float],
        pods: Mapping[str, Mapping[str, Sequence[float]]],
        workloads: Mapping[str, Sequence[float]],
        nodes: Mapping[str, Sequence[float]] | None = None,
        recommendations: Mapping[str, Sequence[float]] | None = None,
        stranded: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        """One sample, taken at `time` (seconds since the epoch); `pods`: by namespace/name,
        by container name, its CPU (cores) and memory working set (bytes)."""
        slot = self.ticks % self.ring.slots
        self._times[slot] = time
        self._object_times[self.ticks % self.containers.ring.slots] = time
        for name in cluster.keys() - self._cluster.keys():
            self._cluster[name] = np.full(self.ring.slots, np.nan)
        for name, series in self._cluster.items():
            series[slot] = cluster.get(name, np.nan)
        self._record_containers(pods)
        self.workloads.record(self.ticks, workloads)
        self.nodes.record(self.ticks, nodes or {})
        self.recommendations.record(self.ticks, recommendations or {})
        self.stranded.record(self.ticks, stranded or {})
        self.ticks += 1

    def _record_containers(self, pods: Mapping[str, Mapping[str, Sequence[float]]]) -> None:
        usage = {}
        for pod, containers in pods.items():
            names = tuple(containers)
            known = self._pod_containers.get(pod)
            if known != names:
                self._pod_containers[pod] = tuple(dict.fromkeys((*(known or ()), *names)))
            for name, values in containers.items():
                usage[f"{pod}/{name}"] = values
        self.containers.record(self.ticks, usage)
        if self.ticks % self.containers.ring.slots == 0:  # when the rows forget
            held = self.containers.rows
            kept = {
                pod: tuple(name for name in names if f"{pod}/{name}" in held)
                for pod, names in self._pod_containers.items()
            }
            self._pod_containers = {pod: names for pod, names in kept.items() if names}

    def last_nodes(self) -> dict[str, tuple[float, ...]]:
        """Each node's CPU, memory and pods at the last sample."""
        return self.nodes.at(self.ticks - 1) if self.ticks else {}

    def cluster_series(self, since: float | None = None) -> dict[str, list[float | None]]:
        """ "time" (seconds since the epoch) and every cluster series, oldest first; only the
        samples taken at or after `since` when given."""
        order = self.ring.order(self.ticks)
        times = self._times[order]
        if since is not None:
            order = order[times >= since]
            times = self._times[order]
        series = {"time": _plain(times)}
        series |= {name: _plain(values[order]) for name, values in self._cluster.items()}
        return series

    def pod(self, key: str) -> dict[str, list[float | None]] | None:
        """ "time" and the pod's CPU and memory (its containers' sum), oldest first; None for
        a pod not held."""
        names = self._pod_containers.get(key, ())
        return self._object(self.containers.read_sum((f"{key}/{n}" for n in names), self.ticks))

    def container(self, pod: str, name: str) -> dict[str, list[float | None]] | None:
        """ "time" and the CPU and memory of the container `name` of the pod `pod`
        (namespace/name), oldest first; None for a container not held."""
        return self._object(self.containers.read(f"{pod}/{name}", self.ticks))

    def workload(self, key: str) -> dict[str, list[float | None]] | None:
        """ "time" and the workload's replicas wanted and ready; None for one not held."""
        return self._object(self.workloads.read(key, self.ticks))

    def recommendation(self, key: str) -> dict[str, list[float | None]] | None:
        """ "time" and a VerticalPodAutoscaler's target CPU and memory; None for one not held."""
        return self._object(self.recommendations.read(key, self.ticks))

    def fragmentation(self) -> dict[str, dict[str, list[float | None]]]:
        """By pod shape: "time" and the stranded shares of CPU and memory, oldest first."""
        shapes = self.stranded.rows
        reads = {shape: self._object(self.stranded.read(shape, self.ticks)) for shape in shapes}
        return {shape: read for shape, read in reads.items() if read is not None}

    def _object(
        self, read: dict[str, list[float | None]] | None
    ) -> dict[str, list[float | None]] | None:
        if read is None:
            return None
        times = self._object_times[self.containers.ring.order(self.ticks)]
        return {"time": _plain(times)} | read


def _plain(values: npt.NDArray[np.floating]) -> list[float | None]:
    """JSON-ready: NaN becomes None."""
    return [None if v != v else float(v) for v in values.tolist()]
