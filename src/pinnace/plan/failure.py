"""`pinnace plan failure --node NAME | --zone ZONE | --random K --trials T`: what happens when
that capacity is lost, in a simulation (`pinnace.sim.Simulation`) of the whole cluster with
v1.32's timings: node lifecycle (NotReady after 50 s, the unreachable taint), taint eviction
(pods go when their 300 s toleration runs out), the eviction rate limits, the controllers making
replacements and kube-scheduler placing them, preempting where priorities say so.

The snapshot is loaded into the simulation as it is: a simulated node for each of its nodes
(their allocatable, labels and taints), Namespaces, PriorityClasses, LimitRanges and
RuntimeClasses; then, with the workload controllers held, the owners (Deployments,
ReplicaSets, DaemonSets, Jobs with their own selector), each before what it owns, and the pods
bound where they run, each already controlled by its owner as loaded (the reference the
controller would put on it adopting it: so none is adopted by a patch, and no controller makes
a pod of its own); then the controllers go on, and the PodDisruptionBudgets come. StatefulSets
are not loaded (their controller would take the real cluster's revision hashes on the pods for
an update): a StatefulSet's pods run as pods of their own and are not replaced when lost.

Once the cluster has settled, the nodes fail (their kubelets stop) and the simulation runs, every
POLL_SECONDS of simulated time checking whether everything has happened: every pod the lost
nodes held that has a controller and does not tolerate the unreachable taint for ever has been
evicted, and every pod is running or waits after kube-scheduler said it fits nowhere; or until
`cap` seconds after the failure. The answer: the pods left pending with their FailedScheduling
message, preemptions, the evictions by reason, the pods lost for good (no controller), the
PodDisruptionBudgets whose healthy pods fell below what they want (at the polls), and the time
from the failure until the last replacement was running, when everything was.

Several trials (`--random K --trials T`) start from one settled cluster: on POSIX systems each
runs in a fork of the process holding it, so the cluster is loaded and settled once.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType
from pinnace.controllers.controller_utils import controller_ref, owner_reference
from pinnace.controllers.daemonset_util import CONTROLLER_REVISION_HASH, current_hash
from pinnace.controllers.node_lifecycle import UNREACHABLE, ZONE_LABEL
from pinnace.controllers.taint_eviction import NO_EXECUTE, toleration_time
from pinnace.kubelet.config import NodeConfig
from pinnace.plan import report
from pinnace.plan.cluster import (
    CONDITION_TAINT_PREFIX,
    PlanError,
    Snapshot,
    is_finished,
    pools_of,
    quantity,
)
from pinnace.plan.fragments import shapes_of
from pinnace.plan.placement import Placer, pod_key
from pinnace.plan.report import PlanReport, Table
from pinnace.resources.lists import parse_resource_list, scheduler_value
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.scheduler.preemption import PREEMPTION_BY_SCHEDULER
from pinnace.sim import Simulation
from pinnace.sim.lifecycle import PodRecord
from pinnace.sim.scenario import ClusterSpec, FailNode, MetricsSpec, Scenario
from pinnace.sim.settle import until_settled
from pinnace.sim.wording import counted

POLL_SECONDS = 10.0
DEFAULT_CAP = 3600.0
"""Simulated seconds after the failure the simulation runs at most."""
NO_SAMPLES = 1e9
"""The observer's sampling interval: longer than any plan runs."""
SETTLE_CAP = 1800.0
"""Simulated seconds the loaded cluster gets to settle before the failure."""
RESERVABLE = (CPU, MEMORY, EPHEMERAL_STORAGE)
OWNER_ORDER = ("deployments", "replicasets", "daemonsets", "jobs")
"""Owners are created before what they own, the outer ones first."""
STATE = ("namespaces", "priorityclasses", "limitranges", "runtimeclasses")
PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
Loaded = Mapping[str, tuple[Kind, Object]]
"""The snapshot's uid of an owner -> its kind and the owner as loaded."""


@dataclass(frozen=True)
class Loss:
    """The nodes one trial takes away, and the snapshot's pods bound to them (in its order)."""

    nodes: tuple[str, ...]
    pods: tuple[Object, ...]


def failure(
    snapshot: Snapshot,
    *,
    nodes: Sequence[str] = (),
    zone: str = "",
    random_nodes: int = 0,
    trials: int = 1,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
    cap: float = DEFAULT_CAP,
) -> PlanReport:
    """Lose `nodes`, the nodes of `zone`, or `random_nodes` at random in each of `trials`; see
    the module's docstring."""
    losses = _losses(snapshot, nodes, zone, random_nodes, trials, seed)
    began = time.perf_counter()
    sim = Simulation(_scenario(snapshot, config, seed), seed=seed)
    try:
        sim.run_coroutine(_load(sim, snapshot))
        sim.run_coroutine(_settle(sim))
        setup = time.perf_counter() - began
        results = _run_trials(sim, snapshot, losses, cap)
    finally:
        sim.close()
    sections = results[0].pop("sections")
    body = {
        "trials": results,
        "summary": _summary(results),
        "cap": cap,
        "setupWallSeconds": round(setup, 3),
    }
    doc = report.document("failure", snapshot, {**body, **sections})
    return PlanReport(doc, _headline(doc), _tables(doc), [("failure", _figure)])


def _losses(
    snapshot: Snapshot,
    nodes: Sequence[str],
    zone: str,
    random_nodes: int,
    trials: int,
    seed: int,
) -> list[Loss]:
    names = sorted(n["metadata"]["name"] for n in snapshot.nodes)
    on_node: dict[str, list[int]] = {}  # node -> its pods' places in the snapshot
    for place, pod in enumerate(snapshot.pods):
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            on_node.setdefault(node, []).append(place)

    def loss(lost: Sequence[str]) -> Loss:
        places = sorted(place for node in set(lost) for place in on_node.get(node, ()))
        return Loss(tuple(lost), tuple(snapshot.pods[place] for place in places))

    if sum(bool(x) for x in (nodes, zone, random_nodes)) != 1:
        raise PlanError("say which capacity is lost: --node, --zone or --random")
    if nodes:
        unknown = [n for n in nodes if n not in names]
        if unknown:
            raise PlanError(f"no node {', '.join(unknown)} in {snapshot.source}")
        return [loss(nodes)]
    if zone:
        found = tuple(
            n["metadata"]["name"]
            for n in snapshot.nodes
            if (n["metadata"].get("labels") or {}).get(ZONE_LABEL) == zone
        )
        if not found:
            raise PlanError(f'no node in zone "{zone}" (label {ZONE_LABEL})')
        return [loss(sorted(found))]
    if not 0 < random_nodes <= len(names) or trials < 1:
        raise PlanError(f"--random takes 1 to {len(names)} nodes, --trials at least 1")
    rng = random.Random(seed)
    return [loss(sorted(rng.sample(names, random_nodes))) for _ in range(trials)]


# --- the simulated cluster -----------------------------------------------------------------------


def _scenario(snapshot: Snapshot, config: SchedulerConfiguration | None, seed: int) -> Scenario:
    configs = [_node_config(node, i) for i, node in enumerate(snapshot.nodes, start=1)]
    cluster = ClusterSpec(nodes=configs, scheduler_config=config or snapshot.scheduler_config)
    # Nothing here reads the observer's samples (each a pass over every pod): one at the end.
    metrics = MetricsSpec(interval=NO_SAMPLES)
    return Scenario(name="plan-failure", seed=seed, cluster=cluster, metrics=metrics)


def _node_config(node: Mapping[str, Any], index: int) -> NodeConfig:
    """A simulated node whose allocatable is the node's: its capacity, what it keeps back as
    kube-reserved, and no eviction threshold."""
    meta, spec, status = node["metadata"], node.get("spec") or {}, node.get("status") or {}
    allocatable = status.get("allocatable") or {}
    capacity = dict(status.get("capacity") or allocatable)
    reserved = {}
    for resource in RESERVABLE:
        if resource in allocatable and resource in capacity:
            held = _amount(resource, capacity[resource]) - _amount(resource, allocatable[resource])
            if held > 0:
                reserved[resource] = quantity(resource, held)
            elif held < 0:
                capacity[resource] = allocatable[resource]
    taints = tuple(
        t
        for t in spec.get("taints") or ()
        if not (t.get("key") or "").startswith(CONDITION_TAINT_PREFIX)
    )
    return NodeConfig(
        name=meta["name"],
        index=index,
        capacity=capacity,
        labels=dict(meta.get("labels") or {}),
        taints=taints,
        kube_reserved=reserved,
        eviction_hard={},
        images=tuple(status.get("images") or ()),
    )


def _amount(resource: str, text: Any) -> int:
    return scheduler_value(resource, parse_resource_list({resource: text}, "node")[resource])


async def _load(sim: Simulation, snapshot: Snapshot) -> None:
    client = sim.client
    for resource in STATE:
        await _create_all(client, resource, snapshot.of(resource))
    for node in snapshot.nodes:
        if (node.get("spec") or {}).get("unschedulable"):
            patch = {"spec": {"unschedulable": True}}
            await client.patch(NODES, "", node["metadata"]["name"], patch, PatchType.MERGE)
    workloads = sim.plane.workloads
    if workloads is not None:  # held while what they would act on is half loaded
        await workloads.stop()
    uids: dict[str, tuple[Kind, Object]] = {}  # the snapshot's uid -> the owner as loaded
    for resource in OWNER_ORDER:
        kind = _kind(resource)
        for obj in snapshot.of(resource):
            made = await _create(client, kind, _owner(obj, resource, uids))
            if made is not None:
                uids[obj["metadata"]["uid"]] = (kind, made)
    hashes = {ds["metadata"]["uid"]: current_hash(_fresh(ds)) for ds in snapshot.of("daemonsets")}
    for pod in snapshot.pods:
        await _create(client, PODS, _owned(pod, hashes, uids))
    if workloads is not None:
        await workloads.start()
    await _create_all(client, "poddisruptionbudgets", snapshot.of("poddisruptionbudgets"))


def _owned(pod: Object, hashes: Mapping[str, str], uids: Loaded) -> Object:
    """The pod as it runs, controlled by its owner as loaded (an orphan when that is not
    loaded); a DaemonSet's pod labelled with the revision hash Pinnace's controller gives the
    DaemonSet."""
    fresh = _with_owner(_fresh(pod), uids)
    ref = controller_ref(pod)
    if ref is not None and ref.get("kind") == "DaemonSet" and ref.get("uid") in hashes:
        labels = fresh["metadata"].setdefault("labels", {})
        labels[CONTROLLER_REVISION_HASH] = hashes[ref["uid"]]
    return fresh


def _owner(obj: Object, resource: str, uids: Loaded) -> Object:
    fresh = _with_owner(_fresh(obj), uids)
    if resource == "jobs":
        spec = fresh["spec"]
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        # The pods carry the old Job's uid: the new Job selects them by it.
        selected = {k: labels[k] for k in JOB_UID_LABELS if k in labels}
        if selected:
            spec["manualSelector"] = True
            spec["selector"] = {"matchLabels": selected}
    return fresh


def _with_owner(fresh: Object, uids: Loaded) -> Object:
    """`fresh` with, for owner references, the controller reference its controller would
    put on it adopting it, when that controller is loaded: none otherwise."""
    ref = controller_ref(fresh)
    fresh["metadata"].pop("ownerReferences", None)
    owner = uids.get((ref or {}).get("uid", ""))
    if owner is not None:
        fresh["metadata"]["ownerReferences"] = [owner_reference(owner[1], owner[0])]
    return fresh


def _fresh(obj: Object) -> Object:
    fresh = copy.deepcopy(obj)
    fresh.pop("status", None)
    meta = fresh["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    return fresh


async def _create_all(client: LocalClient, resource: str, objects: Sequence[Object]) -> None:
    kind = _kind(resource)
    for obj in objects:
        await _create(client, kind, _fresh(obj))


async def _create(client: LocalClient, kind: Kind, obj: Object) -> Object | None:
    """`obj` as created; None when one of its name exists already."""
    namespace = (obj["metadata"].get("namespace") or "default") if kind.namespaced else ""
    try:
        return await client.create(kind, namespace, obj)
    except StatusError as e:
        if e.code != 409:  # what exists (the system namespaces, classes) stays
            name = obj["metadata"].get("name", "")
            raise PlanError(f"loading {kind.kind} {name}: {e.message}") from None
        return None


def _kind(resource: str) -> Kind:
    group = {
        "priorityclasses": "scheduling.k8s.io",
        "runtimeclasses": "node.k8s.io",
        "poddisruptionbudgets": "policy",
        "replicasets": "apps",
        "daemonsets": "apps",
        "deployments": "apps",
        "jobs": "batch",
    }.get(resource, "")
    return catalog.kind(group, resource)


async def _settle(sim: Simulation) -> None:
    await until_settled(sim.clock, lambda: sim.event_log.workload_changes)


# --- trials --------------------------------------------------------------------------------------


def _run_trials(
    sim: Simulation, snapshot: Snapshot, losses: list[Loss], cap: float
) -> list[dict[str, Any]]:
    """Each trial's answer; only the first's with the cluster's `sections` at its end (the
    report shows those of the first trial)."""
    if len(losses) == 1 or not hasattr(os, "fork"):
        return [_trial(sim, snapshot, loss, cap, i == 0) for i, loss in enumerate(losses)]
    # The settled cluster is never collected in a child: frozen, its objects are not walked
    # by the children's collections, whose writes would copy every page of it.
    gc.collect()
    gc.freeze()
    try:
        return [_forked(sim, snapshot, loss, cap, i == 0) for i, loss in enumerate(losses)]
    finally:
        gc.unfreeze()  # the cluster is closed next: its cycles are the collector's again


def _forked(
    sim: Simulation, snapshot: Snapshot, loss: Loss, cap: float, sections: bool
) -> dict[str, Any]:
    """The trial in a child process holding a copy of the settled cluster."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, answer, and leave without running the parent's exit hooks
        os.close(read)
        status = 0
        try:
            answer = json.dumps(_trial(sim, snapshot, loss, cap, sections)).encode()
        except BaseException as e:  # the parent reports it
            answer, status = json.dumps({"error": f"{type(e).__name__}: {e}"}).encode(), 1
        with os.fdopen(write, "wb") as out:
            out.write(answer)
        os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as answer_in:
        answer = answer_in.read()
    os.waitpid(pid, 0)
    result: dict[str, Any] = json.loads(answer or b'{"error": "the trial process died"}')
    if "error" in result:
        raise PlanError(f"trial losing {', '.join(loss.nodes)}: {result['error']}")
    return result


def _trial(
    sim: Simulation, snapshot: Snapshot, loss: Loss, cap: float, sections: bool
) -> dict[str, Any]:
    began_wall = time.perf_counter()
    failed_at = sim.elapsed
    for node in loss.nodes:
        sim.run_coroutine(sim.actions.take(FailNode(node)))
    keys = _evictable(loss)
    watched = _records(sim, keys)
    deficits: dict[str, dict[str, Any]] = {}
    done = False
    while sim.elapsed - failed_at < cap:
        sim.advance(min(sim.elapsed + POLL_SECONDS, failed_at + cap))
        _note_budgets(sim, deficits)
        if _everything_happened(sim, keys, watched, set(loss.nodes)):
            done = True
            break
    since = failed_at  # the observer's times count from the simulation's start too
    pending = [
        {"pod": r.key, "workload": r.workload, "message": r.last_failed_scheduling}
        for r in sim.observer.pending.values()
        if not r.node
    ]
    # The records made since the failure are the last ones: the replacements.
    made = takewhile(lambda r: r.created >= since, reversed(sim.observer.pods.values()))
    replaced = [r.running for r in made if r.running is not None]
    lost = [pod_key(p) for p in loss.pods if controller_ref(p) is None]
    incidents = list(takewhile(lambda i: i.time >= since, reversed(sim.observer.incidents)))
    evictions = Counter(i.kind for i in incidents if not i.kind.startswith("Node"))
    answer = {
        "lostNodes": list(loss.nodes),
        "failedAtSeconds": round(failed_at, 3),
        "settled": done,
        "simulatedSeconds": round(sim.elapsed - failed_at, 3),
        "wallSeconds": round(time.perf_counter() - began_wall, 3),
        "rescheduledAfterSeconds": (
            round(max(replaced, default=since) - since, 3) if done and not pending else None
        ),
        "pending": pending,
        "preemptions": _preemptions(sim, since) if PREEMPTION_BY_SCHEDULER in evictions else [],
        "evictions": dict(sorted(evictions.items())),
        "lost": lost,
        "pdbViolations": sorted(deficits.values(), key=lambda d: d["pdb"]),
    }
    if sections:
        answer["sections"] = _sections(sim, snapshot)
    return answer


def _records(sim: Simulation, keys: set[str]) -> list[PodRecord]:
    """The observer's records of the pods of `keys` (found by their uids, not by a pass over
    every record: a trial's fork would copy every page holding one)."""
    found = []
    for key in sorted(keys):
        namespace, name = key.split("/", 1)
        try:
            pod = sim.run_coroutine(sim.client.get(PODS, namespace, name))
        except StatusError:
            continue
        record = sim.observer.pods.get(pod["metadata"]["uid"])
        if record is not None:
            found.append(record)
    return found


def _preemptions(sim: Simulation, since: float) -> list[str]:
    """The pods kube-scheduler preempted since then, in the order first seen."""
    return [
        r.key
        for r in sim.observer.pods.values()
        if r.evicted == PREEMPTION_BY_SCHEDULER and (r.evicted_at or 0) >= since
    ]


def _evictable(loss: Loss) -> set[str]:
    """The pods on the lost nodes that are evicted and replaced: with a controller other than
    a DaemonSet, not tolerating the unreachable taint for ever."""
    found = set()
    for pod in loss.pods:
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") == "DaemonSet":
            continue
        if ref.get("kind") == "StatefulSet" or _tolerates_for_ever(pod):
            continue
        found.add(pod_key(pod))
    return found


def _tolerates_for_ever(pod: Object) -> bool:
    """Whether the taint eviction controller leaves the pod on an unreachable node."""
    return toleration_time(pod, [(UNREACHABLE, "", NO_EXECUTE)]) is None


def _everything_happened(
    sim: Simulation, keys: set[str], watched: Sequence[PodRecord], lost: set[str]
) -> bool:
    """Whether every pod of `keys` (whose records at the failure are `watched`) has been
    evicted, and every pod runs or waits after kube-scheduler said it fits nowhere."""
    evicted = {r.key for r in watched if r.evicted or r.deleted is not None}
    if not evicted >= keys:
        return False
    for record in sim.observer.pending.values():
        if record.node in lost:
            continue
        if record.node or not record.failed_scheduling:
            return False  # starting, or not yet tried
    return True


def _note_budgets(sim: Simulation, deficits: dict[str, dict[str, Any]]) -> None:
    budgets = sim.run_coroutine(sim.client.list(PDBS, ""))["items"]
    for pdb in budgets:
        status = pdb.get("status") or {}
        healthy, desired = status.get("currentHealthy"), status.get("desiredHealthy")
        if healthy is None or desired is None or healthy >= desired:
            continue
        key = f"{pdb['metadata']['namespace']}/{pdb['metadata']['name']}"
        seen = deficits.setdefault(
            key, {"pdb": key, "desiredHealthy": desired, "lowestHealthy": healthy, "polls": 0}
        )
        seen["lowestHealthy"] = min(seen["lowestHealthy"], healthy)
        seen["polls"] += 1


def _sections(sim: Simulation, snapshot: Snapshot) -> dict[str, Any]:
    """`nodes` and `fragmentation` of the cluster at the end, the lost nodes left out."""
    lost = sim.plane.nodes.failed
    nodes = [
        n
        for n in sim.run_coroutine(sim.client.list(NODES, ""))["items"]
        if n["metadata"]["name"] not in lost
    ]
    pods = [
        p
        for p in sim.run_coroutine(sim.client.list(PODS, ""))["items"]
        if not is_finished(p) and p["spec"].get("nodeName") not in lost
    ]
    after = Snapshot(snapshot.source, nodes, pods, snapshot.objects, pools_of(nodes))
    return report.cluster_sections(Placer(after), shapes_of(pods))


# --- the answer ----------------------------------------------------------------------------------


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    times = sorted(
        r["rescheduledAfterSeconds"] for r in results if r["rescheduledAfterSeconds"] is not None
    )
    pending = [len(r["pending"]) for r in results]
    return {
        "trials": len(results),
        "trialsWithPendingPods": sum(1 for p in pending if p),
        "pendingPods": {"mean": round(sum(pending) / len(pending), 3), "max": max(pending)},
        "rescheduledAfterSeconds": {
            "count": len(times),
            "median": times[len(times) // 2] if times else None,
            "max": times[-1] if times else None,
        },
        "trialsWithPdbViolations": sum(1 for r in results if r["pdbViolations"]),
        "wallSecondsPerTrial": round(sum(r["wallSeconds"] for r in results) / len(results), 3),
    }


def _headline(doc: Mapping[str, Any]) -> list[str]:
    trials, summary = doc["trials"], doc["summary"]
    if len(trials) == 1:
        (t,) = trials
        when = (
            f"everything rescheduled {t['rescheduledAfterSeconds']:.0f} s after the failure"
            if t["rescheduledAfterSeconds"] is not None
            else f"{counted(len(t['pending']), 'pod')} left pending"
            if t["settled"]
            else f"not settled {doc['cap']:.0f} s after the failure"
        )
        return [
            f"Losing {', '.join(t['lostNodes'])}: {when}; "
            f"{counted(len(t['preemptions']), 'preemption')}, "
            f"{counted(len(t['pdbViolations']), 'PodDisruptionBudget')} below the minimum, "
            f"{counted(len(t['lost']), 'pod')} lost for good.",
            f"Simulated {t['simulatedSeconds']:.0f} s in {t['wallSeconds']:.1f} s "
            f"(cluster loaded and settled in {doc['setupWallSeconds']:.1f} s).",
        ]
    times = summary["rescheduledAfterSeconds"]
    return [
        f"{summary['trials']} trials: {summary['trialsWithPendingPods']} left pods pending "
        f"(at most {summary['pendingPods']['max']}), {summary['trialsWithPdbViolations']} broke a "
        f"PodDisruptionBudget; rescheduled after median {times['median']} s, max {times['max']} s.",
        f"{summary['wallSecondsPerTrial']:.1f} s a trial (cluster loaded and settled once in "
        f"{doc['setupWallSeconds']:.1f} s).",
    ]


def _tables(doc: Mapping[str, Any]) -> list[Table]:
    trials = Table(
        "Trials",
        ["LOST NODES", "RESCHEDULED AFTER", "PENDING", "PREEMPTIONS", "PDBS BROKEN", "LOST PODS"],
        [
            [
                ",".join(t["lostNodes"]),
                "-"
                if t["rescheduledAfterSeconds"] is None
                else f"{t['rescheduledAfterSeconds']:.0f}s",
                str(len(t["pending"])),
                str(len(t["preemptions"])),
                str(len(t["pdbViolations"])),
                str(len(t["lost"])),
            ]
            for t in doc["trials"]
        ],
    )
    first = doc["trials"][0]
    first_trial = " (first trial)" if len(doc["trials"]) > 1 else ""
    pending = Table(
        "Pods left pending" + first_trial,
        ["POD", "WORKLOAD", "REASON"],
        [[p["pod"], p["workload"], p["message"]] for p in first["pending"]],
    )
    budgets = Table(
        "PodDisruptionBudgets below their minimum",
        ["PDB", "DESIRED HEALTHY", "LOWEST HEALTHY"],
        [
            [b["pdb"], str(b["desiredHealthy"]), str(b["lowestHealthy"])]
            for b in first["pdbViolations"]
        ],
    )
    return [
        trials,
        pending,
        budgets,
        report.node_table(doc, "Nodes after" + first_trial),
        report.fragmentation_table(doc, first_trial),
    ]


def _figure(doc: Mapping[str, Any]) -> go.Figure:
    trials = doc["trials"]
    names = [",".join(t["lostNodes"]) for t in trials]
    figure = go.Figure(
        [
            go.Bar(x=names, y=[len(t["pending"]) for t in trials], name="pods left pending"),
            go.Bar(
                x=names,
                y=[t["rescheduledAfterSeconds"] for t in trials],
                name="seconds to reschedule",
                yaxis="y2",
            ),
        ]
    )
    figure.update_layout(
        title="Each trial: pods left pending, and seconds until everything was rescheduled",
        yaxis={"title": "pods"},
        yaxis2={"title": "seconds", "overlaying": "y", "side": "right"},
        barmode="group",
        template="plotly_white",
        height=420,
    )
    return figure
