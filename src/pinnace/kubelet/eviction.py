"""The kubelet's eviction manager (pkg/kubelet/eviction in v1.32): it watches the node's
eviction signals, reports pressure conditions, refuses pods under pressure, and evicts pods,
one at a time, to get the node back above its thresholds.

Every synchronization (10 s, the kubelet's monitoring interval) it reads the stats summary and:

1. finds the thresholds met, keeping those met before until the signal is back above the
   threshold plus its minimum reclaim;
2. raises the condition of each (MemoryPressure, DiskPressure, PIDPressure), held until
   evictionPressureTransitionPeriod has passed without the threshold being met;
3. acts only on thresholds met for their whole grace period (0 for hard ones), memory first;
4. for disk, first deletes dead containers and unused images, and stops there if that is
   enough;
5. ranks the active pods (those with a container still running or to run, the ones being
   stopped included) for the starved resource and evicts the first that is not critical:
   with a 1 s grace period for a hard threshold, or the shorter of evictionMaxPodGracePeriod
   and the pod's own for a soft one (the pod's own when the maximum is 0).

Before acting on thresholds, it evicts (with 1 s) every pod over its ephemeral-storage limits
(`pinnace.kubelet.eviction_storage`), and then does nothing else in that pass.

The caller then waits (polling every second, for at most 30 s) for the evicted pod to be
cleaned up and synchronizes again at once; otherwise it waits for the next interval.

Reading the summary of a node of a hundred pods costs milliseconds, too much to do every 10 s
for thousands of simulated nodes. So a pass may be skipped (`may_skip`) when it cannot change
anything: no pressure is reported or pending, and even if every pod went up to the peak of its
behaviour model (`UsageCeiling`), no threshold would be met. Nothing observable differs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pinnace.api.core.pod_shape import pod_containers
from pinnace.api.stats import PodStats, Summary
from pinnace.kubelet.admission import ADMITTED, AdmitResult
from pinnace.kubelet.behaviour import (
    BehaviourError,
    container_behaviour,
    is_peak_annotation,
    others_parse,
)
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.eviction_ranking import RankedPod, rank_for_eviction
from pinnace.kubelet.eviction_signals import (
    DISK_SIGNALS,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    INODES,
    MEMORY_PRESSURE,
    PIDS,
    PRESSURE_CONDITIONS,
    SIGNAL_RESOURCE,
    Observation,
    by_eviction_priority,
    node_conditions,
    node_thresholds,
    observe,
    threshold_amount,
    thresholds_met,
)
from pinnace.kubelet.eviction_storage import (
    empty_dir_limit_exceeded,
    storage_limit_exceeded,
    storage_limit_reachable,
)
from pinnace.kubelet.interning import Interned
from pinnace.kubelet.runtime import CRI_LOG_PREFIX_BYTES
from pinnace.kubelet.shapes import ShapeMemo
from pinnace.kubelet.summary import BYTES_PER_INODE
from pinnace.resources.names import EPHEMERAL_STORAGE, MEMORY
from pinnace.resources.node import Threshold
from pinnace.resources.oom import is_critical_pod
from pinnace.resources.pod import pod_spec
from pinnace.resources.qos import BEST_EFFORT, recorded_qos_class
from pinnace.resources.quantity import BINARY_SI, Quantity
from pinnace.scheduling.taints import Toleration

REASON = "Evicted"
"""The reason of an evicted pod, of its event, and of a pod refused under pressure."""
MONITORING_INTERVAL = 10.0
POD_CLEANUP_TIMEOUT = 30.0
POD_CLEANUP_POLL = 1.0
IMMEDIATE_GRACE_PERIOD = 1
"""The grace period of a hard eviction: the least the kubelet ever gives."""
MEMORY_PRESSURE_TAINT = "node.kubernetes.io/memory-pressure"


Pod = Mapping[str, Any]


class ActivePod(RankedPod, Protocol):
    """An admitted pod as the eviction manager reads it in every pass: what it reads of every
    pod is at hand; the whole pod (`read_pod`) only for the one it evicts, or one whose disk use
    its ephemeral-storage limit bounds."""

    @property
    def critical(self) -> bool:
        """A static, mirror or system-critical pod (`is_critical_pod`)."""

    @property
    def storage_limited(self) -> bool:
        """It has an ephemeral-storage limit or an emptyDir sizeLimit (`has_storage_limit`)."""

    def read_pod(self) -> Pod:
        """The pod itself, its spec and metadata as the API last gave them."""

    def empty_dir_used_bytes(self) -> Mapping[str, int]:
        """What its containers wrote into each of its emptyDir volumes, by volume name."""


class EvictionHost(Protocol):
    """What the eviction manager needs of its kubelet."""

    def summary(self) -> Summary:
        """The node's stats now."""

    def active_pods(self) -> Sequence[ActivePod]:
        """The admitted pods but those whose containers have all stopped: one being stopped
        may be evicted too (with a shorter grace period, see `PodWorker.evict`)."""

    def evict_pod(self, pod: ActivePod, grace_period: int, message: str, disruption: bool) -> None:
        """Record the Evicted event and kill the pod's containers within `grace_period`
        seconds; the pod ends Failed with reason Evicted and `message`, and, with
        `disruption`, a DisruptionTarget condition."""

    def node_event(self, event_type: str, reason: str, message: str) -> None: ...


class NodeReclaimer(Protocol):
    """What the container runtime can free on disk without evicting pods (the kubelet's
    container and image garbage collectors)."""

    def delete_unused_containers(self) -> None:
        """Remove every exited container (writable layer and logs) no pod needs."""

    def delete_unused_images(self) -> None:
        """Remove every image no container uses."""


@dataclass(frozen=True, slots=True)  # slots: the agent keeps one for every pod
class UsageCeiling:
    """The most the containers of some pods can use at once: the sum of the peaks of their
    behaviour models (memory working set, writable layer and log, processes). On disk, each
    container counts twice: its last exited run stays beside the running one. A container
    prints its model's log when it starts, so its log does not grow afterwards, unless its
    command prints later too (after a sleep, in a loop): then its log has no ceiling."""

    memory: float = 0.0
    disk: float = 0.0
    pids: float = 0.0
    storage_limited: float = 0
    """How many of the pods could go over an ephemeral-storage limit of theirs."""

    def __add__(self, other: UsageCeiling) -> UsageCeiling:
        return UsageCeiling(
            self.memory + other.memory,
            self.disk + other.disk,
            self.pids + other.pids,
            self.storage_limited + other.storage_limited,
        )

    @property
    def bounded(self) -> bool:
        """Whether every amount is finite: only then can it be taken back out of a sum (an
        unbounded amount less itself is not a number)."""
        return all(map(math.isfinite, (self.memory, self.disk, self.pids, self.storage_limited)))

    def __sub__(self, other: UsageCeiling) -> UsageCeiling:
        return UsageCeiling(
            self.memory - other.memory,
            self.disk - other.disk,
            self.pids - other.pids,
            self.storage_limited - other.storage_limited,
        )

    @classmethod
    def of(cls, pod: Pod) -> UsageCeiling:
        """The pod's, every container counted as running (an upper bound); unbounded when
        its model does not parse, as it may be fixed any time. The agent keeps one for every
        pod: pods whose ceilings are equal share one, and it is worked out once for all the
        pods of a shape and peak annotations (`pinnace.kubelet.shapes`: it reads none of the
        rest, and of the other model annotations only whether they parse)."""
        if not others_parse(pod):
            return _CEILINGS(cls._of(pod))
        return _CEILINGS_BY_SHAPE.of(pod, lambda: _CEILINGS(cls._of(pod)))

    @classmethod
    def _of(cls, pod: Pod) -> UsageCeiling:
        spec = pod_spec(pod)
        total = cls()
        disk_peaks: dict[str, float] = {}
        for c in pod_containers(spec):
            name = c.get("name", "")
            try:
                behaviour = container_behaviour(pod, name)
            except BehaviourError:
                return cls(math.inf, math.inf, math.inf, math.inf)
            usage, lines = behaviour.usage, behaviour.log.splitlines()
            log: float = sum(CRI_LOG_PREFIX_BYTES + len(line.encode()) + 1 for line in lines)
            if behaviour.later is not None:
                log = math.inf
            disk_peaks[name] = math.ceil(usage.ephemeral_storage.peak) + log  # stats round
            total += cls(
                math.ceil(usage.memory.peak), 2 * disk_peaks[name], math.ceil(usage.pids.peak)
            )
        if storage_limit_reachable(pod, disk_peaks):
            total += cls(storage_limited=1)
        return total


_CEILINGS: Interned[UsageCeiling] = Interned()
_CEILINGS_BY_SHAPE: ShapeMemo[UsageCeiling] = ShapeMemo(1024, is_peak_annotation)


@dataclass(frozen=True)
class Eviction:
    """A pod the manager evicted, and why."""

    pod: ActivePod
    grace_period: int
    message: str


class EvictionManager:
    def __init__(
        self, config: NodeConfig, host: EvictionHost, reclaimer: NodeReclaimer | None = None
    ) -> None:
        self.host = host
        self.reclaimer = reclaimer
        self.thresholds = node_thresholds(config)
        self.max_pod_grace_period = config.eviction_max_pod_grace_period
        self.pressure_transition_period = config.eviction_pressure_transition_period
        self.node_conditions: set[str] = set()
        """The pressure conditions the node reports now."""
        self.dedicated_image_fs: bool | None = None
        """Whether images live on a filesystem of their own, learnt from the first summary."""
        self._thresholds_met: list[Threshold] = []
        self._first_observed: dict[Threshold, float] = {}
        self._conditions_observed: dict[str, float] = {}
        self._last_summary_time: float | None = None
        self._headroom: dict[str, int] | None = None
        """By signal, how far the last summary was from meeting its thresholds (minimum
        reclaim included)."""
        self._pods_usage = UsageCeiling()
        """What the pods used in the last summary."""

    # --- admission ---------------------------------------------------------------------------

    def admit(self, pod: Pod, tolerations: Iterable[Toleration]) -> AdmitResult:
        """Under memory pressure only, a BestEffort pod is refused unless it tolerates the
        memory-pressure taint; under any other pressure every pod is; critical pods never."""
        if not self.node_conditions or is_critical_pod(pod):
            return ADMITTED
        if self.node_conditions == {MEMORY_PRESSURE}:
            if recorded_qos_class(pod) != BEST_EFFORT:
                return ADMITTED
            if any(t.tolerates(MEMORY_PRESSURE_TAINT, "", "NoSchedule") for t in tolerations):
                return ADMITTED
        conditions = " ".join(c for c in PRESSURE_CONDITIONS if c in self.node_conditions)
        return AdmitResult(False, REASON, f"The node had condition: [{conditions}]. ")

    # --- synchronization ---------------------------------------------------------------------

    def synchronize(self, now: float) -> list[Eviction]:
        """One pass of the control loop at `now`: update the conditions and evict every pod
        over its ephemeral-storage limits, or else at most one pod."""
        summary = self.host.summary()
        if self.dedicated_image_fs is None:
            self.dedicated_image_fs = _has_dedicated_image_fs(summary)
        observations = observe(summary)

        met = thresholds_met(self.thresholds, observations)
        unresolved = thresholds_met(self._thresholds_met, observations, enforce_min_reclaim=True)
        met += [t for t in unresolved if t not in met]
        self._first_observed = {t: self._first_observed.get(t, now) for t in met}

        for condition in node_conditions(met):
            self._conditions_observed[condition] = now
        self._conditions_observed = {
            c: at
            for c, at in self._conditions_observed.items()
            if now - at < self.pressure_transition_period
        }
        self.node_conditions = set(self._conditions_observed)

        self._remember_headroom(summary, observations)
        acting = [t for t, at in self._first_observed.items() if now - at >= t.grace_period]
        self._thresholds_met = acting
        stale = self._last_summary_time is not None and summary.time <= self._last_summary_time
        self._last_summary_time = summary.time
        evicted = self._local_storage_evictions(summary)
        if evicted or stale:
            return evicted
        acting = by_eviction_priority(acting)
        threshold = next((t for t in acting if t.signal in SIGNAL_RESOURCE), None)
        if threshold is None:
            return []
        resource = SIGNAL_RESOURCE[threshold.signal]
        self.host.node_event("Warning", "EvictionThresholdMet", f"Attempting to reclaim {resource}")
        if self._reclaim_node_level_resources(threshold.signal):
            return []
        eviction = self._evict_one(threshold, resource, acting, observations, summary)
        return [eviction] if eviction is not None else []

    def _local_storage_evictions(self, summary: Summary) -> list[Eviction]:
        by_uid = {s.uid: s for s in summary.pods}
        evicted = []
        for pod in self.host.active_pods():
            pod_stats = by_uid.get(pod.uid)
            if pod_stats is None or pod.critical or not pod.storage_limited:
                continue
            dedicated = bool(self.dedicated_image_fs)
            whole = pod.read_pod()
            message = empty_dir_limit_exceeded(
                whole, pod.empty_dir_used_bytes()
            ) or storage_limit_exceeded(whole, pod_stats, dedicated)
            if message is not None:
                self.host.evict_pod(pod, IMMEDIATE_GRACE_PERIOD, message, disruption=False)
                evicted.append(Eviction(pod, IMMEDIATE_GRACE_PERIOD, message))
        return evicted

    def may_skip(self, ceiling: UsageCeiling) -> bool:
        """Whether a pass can change nothing: no pressure reported, no threshold pending,
        and pods using up to `ceiling` could not meet any threshold the last summary did not.
        The node's own use (system memory, images) is taken as it last was: the caller must
        not skip once that has changed."""
        if (
            self._headroom is None
            or ceiling.storage_limited
            or self.node_conditions
            or self._first_observed
            or self._thresholds_met
        ):
            return False
        growth = ceiling - self._pods_usage
        grows = {
            MEMORY: growth.memory,
            EPHEMERAL_STORAGE: growth.disk,
            INODES: _inodes(growth.disk),
            PIDS: growth.pids,
        }
        return all(grows[SIGNAL_RESOURCE[s]] < room for s, room in self._headroom.items())

    def _remember_headroom(self, summary: Summary, observations: Mapping[str, Observation]) -> None:
        headroom: dict[str, int] = {}
        for t in self.thresholds:
            observed = observations.get(t.signal)
            if observed is None:
                continue
            wanted = threshold_amount(t.value, observed)
            if t.min_reclaim is not None:
                wanted = wanted + threshold_amount(t.min_reclaim, observed)
            room = observed.available - wanted.value()
            headroom[t.signal] = min(room, headroom.get(t.signal, room))
        self._headroom = headroom
        self._pods_usage = UsageCeiling(
            sum(p.memory_working_set_bytes for p in summary.pods),
            sum(
                c.rootfs_used_bytes + c.logs_used_bytes for p in summary.pods for c in p.containers
            ),
            sum(p.pids for p in summary.pods),
        )

    def _reclaim_node_level_resources(self, signal: str) -> bool:
        """Delete dead containers and unused images for disk pressure; True when every
        threshold is then resolved (minimum reclaim included)."""
        if self.reclaimer is None or signal not in DISK_SIGNALS:
            return False
        if self.dedicated_image_fs and signal not in (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE):
            return False  # only logs and volumes are on nodefs: nothing to collect
        self.reclaimer.delete_unused_containers()
        self.reclaimer.delete_unused_images()
        observations = observe(self.host.summary())
        return not thresholds_met(self.thresholds, observations, enforce_min_reclaim=True)

    def _evict_one(
        self,
        threshold: Threshold,
        resource: str,
        acting: Sequence[Threshold],
        observations: Mapping[str, Observation],
        summary: Summary,
    ) -> Eviction | None:
        pods = self.host.active_pods()
        by_uid = {s.uid: s for s in summary.pods}

        def stats_of(pod: RankedPod) -> PodStats | None:
            return by_uid.get(pod.uid)

        ranked = rank_for_eviction(
            threshold.signal, pods, stats_of, dedicated_image_fs=bool(self.dedicated_image_fs)
        )
        for pod in ranked:
            if pod.critical:
                continue  # the kubelet never evicts a static or mirror pod, nor a critical one
            whole = pod.read_pod()
            grace = self._grace_period(threshold, whole)
            message = eviction_message(resource, whole, stats_of(pod), acting, observations)
            self.host.evict_pod(pod, grace, message, disruption=True)
            return Eviction(pod, grace, message)
        return None

    def _grace_period(self, threshold: Threshold, pod: Pod) -> int:
        """The grace period the pod's containers get, as the pod worker settles it: a zero
        override leaves the pod's own, and no pod gets less than 1 s."""
        own = pod_spec(pod).get("terminationGracePeriodSeconds")
        if threshold.is_hard:
            override = IMMEDIATE_GRACE_PERIOD
        else:
            override = int(self.max_pod_grace_period)
            if own is not None:
                override = min(override, own)
        if override == 0 and own is not None:
            override = own
        return max(override, 1)


def eviction_message(
    resource: str,
    pod: Pod,
    pod_stats: PodStats | None,
    thresholds: Sequence[Threshold],
    observations: Mapping[str, Observation],
) -> str:
    """Why the pod was evicted, in the kubelet's words: the starved resource, the threshold
    and what was available, and each container using more than it requests."""
    message = f"The node was low on resource: {resource}. "
    for t in thresholds:
        observed = observations.get(t.signal)
        if SIGNAL_RESOURCE.get(t.signal) == resource and observed is not None:
            quantity = threshold_amount(t.value, observed)
            message += f"Threshold quantity: {quantity}, available: {observed.quantity()}. "
            break
    if pod_stats is None or resource not in (MEMORY, EPHEMERAL_STORAGE):
        return message
    spec = pod_spec(pod)
    declared = {c.get("name"): c for c in (spec.get("containers") or [])}
    for c in spec.get("initContainers") or ():
        declared.setdefault(c.get("name"), c)
    for stats in pod_stats.containers:
        container = declared.get(stats.name)
        if container is None:
            continue
        used = (
            stats.memory_working_set_bytes
            if resource == MEMORY
            else stats.rootfs_used_bytes + stats.logs_used_bytes
        )
        request = Quantity(_request_text(container, resource))
        if used > request.value():
            usage = Quantity.from_milli(used * 1000, BINARY_SI)
            message += (
                f"Container {stats.name} was using {usage}, request is {request}, "
                f"has larger consumption of {resource}. "
            )
    return message


def _request_text(container: Mapping[str, Any], resource: str) -> str:
    requests = (container.get("resources") or {}).get("requests") or {}
    return str(requests.get(resource, "0"))


def _inodes(disk: float) -> float:
    """The most inodes files of `disk` more bytes may take, as the summary counts them (a
    partial inode is one), plus one: unbounded when the bytes are."""
    return math.ceil(disk / BYTES_PER_INODE) + 1 if math.isfinite(disk) else disk


def _has_dedicated_image_fs(summary: Summary) -> bool:
    node = summary.node
    return node.imagefs_capacity_bytes > 0 and (
        node.imagefs_capacity_bytes,
        node.imagefs_used_bytes,
    ) != (node.nodefs_capacity_bytes, node.nodefs_used_bytes)
