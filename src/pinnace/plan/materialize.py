"""Manifests made into the pods a cluster would run, by kube-controller-manager's own controllers.

`materialize` starts a control plane on a virtual clock with the controllers and no scheduler
and no kubelets, holding the snapshot's Namespaces, PriorityClasses, LimitRanges,
RuntimeClasses and Nodes (as the API serves them, so the DaemonSet controller sees the nodes, but
without the label that would have simulated kubelets run them, and with the node lifecycle
controller making no periodic passes over them: no grace period runs out where nothing runs);
applies the manifests as `kubectl apply --server-side` does; waits until the controllers have
settled; and lists what they made. A Deployment's pods come through its ReplicaSet, a Job's as
its parallelism says, a DaemonSet's one per node it should run on (pinned to the node by node
affinity, as the DaemonSet controller pins them), and every pod has been through the API
server's defaulting and admission (its priority, default tolerations, LimitRange defaults,
RuntimeClass overhead). Nothing is scheduled: the pods come out pending.

Nothing runs here, so the StatefulSet controller, which makes an OrderedReady StatefulSet's pods
one at a time as each before turns Ready, would make only the first: the rest are made here, as
the controller makes them (`pinnace.controllers.statefulset_util`: `<name>-<ordinal>`, the
identity labels and the current revision's hash), which it then leaves be.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import LocalClient
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.controllers.history import (
    CONTROLLER_REVISION_HASH,
    get_patch,
    hash_controller_revision,
    revision_name,
)
from pinnace.controllers.node_lifecycle import NodeLifecycleConfig
from pinnace.controllers.statefulset_util import (
    STATEFUL_SETS,
    end_ordinal,
    new_pod,
    start_ordinal,
)
from pinnace.kubelet.config import SIMULATED_LABEL
from pinnace.plan.cluster import PlanError, is_finished
from pinnace.sim.actions import ActionError, Actions
from pinnace.sim.eventlog import EventLog
from pinnace.sim.settle import until_settled
from pinnace.store import MemoryStore
from pinnace.store.codec import Codec

FIELD_MANAGER = "pinnace-plan"
PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
NODES = catalog.kind("", "nodes")
STATE = (
    ("namespaces", NAMESPACES),
    ("priorityclasses", catalog.kind("scheduling.k8s.io", "priorityclasses")),
    ("limitranges", catalog.kind("", "limitranges")),
    ("runtimeclasses", catalog.kind("node.k8s.io", "runtimeclasses")),
)
"""What the snapshot gives the control plane before the manifests: what admission reads."""
LISTED = (
    ("deployments", catalog.kind("apps", "deployments")),
    ("replicasets", catalog.kind("apps", "replicasets")),
    ("daemonsets", catalog.kind("apps", "daemonsets")),
    ("statefulsets", STATEFUL_SETS),
    ("jobs", catalog.kind("batch", "jobs")),
    ("poddisruptionbudgets", catalog.kind("policy", "poddisruptionbudgets")),
    ("services", catalog.kind("", "services")),
    *STATE,
)
"""What is read back after the controllers have settled."""
NO_NODE_FAILURE = 10**9
"""The nodes here have no kubelet: the node lifecycle controller must not take them for lost,
nor look at them every few seconds (a pass over thousands of nodes costs a good part of a second,
and with no grace period ever running out it could only see what the node watch shows it
anyway: the taints follow the nodes' conditions on every change of a node all the same)."""
SETTLE_CAP = 3600.0
"""Simulated seconds the controllers get to settle."""


@dataclass
class Materialized:
    pods: list[Object]
    """Every pod the manifests made (pending), in the order they were created."""
    objects: dict[str, list[Object]] = field(default_factory=dict)
    """What the manifests made besides, by resource name (as Snapshot.objects)."""
    skipped: list[str] = field(default_factory=list)
    """Manifests of kinds that make no pods and are not kept (a Service...), as `Kind name`."""


def materialize(
    manifests: Sequence[Object],
    *,
    nodes: Sequence[Object] = (),
    state: dict[str, list[Object]] | None = None,
    seed: int = 0,
) -> Materialized:
    """The pods and objects `manifests` make, in a cluster holding `nodes` and `state` (by
    resource name: namespaces, priorityclasses, limitranges, runtimeclasses)."""
    loop = VirtualEventLoop()
    try:
        return loop.run_until_complete(_materialize(loop, manifests, nodes, state or {}, seed))
    finally:
        loop.close()
        asyncio.set_event_loop(None)


async def _materialize(
    loop: VirtualEventLoop,
    manifests: Sequence[Object],
    nodes: Sequence[Object],
    state: dict[str, list[Object]],
    seed: int,
) -> Materialized:
    clock = Clock(loop)
    store = MemoryStore(codec=Codec(deflate=False))
    options = ClusterOptions(
        scheduler=False,
        node_lifecycle=NodeLifecycleConfig(
            node_monitor_period=NO_NODE_FAILURE,
            node_monitor_grace_period=NO_NODE_FAILURE,
            node_startup_grace_period=NO_NODE_FAILURE,
        ),
        seed=seed,
    )
    plane = ControlPlane(store, clock, options)
    log = EventLog(store, clock)
    client = LocalClient(plane.server, field_manager=FIELD_MANAGER)
    await plane.start()
    try:
        for resource, kind in STATE:
            await _create_all(client, kind, state.get(resource, ()))
        await _create_all(client, NODES, [_unattended(n) for n in nodes])
        served, skipped = _sort(manifests)
        await _create_all(client, NAMESPACES, _missing_namespaces(manifests, state))
        try:
            await Actions(plane, client, {}).apply(served)
        except (ActionError, StatusError) as e:
            raise PlanError(_message(e)) from None
        for stateful_set in (await client.list(STATEFUL_SETS, ""))["items"]:
            for pod in _stateful_set_pods(stateful_set):
                await _create(client, PODS, pod)
        async with asyncio.timeout(SETTLE_CAP):
            await until_settled(clock, lambda: log.workload_changes)
        pods = [p for p in (await client.list(PODS, ""))["items"] if not is_finished(p)]
        pods.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))
        objects = {resource: (await client.list(kind, ""))["items"] for resource, kind in LISTED}
        for budget in objects["poddisruptionbudgets"]:
            budget.pop("status", None)  # counted where nothing runs: of no use to a plan
        return Materialized(pods, objects, skipped)
    finally:
        log.close()
        await plane.stop()


def _sort(manifests: Iterable[Object]) -> tuple[list[Object], list[str]]:
    """(manifests of kinds Pinnace serves, `Kind name` of the rest)."""
    served, skipped = [], []
    for obj in manifests:
        api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
        if catalog.by_kind(api_version, kind) is not None:
            served.append(obj)
        else:
            skipped.append(f"{kind} {(obj.get('metadata') or {}).get('name', '')}")
    return served, skipped


def _missing_namespaces(
    manifests: Iterable[Object], state: dict[str, list[Object]]
) -> list[Object]:
    """The namespaces the manifests use that neither the cluster nor the manifests create."""
    known = {ns["metadata"]["name"] for ns in state.get("namespaces", ())}
    known |= {
        (m.get("metadata") or {}).get("name", "") for m in manifests if m.get("kind") == "Namespace"
    }
    wanted = {
        (m.get("metadata") or {}).get("namespace") or "default"
        for m in manifests
        if m.get("kind") not in ("Namespace", "PriorityClass", "RuntimeClass", "Node")
    }
    return [{"metadata": {"name": name}} for name in sorted(wanted - known)]


async def _create_all(client: LocalClient, kind: Kind, objects: Iterable[Object]) -> None:
    for obj in objects:
        await _create(client, kind, _fresh(obj))


async def _create(client: LocalClient, kind: Kind, obj: Object) -> None:
    """Create, leaving what exists (the system namespaces and priority classes) as it is."""
    namespace = (obj["metadata"].get("namespace") or "default") if kind.namespaced else ""
    try:
        await client.create(kind, namespace, obj)
    except StatusError as e:
        if e.code != 409:
            raise PlanError(_message(e)) from None


def _fresh(obj: Object) -> Object:
    """`obj` as a client creates it: without what the server sets."""
    fresh = copy.deepcopy(obj)
    meta = fresh.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    return fresh


def _unattended(node: Object) -> Object:
    """The node without the label that has a simulated kubelet take it over: here nodes are
    only what the DaemonSet controller reads."""
    labels = {
        k: v for k, v in (node["metadata"].get("labels") or {}).items() if k != SIMULATED_LABEL
    }
    return {**node, "metadata": {**node["metadata"], "labels": labels}}


def _stateful_set_pods(stateful_set: Object) -> list[Object]:
    """The pods the StatefulSet controller would make, every one at its current revision (the
    revision the controller names for the template as it is)."""
    collisions = (stateful_set.get("status") or {}).get("collisionCount") or 0
    hash_ = hash_controller_revision(get_patch(stateful_set), collisions)
    revision = revision_name(stateful_set, hash_)
    pods = []
    for ordinal in range(start_ordinal(stateful_set), end_ordinal(stateful_set) + 1):
        pod = new_pod(stateful_set, ordinal)
        pod["metadata"]["labels"][CONTROLLER_REVISION_HASH] = revision
        pods.append(pod)
    return pods


def _message(e: Exception) -> str:
    return e.message if isinstance(e, StatusError) else str(e)
