"""`pinnace plan deschedule --policy policy.yaml`: the descheduler's evictions, and where each
evicted pod's replacement would land, before touching anything.

The cluster's pending pods are placed first. Then one cycle of the descheduler
(`pinnace.descheduler`, the DeschedulerPolicy's profiles and DefaultEvictor) runs in dry-run over
the snapshot and lists its evictions, as `pinnace deschedule --dry-run` would. What follows is
what the cluster would do: each evicted pod that has a controller gets a replacement, which
kube-scheduler places while the evicted pods are still terminating (their room is not free yet,
as kube-scheduler's cache counts a terminating pod until it is gone); a replacement that fits
nowhere then is tried again once the evicted pods are gone. The answer says for each eviction
where the replacement lands, whether that is the very node the pod was evicted from (the
descheduler then achieved nothing for it), or that it stays pending, with kube-scheduler's
message. An evicted pod without a controller is simply lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.apiserver.server import APIServer
from pinnace.client import LocalClient
from pinnace.controllers.controller_utils import controller_ref
from pinnace.descheduler.args import PolicyError
from pinnace.descheduler.policy import DeschedulerPolicy
from pinnace.descheduler.runner import CycleResult, Descheduler
from pinnace.descheduler.snapshot import Snapshot as DeschedulerSnapshot
from pinnace.plan import report
from pinnace.plan.cluster import PlanError, Snapshot, is_ready
from pinnace.plan.fragments import shapes_of, workload
from pinnace.plan.placement import Placer
from pinnace.plan.report import PlanReport, Table
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.sim.wording import counted
from pinnace.store import MemoryStore


def deschedule(
    snapshot: Snapshot,
    policy: DeschedulerPolicy,
    *,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
) -> PlanReport:
    """The descheduler's evictions and where their replacements land; see the module's
    docstring."""
    placer = Placer(snapshot, seed=seed, config=config)
    placer.run()
    cycle = _cycle(placer, snapshot, policy)
    evicted = [placer.pods[f"{e.namespace}/{e.name}"] for e in cycle.evictions]
    replacements = {}
    for pod in evicted:
        if controller_ref(pod) is not None:
            replacements[_key(pod)] = placer.replacement(pod)
    placer.place(replacements.values())
    for pod in evicted:  # their grace period is over: their room is free
        placer.delete_pod(pod)
    placer.run()
    rows = []
    for eviction, pod in zip(cycle.evictions, evicted, strict=True):
        new = replacements.get(_key(pod))
        outcome = placer.outcomes.get(_key(new)) if new is not None else None
        lands = outcome.node if outcome is not None else ""
        rows.append(
            {
                "pod": _key(pod),
                "workload": workload(pod),
                "node": eviction.node,
                "strategy": eviction.strategy,
                "reason": eviction.reason,
                "replacement": _key(new) if new is not None else "",
                "landsOn": lands,
                "sameNode": bool(lands) and lands == eviction.node,
                "message": outcome.message if outcome is not None and not lands else "",
            }
        )
    body = {
        "evictions": rows,
        "summary": {
            "evicted": len(rows),
            "replaced": sum(1 for r in rows if r["replacement"]),
            "landElsewhere": sum(1 for r in rows if r["landsOn"] and not r["sameNode"]),
            "backOnSameNode": sum(1 for r in rows if r["sameNode"]),
            "pending": sum(1 for r in rows if r["replacement"] and not r["landsOn"]),
            "lost": sum(1 for r in rows if not r["replacement"]),
        },
        "skipped": cycle.skipped,
        "heldBack": dict(sorted(cycle.held_back.items())),
    }
    sections = report.cluster_sections(placer, shapes_of(placer.pods.values()))
    doc = report.document("deschedule", snapshot, {**body, **sections})
    return PlanReport(doc, _headline(doc), _tables(doc))


def _cycle(placer: Placer, snapshot: Snapshot, policy: DeschedulerPolicy) -> CycleResult:
    """One dry-run cycle over the cluster as the placer holds it (the descheduler lists the
    Ready nodes its node selector picks, and every pod)."""
    nodes = [n for n in placer.nodes.values() if is_ready(n)]
    if policy.node_selector is not None:
        nodes = [
            n for n in nodes if policy.node_selector.matches(n["metadata"].get("labels") or {})
        ]
    classes = {
        c["metadata"]["name"]: int(c.get("value") or 0) for c in snapshot.of("priorityclasses")
    }
    budgets = snapshot.of("poddisruptionbudgets")
    seen = DeschedulerSnapshot(snapshot.now, nodes, list(placer.pods.values()), classes, budgets)
    # Nothing is written in a dry run: the client is of an empty API server of its own.
    client = LocalClient(APIServer(MemoryStore(), placer.clock))
    try:
        return placer.clock.run(Descheduler(client, policy, dry_run=True).run_cycle(seen))
    except PolicyError as e:
        raise PlanError(f"policy: {e}") from None


def _key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"


def _headline(doc: Mapping[str, Any]) -> list[str]:
    s = doc["summary"]
    if doc["skipped"]:
        return [f"The descheduler would evict nothing: {doc['skipped']}"]
    lines = [
        f"The descheduler would evict {counted(s['evicted'], 'pod')}: "
        f"{counted(s['landElsewhere'], 'replacement lands', 'replacements land')} on another "
        f"node, {s['backOnSameNode']} back on the node they left, "
        f"{counted(s['pending'], 'stays', 'stay')} pending, "
        f"{counted(s['lost'], 'pod has', 'pods have')} no controller and "
        f"{'is' if s['lost'] == 1 else 'are'} lost."
    ]
    if doc["heldBack"]:
        held = ", ".join(f"{n} ({why})" for why, n in doc["heldBack"].items())
        lines.append(f"Held back by the evictor: {held}.")
    return lines


def _tables(doc: Mapping[str, Any]) -> list[Table]:
    evictions = Table(
        "Evictions and where the replacements land",
        ["POD", "NODE", "STRATEGY", "LANDS ON", "REASON"],
        [
            [
                r["pod"],
                r["node"],
                r["strategy"],
                (r["landsOn"] + " (same node)" if r["sameNode"] else r["landsOn"])
                or ("pending" if r["replacement"] else "lost (no controller)"),
                r["message"] or r["reason"],
            ]
            for r in doc["evictions"]
        ],
    )
    return [evictions, report.node_table(doc), report.fragmentation_table(doc)]
