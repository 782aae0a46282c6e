"""The cluster a plan starts from: a `Snapshot` of its nodes, the pods on them and what the
scheduler and the planning commands read besides, with the node pools it can grow by.

A snapshot holds Kubernetes objects as the API serves them: Nodes, the Pods that have not
finished, and by resource name the Namespaces, PriorityClasses, PodDisruptionBudgets,
LimitRanges, RuntimeClasses and workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets,
Jobs). `pinnace.plan.load` reads one from a running cluster or builds one from a Scenario or
cluster file.

A node pool is a set of nodes of one shape that grows by copies of a template Node: the pools
of a cluster file (whose nodes carry the pinnace.dev/node-pool label), or in a running cluster
the nodes sharing a node-pool label of Pinnace or a cloud provider (GKE, EKS, AKS, Karpenter),
the first of them by name as the template.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pinnace.api.objects import Object
from pinnace.kubelet.config import NODE_POOL_LABEL
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY
from pinnace.resources.quantity import BINARY_SI, Quantity
from pinnace.scheduler.config import SchedulerConfiguration

POOL_LABELS = (
    NODE_POOL_LABEL,
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
)
"""Labels naming a node's pool, the first present wins."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"
"""Taints the node lifecycle controller and kubelet set from conditions (not-ready,
unreachable, unschedulable...): a new node of the pool starts without them."""

OBJECT_RESOURCES = (
    "namespaces",
    "priorityclasses",
    "poddisruptionbudgets",
    "limitranges",
    "runtimeclasses",
    "deployments",
    "replicasets",
    "statefulsets",
    "daemonsets",
    "jobs",
    "services",
)
"""What a snapshot holds besides Nodes and Pods, by resource name."""
FINISHED = ("Succeeded", "Failed")


class PlanError(ValueError):
    """A plan that cannot be made (a bad input, an unknown pool...); the message says why."""


@dataclass
class Snapshot:
    source: str
    """Where it was read: the file, or the API server's URL."""
    nodes: list[Object]
    pods: list[Object]
    """Pods that have not finished: bound to a node, or pending."""
    objects: dict[str, list[Object]] = field(default_factory=dict)
    """By resource name (OBJECT_RESOURCES)."""
    pools: dict[str, Object] = field(default_factory=dict)
    """Pool name -> the template Node of a new node of the pool."""
    scheduler_config: SchedulerConfiguration | None = None
    """The scheduler's configuration (None: kube-scheduler's defaults)."""
    now: float = 0.0
    """When it was taken, in seconds since the epoch (for ages, as the descheduler's)."""

    def of(self, resource: str) -> list[Object]:
        return self.objects.get(resource, [])

    def bound_pods(self) -> list[Object]:
        return [p for p in self.pods if (p.get("spec") or {}).get("nodeName")]

    def pending_pods(self) -> list[Object]:
        return [p for p in self.pods if not (p.get("spec") or {}).get("nodeName")]

    def pool_names(self) -> list[str]:
        """Every pool, of the nodes or of the pool templates, in name order."""
        return sorted({*self.pools, *(pool_of(n) for n in self.nodes)} - {""})

    def template(self, pool: str) -> Object:
        """The template Node of `pool`; PlanError for a pool the snapshot does not know."""
        found = self.pools.get(pool)
        if found is None:
            known = ", ".join(sorted(self.pools)) or "none"
            raise PlanError(f'no node pool "{pool}" in {self.source} (pools: {known})')
        return found


def pool_of(node: Mapping[str, Any]) -> str:
    """The node's pool ("" for none)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return next((labels[label] for label in POOL_LABELS if labels.get(label)), "")


def is_finished(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED


def pools_of(nodes: Sequence[Object]) -> dict[str, Object]:
    """Each pool's template: a copy of its first node by name, as a template."""
    first: dict[str, Object] = {}
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        pool = pool_of(node)
        if pool and pool not in first:
            first[pool] = as_template(node)
    return first


def as_template(node: Mapping[str, Any]) -> Object:
    """A Node like `node`, without what belongs to the one machine: identity, cordon, taints
    from conditions, the pod CIDR, and with every condition healthy."""
    template = copy.deepcopy(dict(node))
    meta = template["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    spec = template.setdefault("spec", {})
    for key in ("unschedulable", "providerID", "podCIDR", "podCIDRs"):
        spec.pop(key, None)
    taints = [
        t
        for t in spec.get("taints") or ()
        if not t.get("key", "").startswith(CONDITION_TAINT_PREFIX)
    ]
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    status = template.setdefault("status", {})
    status["conditions"] = [_healthy(c) for c in status.get("conditions") or ()]
    return template


def _healthy(condition: Mapping[str, Any]) -> Object:
    healthy = "True" if condition.get("type") == "Ready" else "False"
    return {**condition, "status": healthy}


def new_node(template: Mapping[str, Any], name: str) -> Object:
    """A node of the template's pool named `name`."""
    node = copy.deepcopy(dict(template))
    meta = node["metadata"]
    meta["name"] = name
    labels = meta.setdefault("labels", {})
    if HOSTNAME_LABEL in labels:
        labels[HOSTNAME_LABEL] = name
    for address in (node.get("status") or {}).get("addresses") or ():
        if address.get("type") == "Hostname":
            address["address"] = name
    return node


def is_ready(node: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


def quantity(resource: str, amount: int) -> str:
    """An amount in the scheduler's units (millicores, bytes, counts) as a Kubernetes quantity:
    `1500m`, `1536Mi`, `110`."""
    if resource == CPU:
        return str(Quantity.from_milli(amount))
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        return str(Quantity.from_milli(amount * 1000, BINARY_SI))
    return str(amount)


def merged(snapshot: Snapshot, objects: Mapping[str, Sequence[Object]]) -> Snapshot:
    """`snapshot` with `objects` (by resource name) added to its own; an object the snapshot
    already has (same namespace and name) keeps the snapshot's version."""
    combined = {r: list(v) for r, v in snapshot.objects.items()}
    for resource, added in objects.items():
        mine = combined.setdefault(resource, [])
        known = {_object_key(o) for o in mine}
        mine += [o for o in added if _object_key(o) not in known]
    return replace(snapshot, objects=combined)


def _object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""
