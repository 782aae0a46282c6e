"""What the DaemonSet controller decides per node and per pod, as kube-controller-manager
v1.32's pkg/controller/daemon (NodeShouldRunDaemonPod, podsShouldBeOnNode's ordering) and
daemon/util (the tolerations daemon pods get, the pod template with its revision labels, the
node-name affinity that lets the scheduler place them, IsPodUpdated, surge and unavailability
counts), and the backoff that paces the deletion of failed daemon pods."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.apps.daemonset import ROLLING_UPDATE, template_generation
from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.deployment_util import compute_hash, scaled_value
from pinnace.controllers.history import CONTROLLER_REVISION_HASH
from pinnace.controllers.node_lifecycle import (
    CONDITION_TAINTS,
    NO_EXECUTE,
    NO_SCHEDULE,
    NOT_READY,
    UNREACHABLE,
    UNSCHEDULABLE,
)
from pinnace.scheduling.nodeaffinity import NODE_NAME_FIELD, RequiredNodeAffinity
from pinnace.scheduling.taints import Taint, Toleration, first_untolerated, pod_tolerations

TEMPLATE_GENERATION = "pod-template-generation"
MEMORY_PRESSURE = CONDITION_TAINTS["MemoryPressure"]["True"]
DISK_PRESSURE = CONDITION_TAINTS["DiskPressure"]["True"]
PID_PRESSURE = CONDITION_TAINTS["PIDPressure"]["True"]
NETWORK_UNAVAILABLE = CONDITION_TAINTS["NetworkUnavailable"]["True"]
_DAEMON_TOLERATIONS = (
    (NOT_READY, NO_EXECUTE),
    (UNREACHABLE, NO_EXECUTE),
    (DISK_PRESSURE, NO_SCHEDULE),
    (MEMORY_PRESSURE, NO_SCHEDULE),
    (PID_PRESSURE, NO_SCHEDULE),
    (UNSCHEDULABLE, NO_SCHEDULE),
)
"""Every daemon pod tolerates these for ever (AddOrUpdateDaemonPodTolerations): node
problems and cordons do not take it off its node or keep it from being placed."""
FAILED_POD_BACKOFF_INITIAL = 1.0
FAILED_POD_BACKOFF_MAX = 15 * 60.0


# --- the daemon pod ---------------------------------------------------------------------------


def _add_or_update_toleration(spec: Object, toleration: Object) -> None:
    """AddOrUpdateTolerationInPodSpec: a toleration with the same key, operator, value and
    effect is replaced by `toleration`; otherwise `toleration` is appended."""
    identity = ("key", "operator", "value", "effect")
    tolerations = spec.get("tolerations") or []
    updated = False
    result = []
    for existing in tolerations:
        if all((existing.get(k) or "") == (toleration.get(k) or "") for k in identity):
            result.append(dict(toleration))
            updated = True
        else:
            result.append(existing)
    if not updated:
        result.append(dict(toleration))
    spec["tolerations"] = result


def add_daemon_pod_tolerations(spec: Object) -> None:
    """The tolerations a daemon pod gets on top of its template's (in place)."""
    keys = list(_DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        keys.append((NETWORK_UNAVAILABLE, NO_SCHEDULE))
    for key, effect in keys:
        _add_or_update_toleration(spec, {"key": key, "operator": "Exists", "effect": effect})


def template_generation_of(ds: Object) -> int | None:
    """The DaemonSet's template generation; None when it has none (GetTemplateGeneration)."""
    return template_generation(ds) or None


def current_hash(ds: Object) -> str:
    """The controller-revision-hash of the DaemonSet's current template and collisionCount."""
    collisions = (ds.get("status") or {}).get("collisionCount")
    return compute_hash(ds["spec"].get("template") or {}, collisions)


def create_pod_template(template: Object, generation: int | None, hash_: str) -> Object:
    """CreatePodTemplate: the template with the daemon tolerations and the
    pod-template-generation and controller-revision-hash labels."""
    result = copy.deepcopy(template)
    add_daemon_pod_tolerations(result.setdefault("spec", {}))
    meta = result.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    if generation is not None:
        labels[TEMPLATE_GENERATION] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH] = hash_
    meta["labels"] = labels
    return result


def bind_to_node(spec: Object, node: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the pod's required node affinity becomes a
    single term asking for `node` by name (in place); the scheduler then places it there."""
    term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}]}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def target_node_name(pod: Object) -> str | None:
    """GetTargetNodeName: the pod's node, or before it is scheduled the one node its
    `metadata.name In` affinity names; None when it names none (or several)."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for requirement in term.get("matchFields") or []:
            if requirement.get("key") == NODE_NAME_FIELD and requirement.get("operator") == "In":
                values = requirement.get("values") or []
                return str(values[0]) if len(values) == 1 else None
    return None


def is_pod_updated(pod: Object, hash_: str, generation: int | None) -> bool:
    """IsPodUpdated: the pod carries the current hash, or the current template generation."""
    labels = pod["metadata"].get("labels") or {}
    if generation is not None and labels.get(TEMPLATE_GENERATION) == str(generation):
        return True
    return bool(hash_) and labels.get(CONTROLLER_REVISION_HASH) == hash_


def creation_order(pod: Object) -> tuple[bool, float, str]:
    """podByCreationTimestampAndPhase: scheduled pods first, then the oldest, then by name."""
    created = pod["metadata"].get("creationTimestamp")
    return (
        not pod["spec"].get("nodeName"),
        parse_time(created) if created else 0.0,
        pod["metadata"]["name"],
    )


# --- which nodes ------------------------------------------------------------------------------


def _taints(node: Mapping[str, Any], effects: tuple[str, ...]) -> list[Taint]:
    return [
        Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
        for t in (node.get("spec") or {}).get("taints") or ()
        if t.get("effect") in effects
    ]


@dataclass(frozen=True)
class DaemonPlacement:
    """NodeShouldRunDaemonPod for one DaemonSet: its pod, with the daemon tolerations,
    against a node's name, labels and taints."""

    node_name: str
    affinity: RequiredNodeAffinity
    tolerations: tuple[Toleration, ...]
    _by_node: dict[str, tuple[str, tuple[bool, bool]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """node name -> (resourceVersion, answer): a sync asks of every node several times."""

    @classmethod
    def of(cls, ds: Object) -> DaemonPlacement:
        spec = copy.deepcopy((ds["spec"].get("template") or {}).get("spec") or {})
        add_daemon_pod_tolerations(spec)
        tolerations = pod_tolerations(spec)
        return cls(spec.get("nodeName") or "", RequiredNodeAffinity(spec), tolerations)

    def should_run(self, node: Mapping[str, Any]) -> tuple[bool, bool]:
        """(shouldRun, shouldContinueRunning): whether a daemon pod is to be placed on the
        node, and whether one already there may stay (it tolerates the NoExecute taints)."""
        meta = node.get("metadata") or {}
        name, version = meta.get("name") or "", meta.get("resourceVersion")
        cached = self._by_node.get(name)
        if cached is not None and version and cached[0] == version:
            return cached[1]
        answer = self._should_run(node, meta, name)
        if version:
            self._by_node[name] = (version, answer)
        return answer

    def _should_run(
        self, node: Mapping[str, Any], meta: Mapping[str, Any], name: str
    ) -> tuple[bool, bool]:
        if self.node_name and self.node_name != name:
            return False, False
        if not self.affinity.matches(meta.get("labels") or {}, name):
            return False, False
        if first_untolerated(_taints(node, (NO_SCHEDULE, NO_EXECUTE)), self.tolerations) is None:
            return True, True
        return False, first_untolerated(_taints(node, (NO_EXECUTE,)), self.tolerations) is None


# --- rolling update counts --------------------------------------------------------------------


def _rolling(ds: Object) -> Object | None:
    strategy = ds["spec"].get("updateStrategy") or {}
    if strategy.get("type") != ROLLING_UPDATE:
        return None
    return strategy.get("rollingUpdate")


def unavailable_count(ds: Object, desired: int) -> int:
    """UnavailableCount: maxUnavailable as pods of `desired`, rounded up."""
    rolling = _rolling(ds)
    return 0 if rolling is None else scaled_value(rolling.get("maxUnavailable", 0), desired, True)


def surge_count(ds: Object, desired: int) -> int:
    """SurgeCount: maxSurge as pods of `desired`, rounded up."""
    rolling = _rolling(ds)
    return 0 if rolling is None else scaled_value(rolling.get("maxSurge", 0), desired, True)


def allows_surge(ds: Object) -> bool:
    return surge_count(ds, 1) != 0


# --- failed pods ------------------------------------------------------------------------------


@dataclass
class _Entry:
    delay: float
    last_update: float


@dataclass
class FailedPodsBackoff:
    """client-go's flowcontrol.Backoff as the DaemonSet controller uses it for failed pods
    (1 s doubling to 15 min per DaemonSet generation and node, no jitter); an entry left
    alone for twice the maximum is forgotten (Kubernetes sweeps every minute, Pinnace on each
    new failure)."""

    initial: float = FAILED_POD_BACKOFF_INITIAL
    maximum: float = FAILED_POD_BACKOFF_MAX
    _entries: dict[str, _Entry] = field(default_factory=dict)

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.last_update > 2 * self.maximum

    def in_backoff(self, key: str, now: float) -> bool:
        """IsInBackOffSinceUpdate."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return False
        return now - entry.last_update < entry.delay

    def delay(self, key: str) -> float:
        entry = self._entries.get(key)
        return 0.0 if entry is None else entry.delay

    def next(self, key: str, now: float) -> None:
        self.gc(now)
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            self._entries[key] = _Entry(self.initial, now)
        else:
            entry.delay = min(entry.delay * 2, self.maximum)
            entry.last_update = now

    def gc(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if self._expired(e, now)]:
            del self._entries[key]
