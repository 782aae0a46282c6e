"""Which pods the descheduler may evict (its DefaultEvictor plugin) and the evictions
themselves (its PodEvictor): through the eviction API, so PodDisruptionBudgets hold, within
the policy's limits per node, per namespace and per cycle; in dry-run mode only recorded."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder
from pinnace.clock.rfc3339 import parse_time
from pinnace.descheduler.args import Args, PolicyError
from pinnace.descheduler.snapshot import Snapshot

log = logging.getLogger(__name__)

COMPONENT = "sigs.k8s.io/descheduler"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SOURCE_ANNOTATION = "kubernetes.io/config.source"
FITS_NOWHERE_ELSE = (
    "pod does not fit on any other node because of nodeSelector(s), Taint(s), or nodes marked "
    "as unschedulable"
)
"""The DefaultEvictor's PreEvictionFilter, as the descheduler logs it."""
NAMESPACE_LIMIT = "maximum number of evicted pods per namespace reached"


@dataclass(frozen=True)
class EvictorArgs:
    """The DefaultEvictor's args."""

    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_daemon_set_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = False
    node_fit: bool = False
    priority_threshold_name: str = ""
    priority_threshold_value: int | None = None
    label_selector: LabelSelector | None = None
    min_replicas: int = 0
    min_pod_age: float | None = None

    @classmethod
    def read(cls, args: Args) -> EvictorArgs:
        threshold = Args(args.raw.get("priorityThreshold"), args.path.child("priorityThreshold"))
        name = threshold.raw.get("name") or ""
        value = threshold.integer("value", minimum=-(2**31))
        if name and value is not None:
            raise threshold.forbidden("only one of priorityThreshold fields can be set")
        if not isinstance(name, str):
            raise threshold.fail("name", name, "must be a string")
        return cls(
            evict_system_critical_pods=args.boolean("evictSystemCriticalPods"),
            evict_failed_bare_pods=args.boolean("evictFailedBarePods"),
            evict_local_storage_pods=args.boolean("evictLocalStoragePods"),
            evict_daemon_set_pods=args.boolean("evictDaemonSetPods"),
            ignore_pvc_pods=args.boolean("ignorePvcPods"),
            ignore_pods_without_pdb=args.boolean("ignorePodsWithoutPDB"),
            node_fit=args.boolean("nodeFit"),
            priority_threshold_name=name,
            priority_threshold_value=value,
            label_selector=args.selector(),
            min_replicas=args.integer("minReplicas", 0) or 0,
            min_pod_age=args.duration("minPodAge"),
        )


class DefaultEvictor:
    def __init__(self, args: EvictorArgs, snapshot: Snapshot) -> None:
        self.args = args
        self.snapshot = snapshot
        self.threshold = SYSTEM_CRITICAL_PRIORITY
        if args.priority_threshold_value is not None:
            self.threshold = args.priority_threshold_value
        elif args.priority_threshold_name:
            found = snapshot.priority_classes.get(args.priority_threshold_name)
            if found is None:
                raise PolicyError(
                    f'priorityThreshold.name: priority class "{args.priority_threshold_name}" '
                    "not found"
                )
            self.threshold = found
        self.owned: dict[str, int] = {}
        for pod in snapshot.pods:
            for owner in pod["metadata"].get("ownerReferences") or []:
                self.owned[owner.get("uid", "")] = self.owned.get(owner.get("uid", ""), 0) + 1

    def unevictable(self, pod: Object) -> str:
        """Why `pod` may not be evicted at all, or "" (the DefaultEvictor's Filter)."""
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        if EVICT_ANNOTATION in annotations:
            return ""
        if meta.get("deletionTimestamp"):
            return "pod is terminating"
        owners = meta.get("ownerReferences") or []
        failed = (pod.get("status") or {}).get("phase") == "Failed"
        if not owners and not (self.args.evict_failed_bare_pods and failed):
            return "pod does not have any ownerRefs"
        if MIRROR_ANNOTATION in annotations:
            return "pod is a mirror pod"
        if annotations.get(SOURCE_ANNOTATION, "api") != "api":
            return "pod is a static pod"
        if not self.args.evict_daemon_set_pods and any(
            o.get("kind") == "DaemonSet" for o in owners
        ):
            return (
                "pod is related to daemonset and descheduler is not configured with "
                "evictDaemonSetPods"
            )
        if not self.args.evict_system_critical_pods:
            priority = int(pod["spec"].get("priority") or 0)
            if priority >= SYSTEM_CRITICAL_PRIORITY:
                return "pod has system critical priority"
            if priority >= self.threshold:
                return "pod has higher priority than specified priority class threshold"
        volumes = pod["spec"].get("volumes") or []
        if not self.args.evict_local_storage_pods and any(
            "emptyDir" in v or "hostPath" in v for v in volumes
        ):
            return (
                "pod has local storage and descheduler is not configured with evictLocalStoragePods"
            )
        if self.args.ignore_pvc_pods and any("persistentVolumeClaim" in v for v in volumes):
            return "pod has a PVC and descheduler is configured to ignore PVC pods"
        selector = self.args.label_selector
        if selector is not None and not selector.matches(meta.get("labels") or {}):
            return "pod labels do not match the labelSelector filter in the policy parameter"
        if self.args.min_replicas > 1 and len(owners) == 1:
            replicas = self.owned.get(owners[0].get("uid", ""), 0)
            if replicas < self.args.min_replicas:
                return (
                    f"owner has {replicas} replicas which is less than minReplicas of "
                    f"{self.args.min_replicas}"
                )
        if self.args.ignore_pods_without_pdb and not self.snapshot.covered_by_budget(pod):
            return "no PodDisruptionBudget found for pod"
        if self.args.min_pod_age is not None:
            started = (pod.get("status") or {}).get("startTime")
            if not started or self.snapshot.now - parse_time(started) < self.args.min_pod_age:
                return f"pod age is not older than MinPodAge: {self.args.min_pod_age:g} seconds"
        return ""

    def evictable(self, pod: Object) -> bool:
        return not self.unevictable(pod)

    def fits_elsewhere(self, pod: Object) -> bool:
        """The PreEvictionFilter: with nodeFit, the pod must fit on another node."""
        return not self.args.node_fit or self.snapshot.fits_other_node(pod)


class EvictionLimitError(Exception):
    """A limit on evictions is reached; the message says which."""


class NodeLimitError(EvictionLimitError):
    pass


class TotalLimitError(EvictionLimitError):
    pass


@dataclass(frozen=True)
class Limits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


NO_LIMITS = Limits()


@dataclass(frozen=True)
class Eviction:
    namespace: str
    name: str
    node: str
    strategy: str
    reason: str


@dataclass
class PodEvictor:
    """The cycle's evictions, and what held pods back: each pod is reported once, by the first
    reason found, however many strategies and profiles tried it."""

    client: Client
    limits: Limits
    dry_run: bool
    failure_events: bool = False
    """The policy's evictionFailureEventNotification: a Warning event (EvictionFailed) on a
    pod whose eviction a limit or the API refused."""
    evictions: list[Eviction] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: dict[str, None] = field(default_factory=dict)
    """Why plugins did nothing, in the order first said (a dict: each said once)."""
    _per_node: dict[str, int] = field(default_factory=dict)
    _per_namespace: dict[str, int] = field(default_factory=dict)
    _evicted: set[str] = field(default_factory=set)
    _refused: set[str] = field(default_factory=set)
    """Pods the API refused to evict (their failure is reported)."""
    _held_back: dict[str, str] = field(default_factory=dict)
    """uid -> why the evictor's checks kept the pod."""

    def __post_init__(self) -> None:
        self._recorder = EventRecorder(self.client, COMPONENT)

    def evicted(self, pod: Object) -> bool:
        return pod["metadata"].get("uid", "") in self._evicted

    def hold_back(self, pod: Object, reason: str) -> None:
        """Note that the evictor's checks kept `pod`, and why."""
        self._held_back.setdefault(pod["metadata"].get("uid", ""), reason)

    def held_back(self) -> dict[str, int]:
        """Why pods were held back, with how many, for pods neither evicted nor refused."""
        counts: dict[str, int] = {}
        for uid, reason in self._held_back.items():
            if uid not in self._evicted and uid not in self._refused:
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    async def evict(self, evictor: DefaultEvictor, pod: Object, strategy: str, reason: str) -> bool:
        """Evict `pod` unless it does not fit elsewhere or the API refuses (a budget); raises
        when a node or cycle limit is reached."""
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        node = pod["spec"].get("nodeName", "")
        if self.evicted(pod):
            return False
        limits = self.limits
        if limits.total is not None and len(self.evictions) >= limits.total:
            self._failed(pod, f"total eviction limit exceeded ({limits.total})")
            raise TotalLimitError("maximum number of evicted pods per a descheduling cycle reached")
        if limits.per_node is not None and self._per_node.get(node, 0) >= limits.per_node:
            self._failed(pod, f"node eviction limit exceeded ({limits.per_node})")
            raise NodeLimitError(f"maximum number of evicted pods per node reached ({node})")
        if (
            limits.per_namespace is not None
            and self._per_namespace.get(namespace, 0) >= limits.per_namespace
        ):
            self._failed(pod, f"namespace eviction limit exceeded ({limits.per_namespace})")
            self.hold_back(pod, NAMESPACE_LIMIT)
            return False  # the plugin goes on with pods of other namespaces
        if not evictor.fits_elsewhere(pod):
            self.hold_back(pod, FITS_NOWHERE_ELSE)
            return False
        if not self.dry_run:
            try:
                await self.client.evict(namespace, name)
            except StatusError as e:
                log.info("evicting %s/%s failed: %s", namespace, name, e.message)
                self._failed(pod, _eviction_error(name, e))
                if meta.get("uid", "") not in self._refused:
                    self._refused.add(meta.get("uid", ""))
                    self.failures.append(f"{namespace}/{name}: {e.message}")
                return False
            # As the descheduler: the strategy is the event's reason.
            message = f"pod eviction from {node} node by {COMPONENT}"
            self._recorder.event(pod, EVENT_TYPE_NORMAL, strategy, message)
        self._evicted.add(meta.get("uid", ""))
        self._per_node[node] = self._per_node.get(node, 0) + 1
        self._per_namespace[namespace] = self._per_namespace.get(namespace, 0) + 1
        self.evictions.append(Eviction(namespace, name, node, strategy, reason))
        return True

    def _failed(self, pod: Object, why: str) -> None:
        if self.failure_events and not self.dry_run:
            node = pod["spec"].get("nodeName", "")
            message = f"pod eviction from {node} node by {COMPONENT} failed: {why}"
            self._recorder.event(pod, EVENT_TYPE_WARNING, "EvictionFailed", message)

    async def flush(self) -> None:
        await self._recorder.flush()


def _eviction_error(name: str, error: StatusError) -> str:
    """The descheduler's words for the eviction API's refusal (its PodEvictor.evictPod)."""
    if error.code == 429:
        return f'error when evicting pod (ignoring) "{name}": {error.message}'
    if error.code == 404:
        return f'pod not found when evicting "{name}": {error.message}'
    return error.message
