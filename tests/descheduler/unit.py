"""Nodes, pods and one dry-run descheduling cycle over them, without a cluster: what each
strategy would evict."""

from __future__ import annotations

from typing import Any

from tests.client.conftest import Cluster

from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import format_time
from pinnace.descheduler.evictor import Eviction
from pinnace.descheduler.policy import parse
from pinnace.descheduler.runner import CycleResult, Descheduler
from pinnace.descheduler.snapshot import Snapshot

NOW = 1_750_000_000.0


def node(
    name: str,
    cpu: str = "4",
    labels: dict[str, str] | None = None,
    taints: list[Object] | None = None,
    unschedulable: bool = False,
) -> Object:
    resources = {"cpu": cpu, "memory": "8Gi", "pods": "20"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"capacity": resources, "allocatable": resources},
    }


def pod(
    name: str,
    on: str,
    cpu: str = "500m",
    owner: str = "ReplicaSet/web",
    labels: dict[str, str] | None = None,
    age: float = 60.0,
    image: str = "nginx:1.27",
    status: Object | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Object:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "labels": labels or {"app": "web"},
        "creationTimestamp": format_time(NOW - age),
    }
    if owner:
        kind, owner_name = owner.split("/")
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": kind, "name": owner_name, "uid": f"uid-{owner_name}"}
            | {"controller": True}
        ]
    if annotations:
        meta["annotations"] = annotations
    container = {"name": "app", "image": image, "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": on, "containers": [container], **spec},
        "status": status or {"phase": "Running"},
    }


def dry_run(
    policy: str,
    nodes: list[Object],
    pods: list[Object],
    priority_classes: dict[str, int] | None = None,
) -> CycleResult:
    """One dry-run cycle of `policy` over these nodes and pods."""
    cluster = Cluster()
    try:
        snapshot = Snapshot(NOW, nodes, pods, priority_classes or {})
        descheduler = Descheduler(cluster.client, parse(policy), dry_run=True)
        return cluster.run(descheduler.run_cycle(snapshot))
    finally:
        cluster.close()


def would_evict(
    policy: str,
    nodes: list[Object],
    pods: list[Object],
    priority_classes: dict[str, int] | None = None,
) -> list[Eviction]:
    """The evictions of one dry-run cycle of `policy` over these nodes and pods."""
    return dry_run(policy, nodes, pods, priority_classes).evictions


def evicted(policy: str, nodes: list[Object], pods: list[Object]) -> list[str]:
    return [e.name for e in would_evict(policy, nodes, pods)]


def policy(plugin: str, point: str, args: str = "", evictor: str = "", top: str = "") -> str:
    """A one-profile policy enabling `plugin` with `args` (YAML, indented 6)."""
    configs = ""
    if evictor:
        configs += f"  - name: DefaultEvictor\n    args:\n{evictor}"
    if args:
        configs += f"  - name: {plugin}\n    args:\n{args}"
    return (
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
        + top
        + "profiles:\n- name: test\n"
        + (f"  pluginConfig:\n{configs}" if configs else "")
        + f"  plugins:\n    {point}:\n      enabled: [{plugin}]\n"
    )
