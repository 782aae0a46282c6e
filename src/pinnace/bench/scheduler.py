"""`pinnace bench scheduler`: the scheduler core's throughput on kube-scheduler's own benchmark
workloads (test/integration/scheduler_perf), scheduled in-process with every node scored.

Nodes and a workload's initial pods are added and scheduled, and the measured pods' objects
built, first (not timed); then every measured pod is handed to the scheduler and scheduled.
pods/s counts the measured pods, from the first handed over to the last bound; a pod's latency
is its scheduling cycle, from pop to bind.
Binding goes to an in-memory recorder, not the API.

A workload with churn creates one churn pod after every `churn_every` cycles, and the virtual
clock (the queue's backoffs) moves on by `churn_interval` seconds; the victims of a preemption
are deleted at once, as the API server does for pods with no grace period. Churn pods left
waiting when the measured pods are all bound are then scheduled untimed, and must all land;
a workload whose churn pods fit no node instead requires that none of them was ever bound.

A workload with volumes (SchedulingCSIPVs) gives each pod a PersistentVolume and a claim bound
to it, made with the pod (not timed), and each node a CSINode; the volume plugins read them as
their informers would hold them. Of scheduler_perf's volume workloads, SchedulingInTreePVs and
SchedulingMigratedInTreePVs are left out: their AWS EBS volumes count against node limits only
through the in-tree limits plugins v1.32 no longer has, or through CSI migration, which
Pinnace does not model.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.bench import Figure, Figures, per_second, percentile, render_table
from pinnace.clock import VirtualClock
from pinnace.scheduler import Profile, Scheduler
from pinnace.scheduler.adapter import ReadsVolumes
from pinnace.scheduler.plugins import DEFAULT_WEIGHTS, default_plugins
from pinnace.scheduler.plugins.default_preemption import DefaultPreemption, with_preemption
from pinnace.scheduler.plugins.volume_listers import CLAIMS, CSI_NODES, VOLUMES, VolumeListers
from pinnace.scheduler.preemption import Preemption


class BenchError(RuntimeError):
    pass


@dataclass(frozen=True)
class Workload:
    name: str
    nodes: int
    pods: int
    node: Callable[[int], dict[str, Any]]
    pod: Callable[[int], dict[str, Any]]
    init_pods_per_node: float = 0  # rounded up: a small cluster still gets its init pods
    init_pod: Callable[[int], dict[str, Any]] | None = None
    churn_pod: Callable[[int], dict[str, Any]] | None = None
    churn_every: int = 0
    churn_interval: float = 0.0
    churn_schedulable: bool = True
    volumes: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None
    """The PersistentVolume and pre-bound claim a pod's volume names, made before the pod
    (scheduler_perf's persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath)."""
    csi_node: Callable[[int], dict[str, Any]] | None = None
    """Node i's CSINode (csiNodeAllocatable)."""


def _node(i: int) -> dict[str, Any]:
    """scheduler_perf's node-default.yaml: 4 CPU, 32Gi, 110 pods."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"scheduler-perf-node-{i}"},
        "status": {"capacity": _NODE_RESOURCES, "allocatable": _NODE_RESOURCES},
    }


_NODE_RESOURCES = {"cpu": "4", "memory": "32Gi", "pods": "110"}


def _pod(i: int) -> dict[str, Any]:
    """scheduler_perf's pod-default.yaml: one pause container asking 100m / 500Mi."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i}", "namespace": "sched-test", "uid": f"uid-{i}"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                }
            ]
        },
    }


ZONE = "topology.kubernetes.io/zone"


def _zoned_node(*zones: str) -> Callable[[int], dict[str, Any]]:
    """node-default.yaml labelled by scheduler_perf's labelNodePrepareStrategy (here the
    zones are dealt round-robin)."""

    def make(i: int) -> dict[str, Any]:
        node = _node(i)
        node["metadata"]["labels"] = {ZONE: zones[i % len(zones)]}
        return node

    return make


def _pod_with(labels: Mapping[str, str], **spec: Any) -> Callable[[int], dict[str, Any]]:
    def make(i: int) -> dict[str, Any]:
        pod = _pod(i)
        pod["metadata"]["labels"] = dict(labels)
        pod["spec"].update(spec)
        return pod

    return make


# Inter-pod affinity workloads: scheduler_perf's pod-with-pod-affinity.yaml,
# pod-with-pod-anti-affinity.yaml and pod-with-preferred-pod-(anti-)affinity.yaml, whose terms
# select their own color in the sched-test and sched-setup namespaces. Nodes carry the label
# the topology key names, as kubelets (kubernetes.io/hostname) or the workload's
# labelNodePrepareStrategy (the zone) set it.
HOSTNAME = "kubernetes.io/hostname"


def _node_with_hostname(i: int) -> dict[str, Any]:
    node = _node(i)
    node["metadata"]["labels"] = {HOSTNAME: node["metadata"]["name"]}
    return node


def _pod_affinity_term(color: str, topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": ["sched-test", "sched-setup"],
    }


def _required_pod_affinity(kind: str, color: str, topology_key: str) -> Callable[[int], Any]:
    terms = [_pod_affinity_term(color, topology_key)]
    affinity = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms}}
    return _pod_with({"color": color}, affinity=affinity)


def _preferred_pod_affinity(kind: str, color: str) -> Callable[[int], Any]:
    terms = [{"weight": 1, "podAffinityTerm": _pod_affinity_term(color, HOSTNAME)}]
    affinity = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": terms}}
    return _pod_with({"color": color}, affinity=affinity)


def _spread(when: str) -> list[dict[str, Any]]:
    """pod-with-(preferred-)topology-spreading.yaml's constraint."""
    selector = {"matchLabels": {"color": "blue"}}
    return [
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when, "labelSelector": selector}
    ]


_NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}
                    ]
                }
            ]
        }
    }
}
_MOONS = ("moon-1", "moon-2", "moon-3")


MEASURED_PREFIX = "pod-"  # the measured pods' names (_pod); victims among them count once bound


def _pause_pod(name: str, cpu: str, priority: int | None = None) -> dict[str, Any]:
    pod = _pod(0)
    pod["metadata"].update(name=name, uid=f"uid-{name}")
    spec = pod["spec"]
    spec["terminationGracePeriodSeconds"] = 0  # as scheduler_perf's: a victim goes at once
    spec["containers"][0]["resources"] = {
        "limits": {"cpu": cpu, "memory": "500Mi"},
        "requests": {"cpu": cpu, "memory": "500Mi"},
    }
    if priority is not None:
        spec["priority"] = priority
    return pod


def _low_priority_pod(i: int) -> dict[str, Any]:
    """pod-low-priority.yaml: 900m / 500Mi, no priority (0)."""
    return _pause_pod(f"low-{i}", "900m")


def _high_priority_pod(i: int) -> dict[str, Any]:
    """pod-high-priority.yaml: 3000m / 500Mi at priority 10: preempts 3 of a node's 4
    low-priority pods."""
    return _pause_pod(f"high-{i}", "3000m", priority=10)


# scheduler_perf creates a preemptor every 200 ms of wall time; at its CI threshold (570 pods/s)
# that is one per 114 cycles, kept here whatever the speed: a faster scheduler meets as many.
_PREEMPTION_ASYNC = Workload(
    "PreemptionAsync",
    5000,
    5000,
    _node,
    _pod,
    init_pods_per_node=4,
    init_pod=_low_priority_pod,
    churn_pod=_high_priority_pod,
    churn_every=114,
    churn_interval=0.2,
)


def _large_cpu_pod(i: int) -> dict[str, Any]:
    """pod-high-priority-large-cpu.yaml: 9 CPU at priority 10, more than any node has, so
    preemption finds no candidate either."""
    return _pause_pod(f"large-cpu-{i}", "9", priority=10)


def _renamed(prefix: str, make: Callable[[int], dict[str, Any]]) -> Callable[[int], Any]:
    """`make`'s pods named `{prefix}-{i}`, apart from the measured pods."""

    def named(i: int) -> dict[str, Any]:
        pod = make(i)
        pod["metadata"].update(name=f"{prefix}-{i}", uid=f"uid-{prefix}-{i}")
        return pod

    return named


def _zoned_node_with_hostname(i: int) -> dict[str, Any]:
    node = _zoned_node("zone1")(i)
    node["metadata"]["labels"][HOSTNAME] = node["metadata"]["name"]
    return node


# MixedSchedulingBasePod (affinity/performance-config.yaml, 5000Nodes_5000Pods): 2000 init pods
# of each kind below (dealt round-robin here), then default pods measured.
_MIXED_INIT_KINDS = tuple(
    _renamed("init", kind)
    for kind in (
        _pod,
        _required_pod_affinity("podAffinity", "blue", ZONE),
        _required_pod_affinity("podAntiAffinity", "green", HOSTNAME),
        _preferred_pod_affinity("podAffinity", "red"),
        _preferred_pod_affinity("podAntiAffinity", "yellow"),
    )
)


def _mixed_init_pod(i: int) -> dict[str, Any]:
    return _MIXED_INIT_KINDS[i % len(_MIXED_INIT_KINDS)](i)


_MIXED_SCHEDULING_BASE_POD = Workload(
    "MixedSchedulingBasePod",
    5000,
    5000,
    _zoned_node_with_hostname,
    _pod,
    init_pods_per_node=len(_MIXED_INIT_KINDS) * 2000 / 5000,
    init_pod=_mixed_init_pod,
)

# Unschedulable (misc/performance-config.yaml, 5kNodes/100Init/10kPods): 100 default init pods,
# then a large-CPU pod every 200 ms of wall time, one per 118 cycles at the CI threshold
# (590 pods/s). Each fails, attempts preemption, and waits in the unschedulable pool while the
# measured pods bind.
_UNSCHEDULABLE = Workload(
    "Unschedulable",
    5000,
    10_000,
    _node,
    _pod,
    init_pods_per_node=100 / 5000,
    init_pod=_renamed("init", _pod),
    churn_pod=_large_cpu_pod,
    churn_every=118,
    churn_interval=0.2,
    churn_schedulable=False,
)


CSI_DRIVER = "ebs.csi.aws.com"
CSI_VOLUME_LIMIT = 39


def _csi_node(i: int) -> dict[str, Any]:
    """nodeAllocatableStrategy's csiNodeAllocatable: 39 volumes of ebs.csi.aws.com."""
    name = _node(i)["metadata"]["name"]
    driver = {"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": CSI_VOLUME_LIMIT}}
    return {"metadata": {"name": name}, "spec": {"drivers": [driver]}}


def _claim_name(pod: dict[str, Any]) -> str:
    return f"{pod['metadata']['name']}-pvc"


def _csi_volumes(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """pv-csi.yaml and pvc.yaml: a 1Gi ReadOnlyMany CSI volume, and its claim bound to it
    (`pv.kubernetes.io/bind-completed`, as scheduler_perf creates them: no PV controller)."""
    namespace, claim = pod["metadata"]["namespace"], _claim_name(pod)
    name = f"{namespace}-{pod['metadata']['name']}-pv"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "csi": {"driver": CSI_DRIVER, "volumeHandle": f"vol-{name}"},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": namespace, "name": claim},
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim,
            "namespace": namespace,
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": name,
        },
    }
    return volume, pvc


def _with_claim(make: Callable[[int], dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
    def made(i: int) -> dict[str, Any]:
        pod = make(i)
        volume = {"name": "vol", "persistentVolumeClaim": {"claimName": _claim_name(pod)}}
        pod["spec"]["volumes"] = [volume]
        return pod

    return made


# SchedulingCSIPVs (performance-config.yaml, 5000Nodes): nodes that attach 39 CSI volumes
# each, 5000 init pods and 1000 measured pods with a CSI volume each.
_CSI_PVS = Workload(
    "SchedulingCSIPVs",
    5000,
    1000,
    _node,
    _with_claim(_pod),
    init_pods_per_node=1,
    init_pod=_with_claim(_renamed("init", _pod)),
    volumes=_csi_volumes,
    csi_node=_csi_node,
)


WORKLOADS: Mapping[str, Workload] = {
    w.name: w
    for w in (
        Workload("SchedulingBasic", 5000, 10_000, _node, _pod),
        Workload(
            "SchedulingPodAntiAffinity",
            5000,
            2000,
            _node_with_hostname,
            _required_pod_affinity("podAntiAffinity", "green", HOSTNAME),
        ),
        Workload(
            "SchedulingPodAffinity",
            5000,
            5000,
            _zoned_node("zone1"),
            _required_pod_affinity("podAffinity", "blue", ZONE),
        ),
        Workload(
            "SchedulingPreferredPodAffinity",
            5000,
            5000,
            _node_with_hostname,
            _preferred_pod_affinity("podAffinity", "red"),
        ),
        Workload(
            "SchedulingPreferredPodAntiAffinity",
            5000,
            5000,
            _node_with_hostname,
            _preferred_pod_affinity("podAntiAffinity", "yellow"),
        ),
        Workload(
            "SchedulingNodeAffinity",
            5000,
            10_000,
            _zoned_node("zone1"),
            _pod_with({}, affinity=_NODE_AFFINITY),
        ),
        Workload(
            "TopologySpreading",
            5000,
            10_000,
            _zoned_node(*_MOONS),
            _pod_with({"color": "blue"}, topologySpreadConstraints=_spread("DoNotSchedule")),
        ),
        Workload(
            "PreferredTopologySpreading",
            5000,
            10_000,
            _zoned_node(*_MOONS),
            _pod_with({"color": "blue"}, topologySpreadConstraints=_spread("ScheduleAnyway")),
        ),
        _MIXED_SCHEDULING_BASE_POD,
        _PREEMPTION_ASYNC,
        _UNSCHEDULABLE,
        _CSI_PVS,
    )
}


def figures() -> tuple[Figure, ...]:
    return (
        Figure("nodes", "nodes"),
        Figure("pods", "pods"),
        Figure("pods_per_second", "pods/s"),
        Figure("p50_ms", "per-pod latency p50 (ms)"),
        Figure("p99_ms", "per-pod latency p99 (ms)"),
    )


THROUGH_API_FIGURES = (*figures(), Figure("cpu_ms_per_pod", "CPU per pod (ms)"))


def run(names: list[str], nodes: int | None, pods: int | None, seed: int = 0) -> dict[str, Figures]:
    return {name: _measure(WORKLOADS[name], nodes, pods, seed) for name in names}


def render(results: dict[str, Figures], as_json: bool, through_api: bool = False) -> str:
    if as_json:
        return "\n".join(
            json.dumps({"workload": name, **values}) for name, values in results.items()
        )
    what = "through the in-process API server" if through_api else "scheduler core in-process"
    shown = THROUGH_API_FIGURES if through_api else figures()
    return render_table(f"Pinnace scheduler benchmark ({what}, every node scored)", shown, results)


def _measure(workload: Workload, nodes: int | None, pods: int | None, seed: int) -> Figures:
    node_count = workload.nodes if nodes is None else nodes
    pod_count = workload.pods if pods is None else pods
    bindings: list[dict[str, Any]] = []
    decisions: list[Preemption] = []
    with VirtualClock() as clock:
        preemption = DefaultPreemption(preempt=decisions.append, seed=seed)
        scheduler = Scheduler(
            [
                Profile(
                    with_preemption(default_plugins(bindings.append), preemption), DEFAULT_WEIGHTS
                )
            ],
            clock,
            seed=seed,
            percentage_of_nodes_to_score=100,
        )
        for i in range(node_count):
            scheduler.add_node(workload.node(i))
        volumes = _volume_listers(scheduler, workload, node_count)
        if workload.init_pod is not None:
            init_count = math.ceil(workload.init_pods_per_node * node_count)
            for i in range(init_count):
                scheduler.add_pod(_with_volumes(workload, volumes, workload.init_pod(i)))
            scheduler.schedule_pending()
            if len(bindings) != init_count:
                raise BenchError(
                    f"{workload.name}: {len(bindings)} of {init_count} init pods were scheduled "
                    f"on {node_count} nodes"
                )
            bindings.clear()
        latencies = []
        measured = [  # the API's objects: not timed
            _with_volumes(workload, volumes, workload.pod(i)) for i in range(pod_count)
        ]
        start = time.perf_counter()
        for pod in measured:
            scheduler.add_pod(pod)
        bound: set[str] = set()
        for cycle in _timed_cycles(scheduler, workload, clock, decisions, bound, pod_count):
            latencies.append(cycle)
        seconds = time.perf_counter() - start
        churn_bound = len(bindings) - len(bound)
        churned = _drain_churn(scheduler, clock, decisions) if workload.churn_schedulable else 0
    if len(bound) != pod_count:
        raise BenchError(
            f"{workload.name}: {len(bound)} of {pod_count} pods were scheduled "
            f"on {node_count} nodes"
        )
    if churned:
        raise BenchError(f"{workload.name}: {churned} preemptor pods were never scheduled")
    if not workload.churn_schedulable and churn_bound:
        raise BenchError(f"{workload.name}: {churn_bound} pods that fit no node were bound")
    return {
        "nodes": node_count,
        "pods": pod_count,
        "pods_per_second": per_second(pod_count, seconds),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


def _volume_listers(scheduler: Scheduler, workload: Workload, node_count: int) -> VolumeListers:
    """What the volume plugins read, as informers would hold it: the nodes' CSINodes now, the
    pods' volumes and claims as the pods are made."""
    listers = VolumeListers()
    if workload.csi_node is not None:
        for i in range(node_count):
            listers.set(CSI_NODES, workload.csi_node(i))
    for profile in scheduler.profiles.values():
        for plugin in profile.plugins:
            if isinstance(plugin, ReadsVolumes):
                plugin.volume_listers = listers
    return listers


def _with_volumes(workload: Workload, listers: VolumeListers, pod: dict[str, Any]) -> Any:
    if workload.volumes is not None:
        volume, claim = workload.volumes(pod)
        listers.set(VOLUMES, volume)
        listers.set(CLAIMS, claim)
    return pod


def _timed_cycles(
    scheduler: Scheduler,
    workload: Workload,
    clock: VirtualClock,
    decisions: list[Preemption],
    bound: set[str],
    pod_count: int,
) -> Iterator[float]:
    """The cycles until the measured pods are all bound (or none can be), churn pods' cycles
    included, each timed; `bound` collects the measured pods bound."""
    cycles = 0
    while True:
        cycles += 1
        if workload.churn_pod is not None and cycles % workload.churn_every == 0:
            scheduler.add_pod(workload.churn_pod(cycles // workload.churn_every))
            clock.advance(workload.churn_interval)
        start = time.perf_counter()
        result = scheduler.schedule_one()
        if result is None:
            return
        yield time.perf_counter() - start
        if result.node_name and result.pod.name.startswith(MEASURED_PREFIX):
            bound.add(result.pod.name)
            if len(bound) == pod_count:
                return
        _delete_victims(scheduler, decisions)


def _delete_victims(scheduler: Scheduler, decisions: list[Preemption]) -> None:
    for decision in decisions:
        for victim in decision.victims:
            scheduler.delete_pod(victim.pod)
    decisions.clear()


def _drain_churn(scheduler: Scheduler, clock: VirtualClock, decisions: list[Preemption]) -> int:
    """Schedule the churn pods still waiting (backing off after their preemption); how many
    never land."""
    for _ in range(100):
        pending = scheduler.queue.pending()
        if not pending["backoff"] and not pending["active"]:
            break
        clock.advance(1)
        scheduler.schedule_pending()
        _delete_victims(scheduler, decisions)
    return sum(len(keys) for keys in scheduler.queue.pending().values())
