"""`pinnace plan remove`: which nodes could be drained with every pod still placed, as
cluster-autoscaler's scale-down simulation asks it (cluster-autoscaler/simulator: cluster.go's
RemovalSimulator, drainability/rules and utils/drain), with kube-scheduler placing the pods.

Nodes are taken in order of utilisation, least first (the larger of the cpu and memory requested
over allocatable, DaemonSet pods included, as cluster-autoscaler counts it; with `threshold`,
a node at or above it is NotUnderutilized). For each node, its pods are judged by the drainability
rules in cluster-autoscaler's order:

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
- a pod whose PodDisruptionBudget allows no more disruptions: NotEnoughPdb. The budgets' room
  is tracked across the nodes found removable, and a node's pods are counted together.

A node annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` is
ScaleDownDisabledAnnotation. Otherwise the node is taken away and the pods to move are placed
on the remaining nodes as cluster-autoscaler's simulator places them: on a node kube-scheduler's
Filter plugins accept (any of them: nothing is scored, nothing preempted; the cluster's pending
pods are placed so first); if one does not fit the node stays (NoPlaceToMovePods, with the pod
and its FailedScheduling message), else it is removable and stays away while the next nodes are
tried, so later nodes cannot count on it.
Like cluster-autoscaler's, the search is greedy: it finds a set of nodes that can go together,
not always the largest.

A budget's room is its status.disruptionsAllowed when the disruption controller has written
one (a running cluster), else worked out from the snapshot: its healthy pods (bound, Ready or
with no conditions yet, not terminating) less those it wants healthy (minAvailable, or the pods
it covers less maxUnavailable; percentages of the pods it covers, rounded up).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.core.pod_validation import MIRROR_POD_ANNOTATION
from pinnace.api.labels import LabelSelector, SelectorError, selector_from_dict
from pinnace.api.objects import Object
from pinnace.clock import parse_time
from pinnace.controllers.controller_utils import controller_ref, is_pod_ready
from pinnace.controllers.disruption import scaled_value
from pinnace.plan import report
from pinnace.plan.cluster import PlanError, Snapshot, is_finished, pool_of
from pinnace.plan.fragments import shapes_of
from pinnace.plan.placement import Placer, pod_key
from pinnace.plan.report import PlanReport, Table
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.config import SchedulerConfiguration

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
LONG_TERMINATING_EXTRA = 30.0
DEFAULT_GRACE = 30
KUBE_SYSTEM = "kube-system"
REPLICATED_KINDS = ("ReplicationController", "Job", "ReplicaSet", "StatefulSet")
OWNER_RESOURCES = {"ReplicaSet": "replicasets", "Job": "jobs", "StatefulSet": "statefulsets"}

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


@dataclass(frozen=True)
class Blocked:
    reason: str
    pod: str
    detail: str


@dataclass
class _Budget:
    namespace: str
    name: str
    selector: LabelSelector
    room: int


@dataclass
class _Drain:
    """A node's pods as a drain sees them: those to move, or what blocks it."""

    move: list[Object] = field(default_factory=list)
    blocked: Blocked | None = None


def removable(
    snapshot: Snapshot,
    *,
    threshold: float | None = None,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
) -> PlanReport:
    """The nodes that can go; see the module's docstring."""
    if threshold is not None and not 0 < threshold <= 1:
        raise PlanError("the utilisation threshold must be above 0 and at most 1")
    placer = Placer(snapshot, seed=seed, config=config, preemption=False, scoring=False)
    placer.run()
    budgets = _budgets(snapshot, placer)
    owners = _owners(snapshot)
    order = sorted(placer.nodes, key=lambda n: (_utilisation(placer, n), n))
    utilisation = {n: _utilisation(placer, n) for n in order}
    removed: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for name in order:
        node = placer.nodes[name]
        row = {"node": name, "pool": pool_of(node), "utilisation": round(utilisation[name], 6)}
        if threshold is not None and utilisation[name] >= threshold:
            kept.append({**row, "reason": NOT_UNDERUTILIZED})
            continue
        if (node["metadata"].get("annotations") or {}).get(SCALE_DOWN_DISABLED) == "true":
            kept.append({**row, "reason": SCALE_DOWN_DISABLED_ANNOTATION})
            continue
        drain = _drain(placer.pods_on(name), budgets, owners, snapshot.now)
        if drain.blocked is not None:
            blocked = drain.blocked
            kept.append(
                {
                    **row,
                    "reason": BLOCKED_BY_POD,
                    "blockingPod": blocked.pod,
                    "blockingReason": blocked.reason,
                    "detail": blocked.detail,
                }
            )
            continue
        placer.begin()
        placer.remove_node(name)
        outcomes = placer.place([placer.replacement(p) for p in drain.move])
        failed = next((o for o in outcomes if not o.node), None)
        if failed is not None:
            placer.restore()
            kept.append(
                {
                    **row,
                    "reason": NO_PLACE_TO_MOVE_PODS,
                    "blockingPod": pod_key(drain.move[outcomes.index(failed)]),
                    "detail": failed.message,
                }
            )
            continue
        placer.commit()
        _spend(budgets, drain.move)
        moves = [
            {"pod": pod_key(p), "to": o.node} for p, o in zip(drain.move, outcomes, strict=True)
        ]
        removed.append({**row, "moves": moves})
    total = len(order)
    body = {
        "threshold": threshold,
        "removable": removed,
        "unremovable": kept,
        "nodesBefore": total,
        "nodesAfter": total - len(removed),
        "compactionRatio": round(len(removed) / total, 6) if total else 0.0,
    }
    sections = report.cluster_sections(placer, shapes_of(placer.pods.values()))
    doc = report.document("remove", snapshot, {**body, **sections})
    return PlanReport(doc, _headline(doc), _tables(doc))


# --- drainability ------------------------------------------------------------------------------


def _drain(
    pods: Sequence[Object], budgets: list[_Budget], owners: set[tuple[str, str, str]], now: float
) -> _Drain:
    drain = _Drain()
    for pod in pods:
        outcome = _judge(pod, budgets, owners, now)
        if isinstance(outcome, Blocked):
            drain.blocked = outcome
            return drain
        if outcome == MOVE:
            drain.move.append(pod)
    short = _short_budget(budgets, drain.move)
    if short is not None:
        _, pod = short
        detail = f"not enough pod disruption budget to move {pod_key(pod)}"
        drain.blocked = Blocked(NOT_ENOUGH_PDB, pod_key(pod), detail)
    return drain


def _judge(
    pod: Object, budgets: list[_Budget], owners: set[tuple[str, str, str]], now: float
) -> str | Blocked:
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
    if _terminal(pod):
        return STAY
    if kind not in REPLICATED_KINDS:
        return Blocked(NOT_REPLICATED, key, f"{key} is not replicated")
    resource = OWNER_RESOURCES.get(kind)
    owner = (resource or "", meta.get("namespace") or "default", (ref or {}).get("name", ""))
    if resource is not None and owner not in owners:
        return Blocked(CONTROLLER_NOT_FOUND, key, f"{kind.lower()} for {key} is not available")
    if meta.get("namespace") == KUBE_SYSTEM and not _covering(budgets, pod):
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


def _terminal(pod: Object) -> bool:
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


def _budgets(snapshot: Snapshot, placer: Placer) -> list[_Budget]:
    pods = list(placer.pods.values())
    budgets = []
    for pdb in snapshot.of("poddisruptionbudgets"):
        meta, spec = pdb["metadata"], pdb.get("spec") or {}
        try:
            selector = selector_from_dict(spec.get("selector"))
        except SelectorError:
            continue
        namespace = meta.get("namespace") or "default"
        budget = _Budget(namespace, meta["name"], selector, 0)
        covered = [p for p in pods if _covers(budget, p)]
        budget.room = _room(pdb, covered)
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
    if is_finished(pod):
        return False
    return is_pod_ready(pod) or not (pod.get("status") or {}).get("conditions")


def _covers(budget: _Budget, pod: Object) -> bool:
    meta = pod["metadata"]
    return (meta.get("namespace") or "default") == budget.namespace and budget.selector.matches(
        meta.get("labels") or {}
    )


def _covering(budgets: list[_Budget], pod: Object) -> list[_Budget]:
    return [b for b in budgets if _covers(b, pod)]


def _short_budget(budgets: list[_Budget], pods: list[Object]) -> tuple[_Budget, Object] | None:
    """The first budget the node's pods, taken together, would overrun, and its pod."""
    spent: dict[int, int] = {}
    for pod in pods:
        for budget in _covering(budgets, pod):
            spent[id(budget)] = spent.get(id(budget), 0) + 1
            if spent[id(budget)] > budget.room:
                return budget, pod
    return None


def _spend(budgets: list[_Budget], pods: list[Object]) -> None:
    for pod in pods:
        for budget in _covering(budgets, pod):
            budget.room -= 1


def _owners(snapshot: Snapshot) -> set[tuple[str, str, str]]:
    return {
        (resource, o["metadata"].get("namespace") or "default", o["metadata"]["name"])
        for resource in OWNER_RESOURCES.values()
        for o in snapshot.of(resource)
    }


def _utilisation(placer: Placer, node: str) -> float:
    table = placer.core.table
    i = table.index[node]
    shares = []
    for resource in (CPU, MEMORY):
        column = table.column(resource)
        allocatable = int(table.allocatable[i, column])
        if allocatable > 0:
            shares.append(int(table.requested[i, column]) / allocatable)
    return max(shares, default=0.0)


# --- output ------------------------------------------------------------------------------------


def _headline(doc: Mapping[str, Any]) -> list[str]:
    before, after = doc["nodesBefore"], doc["nodesAfter"]
    return [
        f"{before - after} of {before} nodes can be removed with every pod placed elsewhere "
        f"(compaction ratio {100 * doc['compactionRatio']:.0f} %): {after} nodes left."
    ]


def _tables(doc: Mapping[str, Any]) -> list[Table]:
    gone = Table(
        "Removable nodes (in the order tried)",
        ["NODE", "POOL", "UTILISATION", "PODS MOVED"],
        [
            [r["node"], r["pool"] or "-", f"{100 * r['utilisation']:.0f}%", str(len(r["moves"]))]
            for r in doc["removable"]
        ],
    )
    stay = Table(
        "Nodes that cannot go",
        ["NODE", "POOL", "UTILISATION", "REASON", "POD", "DETAIL"],
        [
            [
                r["node"],
                r["pool"] or "-",
                f"{100 * r['utilisation']:.0f}%",
                r["reason"] + (f" ({r['blockingReason']})" if r.get("blockingReason") else ""),
                r.get("blockingPod", "-"),
                r.get("detail", ""),
            ]
            for r in doc["unremovable"]
        ],
    )
    return [gone, stay, report.node_table(doc, "Nodes left"), report.fragmentation_table(doc)]
