"""`pinnace plan remove`: which nodes could be drained with every pod still placed, as
cluster-autoscaler's scale-down simulation asks it (cluster-autoscaler/simulator: cluster.go's
RemovalSimulator, drainability/rules and utils/drain), with kube-scheduler placing the pods.

Nodes are taken in order of utilisation, least first (the larger of the cpu and memory requested
over allocatable, DaemonSet pods included, as cluster-autoscaler counts it; with `threshold`,
a node at or above it is NotUnderutilized). For each node, its pods are judged by the drainability
rules (`pinnace.autoscaler.drainability`, shared with the cluster autoscaler); the budgets' room
is tracked across the nodes found removable.

A node annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"` is
ScaleDownDisabledAnnotation. Otherwise the node is taken away and the pods to move are placed
on the remaining nodes as cluster-autoscaler's simulator places them: on a node kube-scheduler's
Filter plugins accept (any of them: nothing is scored, nothing preempted; the cluster's pending
pods are placed so first); if one does not fit the node stays (NoPlaceToMovePods, with the pod
and its FailedScheduling message), else it is removable and stays away while the next nodes are
tried, so later nodes cannot count on it.
Like cluster-autoscaler's, the search is greedy: it finds a set of nodes that can go together,
not always the largest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.autoscaler.drainability import (
    BLOCKED_BY_POD,
    NO_PLACE_TO_MOVE_PODS,
    NOT_UNDERUTILIZED,
    OWNER_RESOURCES,
    SCALE_DOWN_DISABLED,
    SCALE_DOWN_DISABLED_ANNOTATION,
    budgets_of,
    drain,
    owners_of,
    spend,
)
from pinnace.plan import report
from pinnace.plan.cluster import PlanError, Snapshot, pool_of
from pinnace.plan.fragments import shapes_of
from pinnace.plan.placement import Placer, pod_key
from pinnace.plan.report import PlanReport, Table
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.sim.wording import counted


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
    budgets = budgets_of(snapshot.of("poddisruptionbudgets"), list(placer.pods.values()))
    owners = owners_of({r: snapshot.of(r) for r in OWNER_RESOURCES.values()})
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
        drained = drain(placer.pods_on(name), budgets, owners, snapshot.now)
        if drained.blocked is not None:
            blocked = drained.blocked
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
        outcomes = placer.place([placer.replacement(p) for p in drained.move])
        failed = next((o for o in outcomes if not o.node), None)
        if failed is not None:
            placer.restore()
            kept.append(
                {
                    **row,
                    "reason": NO_PLACE_TO_MOVE_PODS,
                    "blockingPod": pod_key(drained.move[outcomes.index(failed)]),
                    "detail": failed.message,
                }
            )
            continue
        placer.commit()
        spend(budgets, drained.move)
        moves = [
            {"pod": pod_key(p), "to": o.node} for p, o in zip(drained.move, outcomes, strict=True)
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
        f"{before - after} of {counted(before, 'node')} can be removed with every pod placed "
        f"elsewhere (compaction ratio {100 * doc['compactionRatio']:.0f} %): "
        f"{counted(after, 'node')} left."
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
