"""Which pods block a node's removal, and which must be placed elsewhere first: the rules of
cluster-autoscaler's simulator (simulator/drainability/rules, in the order of rules.Default,
and utils/drain), shared by the cluster autoscaler's scale-down and `pinnace plan remove`.

For each pod of a node:

- mirror pods and pods terminating for longer than their grace period and 30 s are left out;
- DaemonSet pods go with the node, terminal (finished) pods need no place, and a pod annotated
  `cluster-autoscaler.kubernetes.io/safe-to-evict: "true"` is moved whatever the rules below say;
- a pod without a controller, or whose controller is not a ReplicationController, ReplicaSet,
  Job or StatefulSet, blocks the node: NotReplicated; one whose controller is gone:
  ControllerNotFound;
- a kube-system pod that no PodDisruptionBudget covers: UnmovableKubeSystemPod;
- `safe-to-evict: "false"`: NotSafeToEvictAnnotation;
- a hostPath or emptyDir volume (not in memory, and not named in
  `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`): LocalStorageRequested;
- a pod whose PodDisruptionBudget allows no more disruptions: NotEnoughPdb. A node's pods are
  counted together against each budget.

A budget's room is its status.disruptionsAllowed when the disruption controller has written
one (a running cluster), else worked out from the pods: its healthy pods (bound, Ready or with
no conditions yet, not terminating) less those it wants healthy (minAvailable, or the pods it
covers less maxUnavailable; percentages of the pods it covers, rounded up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.core.pod_validation import MIRROR_POD_ANNOTATION
from pinnace.api.labels import LabelSelector, SelectorError, selector_from_dict
from pinnace.api.objects import Object
from pinnace.clock import parse_time
from pinnace.controllers.controller_utils import controller_ref, is_pod_ready
from pinnace.controllers.disruption import scaled_value

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
LONG_TERMINATING_EXTRA = 30.0
DEFAULT_GRACE = 30
KUBE_SYSTEM = "kube-system"
REPLICATED_KINDS = ("ReplicationController", "Job", "ReplicaSet", "StatefulSet")
OWNER_RESOURCES = {"ReplicaSet": "replicasets", "Job": "jobs", "StatefulSet": "statefulsets"}
"""The controllers whose existence is checked (ControllerNotFound), by their resource."""

# cluster-autoscaler's reasons (simulator.UnremovableReason, drain.BlockingPodReason)
BLOCKED_BY_POD = "BlockedByPod"
NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
NOT_UNDERUTILIZED = "NotUnderutilized"
SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
NOT_REPLICATED = "NotReplicated"
CONTROLLER_NOT_FOUND = "ControllerNotFound"
UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
NOT_SAFE_TO_EVICT_ANNOTATION = "NotSafeToEvictAnnotation"
LOCAL_STORAGE_REQUESTED = "LocalStorageRequested"
NOT_ENOUGH_PDB = "NotEnoughPdb"

MOVE, STAY, SKIP = "move", "stay", "skip"
"""What draining does with a drainable pod: place it elsewhere, let it go with the node (a
DaemonSet's, or a finished one), or leave it out (mirror, long terminating)."""

Owners = set[tuple[str, str, str]]
"""The controllers that exist: (resource, namespace, name)."""


@dataclass(frozen=True)
class Blocked:
    reason: str
    pod: str
    """namespace/name"""
    detail: str


@dataclass
class Budget:
    namespace: str
    name: str
    selector: LabelSelector
    room: int
    """How many more of its pods may be disrupted."""


@dataclass
class Drain:
    """A node's pods as a drain sees them: those to move, or what blocks it."""

    move: list[Object] = field(default_factory=list)
    blocked: Blocked | None = None


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def drain(pods: Iterable[Object], budgets: list[Budget], owners: Owners, now: float) -> Drain:
    """The pods of a node to move, or the first that blocks its removal."""
    result = Drain()
    for pod in pods:
        outcome = judge(pod, budgets, owners, now)
        if isinstance(outcome, Blocked):
            result.blocked = outcome
            return result
        if outcome == MOVE:
            result.move.append(pod)
    short = short_budget(budgets, result.move)
    if short is not None:
        _, pod = short
        detail = f"not enough pod disruption budget to move {pod_key(pod)}"
        result.blocked = Blocked(NOT_ENOUGH_PDB, pod_key(pod), detail)
    return result


def judge(pod: Object, budgets: list[Budget], owners: Owners, now: float) -> str | Blocked:
    """The rules in cluster-autoscaler's order (drainability/rules.Default)."""
    meta = pod["metadata"]
    annotations = meta.get("annotations") or {}
    key = pod_key(pod)
    if MIRROR_POD_ANNOTATION in annotations or _long_terminating(pod, now):
        return SKIP
    ref = controller_ref(pod)
    kind = ref.get("kind", "") if ref is not None else ""
    if kind == "DaemonSet":
        return STAY
    if annotations.get(SAFE_TO_EVICT) == "true":
        return MOVE
    if is_terminal(pod):
        return STAY
    if kind not in REPLICATED_KINDS:
        return Blocked(NOT_REPLICATED, key, f"{key} is not replicated")
    resource = OWNER_RESOURCES.get(kind)
    owner = (resource or "", meta.get("namespace") or "default", (ref or {}).get("name", ""))
    if resource is not None and owner not in owners:
        return Blocked(CONTROLLER_NOT_FOUND, key, f"{kind.lower()} for {key} is not available")
    if meta.get("namespace") == KUBE_SYSTEM and not covering(budgets, pod):
        detail = (
            f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {meta['name']}"
        )
        return Blocked(UNMOVABLE_KUBE_SYSTEM_POD, key, detail)
    if annotations.get(SAFE_TO_EVICT) == "false":
        detail = f"pod annotated as not safe to evict present: {meta['name']}"
        return Blocked(NOT_SAFE_TO_EVICT_ANNOTATION, key, detail)
    if _blocking_local_storage(pod):
        return Blocked(
            LOCAL_STORAGE_REQUESTED, key, f"pod with local storage present: {meta['name']}"
        )
    return MOVE


def _long_terminating(pod: Object, now: float) -> bool:
    deleted = pod["metadata"].get("deletionTimestamp")
    if not deleted:
        return False
    grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE if grace is None else grace
    return parse_time(deleted) + grace + LONG_TERMINATING_EXTRA < now


def is_terminal(pod: Object) -> bool:
    """IsPodTerminal: finished and never restarted (a Failed pod always is)."""
    phase = (pod.get("status") or {}).get("phase")
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return phase == "Failed" or (phase == "Succeeded" and policy in ("Never", "OnFailure"))


def _blocking_local_storage(pod: Object) -> bool:
    safe = set(
        ((pod["metadata"].get("annotations") or {}).get(SAFE_TO_EVICT_LOCAL_VOLUMES) or "").split(
            ","
        )
    )
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        empty_dir = volume.get("emptyDir")
        local = volume.get("hostPath") is not None or (
            empty_dir is not None and (empty_dir or {}).get("medium") != "Memory"
        )
        if local and volume.get("name") not in safe:
            return True
    return False


# --- budgets -----------------------------------------------------------------------------------


def budgets_of(pdbs: Iterable[Mapping[str, Any]], pods: Sequence[Object]) -> list[Budget]:
    """The PodDisruptionBudgets' room now (an unreadable selector's budget is left out)."""
    budgets = []
    for pdb in pdbs:
        meta, spec = pdb["metadata"], pdb.get("spec") or {}
        try:
            selector = selector_from_dict(spec.get("selector"))
        except SelectorError:
            continue
        namespace = meta.get("namespace") or "default"
        budget = Budget(namespace, meta["name"], selector, 0)
        budget.room = _room(pdb, [p for p in pods if _covers(budget, p)])
        budgets.append(budget)
    return budgets


def _room(pdb: Mapping[str, Any], covered: list[Object]) -> int:
    status = pdb.get("status") or {}
    if status.get("observedGeneration") is not None:
        return int(status.get("disruptionsAllowed") or 0)
    spec = pdb.get("spec") or {}
    healthy = sum(1 for p in covered if _healthy(p))
    expected = len(covered)
    if spec.get("maxUnavailable") is not None:
        desired = max(expected - scaled_value(spec["maxUnavailable"], expected), 0)
    elif spec.get("minAvailable") is not None:
        desired = scaled_value(spec["minAvailable"], expected)
    else:
        return 0
    return max(healthy - desired, 0)


def _healthy(pod: Object) -> bool:
    if not (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return is_pod_ready(pod) or not (pod.get("status") or {}).get("conditions")


def _covers(budget: Budget, pod: Object) -> bool:
    meta = pod["metadata"]
    return (meta.get("namespace") or "default") == budget.namespace and budget.selector.matches(
        meta.get("labels") or {}
    )


def covering(budgets: list[Budget], pod: Object) -> list[Budget]:
    return [b for b in budgets if _covers(b, pod)]


def short_budget(budgets: list[Budget], pods: list[Object]) -> tuple[Budget, Object] | None:
    """The first budget the node's pods, taken together, would overrun, and its pod."""
    spent: dict[int, int] = {}
    for pod in pods:
        for budget in covering(budgets, pod):
            spent[id(budget)] = spent.get(id(budget), 0) + 1
            if spent[id(budget)] > budget.room:
                return budget, pod
    return None


def spend(budgets: list[Budget], pods: list[Object]) -> None:
    """Take the moved pods from their budgets' room."""
    for pod in pods:
        for budget in covering(budgets, pod):
            budget.room -= 1


def owners_of(objects: Mapping[str, Iterable[Mapping[str, Any]]]) -> Owners:
    """The controllers that exist, from their objects by resource (OWNER_RESOURCES' values)."""
    return {
        (resource, o["metadata"].get("namespace") or "default", o["metadata"]["name"])
        for resource, items in objects.items()
        for o in items
    }
