"""`pinnace plan fit WORKLOADS…`: do these workloads fit beside what the cluster runs?

The manifests are made into pods by the controllers (`pinnace.plan.materialize`: a
Deployment's replicas, a Job's parallelism, a DaemonSet's pod per node, bare pods as they are),
then kube-scheduler places them over the snapshot (`pinnace.plan.placement`), together with the
pods the cluster already has pending, in the order its queue takes them: by priority, then
first come. A pod that fits nowhere gets kube-scheduler's FailedScheduling message ("0/3 nodes
are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption
victims found for incoming pod."); a pod of higher priority may preempt running ones, whose
controllers' replacements are placed in turn. The workloads fit when every new pod and every
replacement is placed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pinnace.api.objects import Object
from pinnace.plan import report
from pinnace.plan.cluster import Snapshot, merged
from pinnace.plan.fragments import shapes_of, workload
from pinnace.plan.materialize import materialize
from pinnace.plan.placement import Outcome, Placer, pod_key
from pinnace.plan.report import PlanReport, Table
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.sim.wording import counted


def fit(
    snapshot: Snapshot,
    manifests: Sequence[Object],
    *,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
) -> PlanReport:
    """Place the pods `manifests` make over `snapshot`; see the module's docstring."""
    made = materialize(manifests, nodes=snapshot.nodes, state=snapshot.objects, seed=seed)
    cluster = merged(snapshot, made.objects)
    placer = Placer(cluster, seed=seed, config=config)
    outcomes = placer.place(made.pods)
    pending = [
        placer.outcomes[pod_key(p)]
        for p in snapshot.pending_pods()
        if pod_key(p) in placer.outcomes
    ]
    replacements = [placer.outcomes[p.replacement] for p in placer.preemptions if p.replacement]
    body = _body(outcomes, pending, replacements, placer, made.skipped)
    shapes = shapes_of([*made.pods, *snapshot.pods])
    doc = report.document("fit", cluster, {**body, **report.cluster_sections(placer, shapes)})
    return PlanReport(doc, _headline(doc), _tables(doc), answered_no=not doc["fits"])


def _body(
    outcomes: list[Outcome],
    pending: list[Outcome],
    replacements: list[Outcome],
    placer: Placer,
    skipped: list[str],
) -> dict[str, Any]:
    placed = [o for o in outcomes if o.node]
    failed = [o for o in outcomes if not o.node]
    by_workload: dict[str, Counter[str]] = {}
    for o in outcomes:
        counts = by_workload.setdefault(workload(o.pod), Counter())
        counts["pods"] += 1
        counts["placed" if o.node else "unschedulable"] += 1
    return {
        "fits": not failed and all(o.node for o in replacements),
        "pods": {
            "new": len(outcomes),
            "placed": len(placed),
            "unschedulable": len(failed),
            "preempted": len(placer.preemptions),
        },
        "workloads": [
            {"workload": name, **{k: c[k] for k in ("pods", "placed", "unschedulable")}}
            for name, c in by_workload.items()
        ],
        "unschedulable": [_failure(o) for o in failed],
        "placements": [{"pod": o.key, "workload": workload(o.pod), "node": o.node} for o in placed],
        "preemptions": [
            {
                "victim": p.victim,
                "node": p.node,
                "preemptor": p.preemptor,
                "replacement": p.replacement,
                "replacementNode": placer.outcomes[p.replacement].node if p.replacement else "",
            }
            for p in placer.preemptions
        ],
        "clusterPending": [{"pod": o.key, "node": o.node, "message": o.message} for o in pending],
        "skipped": skipped,
    }


def _failure(o: Outcome) -> dict[str, Any]:
    return {
        "pod": o.key,
        "workload": workload(o.pod),
        "message": o.message,
        "nominatedNode": o.nominated,
    }


def _headline(doc: dict[str, Any]) -> list[str]:
    pods = doc["pods"]
    nodes = doc["cluster"]["nodes"]
    if doc["fits"]:
        every = "the" if pods["new"] == 1 else "all"
        placed = f"{counted(pods['new'], 'new pod')} placed on {counted(nodes, 'node')}"
        lines = [f"Fits: {every} {placed}."]
    else:
        lines = [
            f"Does not fit: {pods['unschedulable']} of {counted(pods['new'], 'new pod')} cannot be"
            f" placed ({pods['placed']} placed on {counted(nodes, 'node')})."
        ]
    if pods["preempted"]:
        lost = sum(1 for p in doc["preemptions"] if not p["replacementNode"])
        lines.append(
            f"{counted(pods['preempted'], 'running pod')} preempted, {lost} of them not placed"
            " again."
        )
    if doc["clusterPending"]:
        still = sum(1 for p in doc["clusterPending"] if not p["node"])
        lines.append(
            f"The cluster had {counted(len(doc['clusterPending']), 'pending pod')}; "
            f"{counted(still, 'stays', 'stay')} pending."
        )
    if doc["skipped"]:
        lines.append(f"Not workloads, left out: {', '.join(doc['skipped'])}.")
    return lines


def _tables(doc: dict[str, Any]) -> list[Table]:
    workloads = Table(
        "Workloads",
        ["WORKLOAD", "PODS", "PLACED", "UNSCHEDULABLE"],
        [
            [w["workload"], str(w["pods"]), str(w["placed"]), str(w["unschedulable"])]
            for w in doc["workloads"]
        ],
    )
    failed = Table(
        "Pods that do not fit",
        ["POD", "WORKLOAD", "REASON"],
        [[f["pod"], f["workload"], f["message"]] for f in doc["unschedulable"]],
    )
    new = Counter(p["node"] for p in doc["placements"])
    nodes = report.node_table(doc)
    nodes.head = [*nodes.head[:2], "NEW PODS", *nodes.head[2:]]
    nodes.rows = [[r[0], r[1], str(new.get(r[0], 0)), *r[2:]] for r in nodes.rows]
    preemptions = Table(
        "Preemptions",
        ["VICTIM", "NODE", "PREEMPTOR", "REPLACEMENT", "PLACED ON"],
        [
            [
                p["victim"],
                p["node"],
                p["preemptor"],
                p["replacement"] or "-",
                p["replacementNode"] or "-",
            ]
            for p in doc["preemptions"]
        ],
    )
    return [workloads, failed, preemptions, nodes, report.fragmentation_table(doc)]
