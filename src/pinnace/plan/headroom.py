"""`pinnace plan headroom [--shape cpu=500m,memory=1Gi …]`: how many more copies of each pod
shape fit, each shape on its own, over the cluster and per pool (cluster-capacity's question).

A shape is a pod: one of each workload of the cluster (its first pod, with everything that
steers it: node selector, affinity, tolerations, priority), or one asking for the requests a
`--shape` gives, made through the API server's admission (LimitRange defaults, priority). The
cluster's pending pods are placed first, as the scheduler would place them before new pods.
Copies of a shape are placed as kube-scheduler places them, one after another, until one does
not fit; the answer is how many did, and the last copy's FailedScheduling message says why the
next does not.

Placing copies one by one costs a scheduling cycle each, so when nothing but resources changes
as copies land the count is computed instead, with the very same filters: the shape's
PreFilter and Filter verdicts are taken once (a node they reject holds none), and a node they
accept holds, by NodeResourcesFit's arithmetic, as many copies as its free pod slots and free
amount of each requested resource allow (free // request). That holds exactly when every Filter
plugin the shape meets decides on the node alone or the shape's own requests: NodeUnschedulable,
NodeName, TaintToleration, NodeAffinity, NodeResourcesFit; NodePorts for a pod without host
ports; PodTopologySpread when it skips the pod (no DoNotSchedule constraint); InterPodAffinity
for a pod without required (anti-)affinity terms of its own (other pods' anti-affinity against
it does not change as copies land). Otherwise, and with a configured plugin of unknown kind,
copies are placed one by one (up to `limit`). Where copies land does not change how many fit
when the count is computed, so the scores need not run; one by one, they do.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go  # type: ignore[import-untyped]

from pinnace.api.objects import Object
from pinnace.plan import report
from pinnace.plan.cluster import PlanError, Snapshot, pool_of, quantity
from pinnace.plan.fragments import Shape, shapes_of, workload
from pinnace.plan.materialize import materialize
from pinnace.plan.placement import Placer, unbound
from pinnace.plan.report import PlanReport, Table
from pinnace.resources.lists import parse_resource_list
from pinnace.resources.names import PODS
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.scheduler.framework import CycleState
from pinnace.scheduler.nodetable import PODS_COLUMN
from pinnace.scheduler.plugins.node_resources_fit import NodeResourcesFit
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.schedule_one import Diagnosis, fit_error_message
from pinnace.sim.wording import counted

DEFAULT_LIMIT = 10_000
"""Copies of a shape placed one by one at most."""
ARITHMETIC = "arithmetic"
ONE_BY_ONE = "one by one"
STATIC_FILTERS = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit"}
)
SHAPE_NAMESPACE = "default"


@dataclass(frozen=True)
class Count:
    per_node: np.ndarray
    """Copies per node row of the scheduler's table."""
    message: str
    """Why one more does not fit."""
    method: str
    limited: bool = False


def parse_shape(text: str) -> dict[str, str]:
    """`cpu=500m,memory=1Gi` as requests; PlanError for a malformed one."""
    requests: dict[str, str] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise PlanError(f'shape "{text}": each item must be resource=quantity')
        requests[name.strip()] = value.strip()
    try:
        parse_resource_list(requests, "shape")
    except ValueError as e:
        raise PlanError(f'shape "{text}": {e}') from None
    return requests


def shape_pod(requests: Mapping[str, str], index: int) -> Object:
    """A bare pod asking for `requests`, named `shape-<index>`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"shape-{index}", "namespace": SHAPE_NAMESPACE},
        "spec": {
            "containers": [
                {
                    "name": "shape",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": dict(requests)},
                }
            ]
        },
    }


def headroom(
    snapshot: Snapshot,
    shapes: Sequence[Mapping[str, str]] = (),
    *,
    seed: int = 0,
    config: SchedulerConfiguration | None = None,
    limit: int = DEFAULT_LIMIT,
) -> PlanReport:
    """How many more copies of each shape fit (`shapes` as requests; the workloads' own shapes
    when empty); see the module's docstring."""
    placer = Placer(snapshot, seed=seed, config=config, preemption=False)
    placer.run()
    if shapes:
        made = materialize(
            [shape_pod(s, i) for i, s in enumerate(shapes, start=1)],
            nodes=(),
            state=snapshot.objects,
            seed=seed,
        )
        pods = [(_shape_name(s), p) for s, p in zip(shapes, made.pods, strict=True)]
    else:
        pods = _workload_pods(snapshot)
    pools = [pool_of(n) for n in placer.core.table.nodes]
    rows = []
    for name, pod in pods:
        count = count_copies(placer, pod, limit)
        rows.append(_row(name, pod, count, pools))
    frag_shapes = shapes_of(snapshot.pods) + [Shape(_requests(p), [n]) for n, p in pods if shapes]
    doc = report.document(
        "headroom",
        snapshot,
        {"shapes": rows, **report.cluster_sections(placer, frag_shapes)},
    )
    return PlanReport(doc, _headline(doc), _tables(doc), [("headroom", _figure)])


def _shape_name(requests: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in requests.items())


def _requests(pod: Object) -> dict[str, int]:
    return {**PodInfo.from_pod(pod).requests, PODS: 1}


def _workload_pods(snapshot: Snapshot) -> list[tuple[str, Object]]:
    """One pod of each workload (DaemonSets aside: one per node, none more to place)."""
    first: dict[str, Object] = {}
    for pod in sorted(snapshot.pods, key=lambda p: p["metadata"]["name"]):
        name = workload(pod)
        if not name.startswith("DaemonSet ") and name not in first:
            first[name] = pod
    return sorted(first.items())


def count_copies(placer: Placer, pod: Object, limit: int, *, one_by_one: bool = False) -> Count:
    """How many copies of `pod` fit on the placer's cluster, which is left as it was; computed
    when that gives the same answer (see the module's docstring), unless `one_by_one`."""
    computed = None if one_by_one else computed_copies(placer, pod)
    if computed is not None:
        return computed
    template = unbound(pod)
    template["metadata"].pop("uid", None)
    return _one_by_one(placer, template, limit)


def computed_copies(placer: Placer, pod: Object) -> Count | None:
    """How many copies of `pod` fit, computed; None when only placing them one by one tells."""
    template = unbound(pod)
    template["metadata"].pop("uid", None)
    info = PodInfo.from_pod(_copy(template, 0))
    profile = placer.core.profiles.get(info.scheduler_name)
    if profile is None:
        raise PlanError(f'no scheduler profile serves schedulerName "{info.scheduler_name}"')
    state = CycleState()
    table = placer.core.table
    status = profile.run_pre_filter(state, info, table)
    if not status.is_success():
        message = fit_error_message(len(table), Diagnosis(pre_filter_msg=status.message))
        return Count(np.zeros(len(table), np.int64), message, ARITHMETIC)
    if _static(profile, state, info):
        return _arithmetic(profile, state, info, placer)
    return None


def _static(profile: Profile, state: CycleState, pod: PodInfo) -> bool:
    spec = pod.pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    required = any(
        (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        for kind in ("podAffinity", "podAntiAffinity")
    )
    for plugin in profile.filter:
        name = plugin.name
        if name in STATIC_FILTERS or name in state.skip_filter_plugins:
            continue
        if name == "NodePorts" and not pod.host_ports:
            continue
        if name == "InterPodAffinity" and not required:
            continue
        return False
    return True


def _arithmetic(profile: Profile, state: CycleState, pod: PodInfo, placer: Placer) -> Count:
    table = placer.core.table
    feasible, trace = profile.run_filter(state, pod, table)
    fit = next((p for p in profile.filter if isinstance(p, NodeResourcesFit)), None)
    n = len(table)
    if fit is None:
        raise PlanError("NodeResourcesFit is disabled: nothing bounds the headroom")
    checked = fit.checked(state)
    allocatable, requested = table.allocatable, table.requested
    room = allocatable[:, PODS_COLUMN] - requested[:, PODS_COLUMN]
    for _, column, value in checked:
        room = np.minimum(room, (allocatable[:, column] - requested[:, column]) // value)
    per_node = np.where(feasible, np.maximum(room, 0), 0).astype(np.int64)
    after = requested.copy()
    after[:, PODS_COLUMN] += per_node
    for _, column, value in checked:
        after[:, column] += per_node * value
    rows = list(range(n))
    statuses = profile.node_statuses(state, pod, table, trace, rows)
    accepted = np.flatnonzero(feasible)
    if len(accepted):
        verdicts = fit.node_statuses(state, pod, table, accepted, requested=after[accepted])
        named = verdicts.with_plugin(fit.name).statuses()
        for i, status in zip(accepted.tolist(), named, strict=True):
            statuses[i] = status
    diagnosis = Diagnosis(node_statuses=dict(zip(table.names, statuses, strict=True)))
    return Count(per_node, _message(n, diagnosis), ARITHMETIC)


def _message(n: int, diagnosis: Diagnosis) -> str:
    return fit_error_message(n, diagnosis) if n else "no nodes available to schedule pods"


def _one_by_one(placer: Placer, template: Object, limit: int) -> Count:
    table = placer.core.table
    placer.begin()
    landed: dict[str, int] = {}
    message = ""
    try:
        for i in range(1, limit + 1):
            (outcome,) = placer.place([_copy(template, i)])
            if not outcome.node:
                message = outcome.message
                break
            landed[outcome.node] = landed.get(outcome.node, 0) + 1
        per_node = np.array([landed.get(name, 0) for name in table.names], np.int64)
    finally:
        placer.restore()
    return Count(per_node, message, ONE_BY_ONE, limited=not message)


def _copy(template: Object, i: int) -> Object:
    pod = copy.deepcopy(template)
    meta = pod["metadata"]
    base = meta.get("generateName") or f"{meta['name']}-"
    meta["name"] = f"{base}headroom-{i}"
    return pod


def _row(name: str, pod: Object, count: Count, pools: list[str]) -> dict[str, Any]:
    requests = PodInfo.from_pod(pod).requests
    by_pool: dict[str, int] = {}
    for pool, copies in zip(pools, count.per_node.tolist(), strict=True):
        if pool:  # a node without a pool label counts in `copies` only
            by_pool[pool] = by_pool.get(pool, 0) + copies
    return {
        "shape": name,
        "requests": {r: quantity(r, v) for r, v in requests.items()},
        "copies": int(count.per_node.sum()),
        "byPool": dict(sorted(by_pool.items())),
        "method": count.method,
        "limited": count.limited,
        "stoppedBy": count.message,
    }


def _headline(doc: Mapping[str, Any]) -> list[str]:
    cluster = doc["cluster"]
    lines = [
        f"How many more copies of each shape fit, each shape on its own, on "
        f"{counted(cluster['nodes'], 'node')} running {counted(cluster['pods'], 'pod')}."
    ]
    if not doc["shapes"]:
        lines.append(
            "No shape to count: the cluster runs no workload but DaemonSets; give --shape."
        )
    if any(s["limited"] for s in doc["shapes"]):
        lines.append("A count marked + stopped at the limit of copies placed one by one.")
    return lines


def _tables(doc: Mapping[str, Any]) -> list[Table]:
    pools = sorted({p for s in doc["shapes"] for p in s["byPool"]})
    rows = []
    for s in doc["shapes"]:
        plus = "+" if s["limited"] else ""
        requests = ",".join(f"{k}={v}" for k, v in s["requests"].items())
        rows.append(
            [
                s["shape"],
                requests,
                f"{s['copies']}{plus}",
                *(str(s["byPool"].get(p, 0)) for p in pools),
                s["stoppedBy"],
            ]
        )
    head = ["SHAPE", "REQUESTS", "COPIES", *(f"POOL {p}" for p in pools), "NEXT ONE"]
    return [
        Table("Headroom", head, rows),
        report.fragmentation_table(doc),
        report.node_table(doc, "Nodes"),
    ]


def _figure(doc: Mapping[str, Any]) -> go.Figure:
    figure = go.Figure()
    pools = sorted({p for s in doc["shapes"] for p in s["byPool"]})
    shapes = [s["shape"] for s in doc["shapes"]]
    for pool in pools:
        figure.add_trace(
            go.Bar(x=shapes, y=[s["byPool"].get(pool, 0) for s in doc["shapes"]], name=pool)
        )
    unpooled = [s["copies"] - sum(s["byPool"].values()) for s in doc["shapes"]]
    if any(unpooled):
        figure.add_trace(go.Bar(x=shapes, y=unpooled, name="no pool"))
    figure.update_layout(
        title="More copies that fit, per shape and pool",
        yaxis_title="copies",
        barmode="stack",
        template="plotly_white",
        height=420,
    )
    return figure
