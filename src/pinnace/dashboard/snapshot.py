"""What the dashboard shows, as plain data built from informers' caches: nodes with
allocatable, requested and used per resource (as kube-state-metrics' and kubectl describe
node's "Allocated resources" add requests up: every non-terminal pod bound to the node; used as
the usage history's last sample has it), pending pods with kube-scheduler's last
FailedScheduling message, and the workloads' status.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api.core.event import last_seen, occurrences
from pinnace.api.objects import Object
from pinnace.api.stats import PodStats
from pinnace.metrics.recorder import recommended
from pinnace.resources.lists import parse_quantity
from pinnace.resources.names import CPU, MEMORY
from pinnace.resources.pod import pod_limits, pod_requests
from pinnace.resources.qos import recorded_qos_class

RESOURCES = (CPU, MEMORY, "pods")
TERMINAL = ("Succeeded", "Failed")
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


def amounts(resources: Mapping[str, Any]) -> dict[str, float]:
    """cpu in cores, memory in bytes, the rest as numbers: only the dashboard's resources."""
    return {
        name: float(parse_quantity(quantity).as_fraction())
        for name, quantity in resources.items()
        if name in RESOURCES
    }


def usage(stats: PodStats | None) -> dict[str, float]:
    if stats is None:
        return {}
    return {CPU: stats.cpu_usage_nano_cores / 1e9, MEMORY: float(stats.memory_working_set_bytes)}


def pod_view(pod: Object, stats: PodStats | None) -> dict[str, Any]:
    """A pod's page: its requests, limits and usage now."""
    meta, status = pod["metadata"], pod.get("status") or {}
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "node": (pod.get("spec") or {}).get("nodeName", ""),
        "phase": status.get("phase", ""),
        "qos": recorded_qos_class(pod),
        "requests": amounts(pod_requests(pod)),
        "limits": amounts(pod_limits(pod)),
        "used": usage(stats),
    }


@dataclass(frozen=True, slots=True)
class PodRow:
    """What the snapshot needs of a pod, kept from the pods informer's events so that a
    snapshot reads no pod (they are cached packed) and parses no quantity."""

    namespace: str
    name: str
    node: str
    phase: str
    qos: str
    cpu: float
    memory: float
    scheduled: tuple[str, str]
    """The PodScheduled condition's reason and message, of a pod not bound yet."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def square(self) -> dict[str, str]:
        return {"namespace": self.namespace, "name": self.name, "qos": self.qos,
                "phase": self.phase}  # fmt: skip


def pod_row(pod: Object) -> PodRow | None:
    """The row of a pod the snapshot shows; None for a finished one."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    phase = status.get("phase", "")
    if phase in TERMINAL:
        return None
    requests = amounts(pod_requests(pod))
    node = spec.get("nodeName", "")
    scheduled = ("", "")
    if not node:
        condition: Mapping[str, Any] = next(
            (c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), {}
        )
        scheduled = (condition.get("reason", ""), condition.get("message", ""))
    return PodRow(meta.get("namespace", ""), meta["name"], node, phase,
                  recorded_qos_class(pod), requests.get(CPU, 0.0),
                  requests.get(MEMORY, 0.0), scheduled)  # fmt: skip


def node_view(node: Object, pods: list[PodRow], used: Sequence[float] | None) -> dict[str, Any]:
    """A node's card; `used`: its CPU (cores), memory (bytes) and pods at the last sample."""
    status = node.get("status") or {}
    conditions = {c["type"]: c.get("status", "") for c in status.get("conditions") or ()}
    requested = {
        CPU: sum(p.cpu for p in pods),
        MEMORY: sum(p.memory for p in pods),
        "pods": float(len(pods)),
    }
    used_now = dict(zip(RESOURCES, used, strict=True)) if used is not None else {}
    allocatable = amounts(status.get("allocatable") or {})
    return {
        "name": node["metadata"]["name"],
        "ready": conditions.get("Ready") == "True",
        "pressures": [c for c in PRESSURES if conditions.get(c) == "True"],
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "taints": [_taint(t) for t in (node.get("spec") or {}).get("taints") or ()],
        "resources": {
            name: {
                "allocatable": allocatable.get(name, 0.0),
                "requested": requested[name],
                "used": used_now.get(name),
            }
            for name in RESOURCES
        },
        "pods": [p.square() for p in sorted(pods, key=lambda p: (p.namespace, p.name))],
    }


def _taint(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '')}{value}:{taint.get('effect', '')}"


def pending_view(pod: PodRow, failed: Object | None) -> dict[str, Any]:
    """A pod not bound yet, with the scheduler's last word on it: its FailedScheduling
    event's message, else its PodScheduled condition's."""
    view: dict[str, Any] = pod.square() | {"requests": {CPU: pod.cpu, MEMORY: pod.memory}}
    if failed is not None:
        view["reason"], view["message"] = failed.get("reason", ""), failed.get("message", "")
    else:
        view["reason"], view["message"] = pod.scheduled
    return view


def nodes_and_pending(
    nodes: Iterable[Object],
    pods: Iterable[PodRow],
    failed: Callable[[str], Object | None],
    used: Mapping[str, Sequence[float]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The node views, by name, and the pending pods', by namespace and name; `failed` gives
    a pod's (namespace/name) last FailedScheduling event, `used` each node's usage."""
    by_node: dict[str, list[PodRow]] = {}
    pending = []
    for pod in pods:
        if pod.node:
            by_node.setdefault(pod.node, []).append(pod)
        else:
            pending.append(pending_view(pod, failed(pod.key)))
    views = [
        node_view(n, by_node.get(name, []), used.get(name))
        for name, n in sorted((n["metadata"]["name"], n) for n in nodes)
    ]
    return views, sorted(pending, key=lambda p: (p["namespace"], p["name"]))


def workload_view(kind: str, obj: Object) -> dict[str, Any]:
    """A workload's name and the status numbers `kubectl get` prints for its kind."""
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    view: dict[str, Any] = {"namespace": meta.get("namespace", ""), "name": meta["name"]}
    if kind == "deployments":
        view |= {
            "desired": spec.get("replicas", 1),
            "ready": status.get("readyReplicas", 0),
            "updated": status.get("updatedReplicas", 0),
            "available": status.get("availableReplicas", 0),
        }
    elif kind == "jobs":
        view |= {
            "completions": spec.get("completions", 1),
            "succeeded": status.get("succeeded", 0),
            "active": status.get("active", 0),
            "failed": status.get("failed", 0),
        }
    elif kind == "daemonsets":
        view |= {
            "desired": status.get("desiredNumberScheduled", 0),
            "ready": status.get("numberReady", 0),
            "available": status.get("numberAvailable", 0),
        }
    elif kind == "vpas":
        target = spec.get("targetRef") or {}
        cpu, memory = recommended(obj)
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        view |= {
            "target": f"{target.get('kind', '')}/{target.get('name', '')}",
            "mode": (spec.get("updatePolicy") or {}).get("updateMode", "Auto"),
            "cpu": None if math.isnan(cpu) else cpu,
            "memory": None if math.isnan(memory) else memory,
            "provided": conditions.get("RecommendationProvided", ""),
        }
    else:
        target = spec.get("scaleTargetRef") or {}
        view |= {
            "target": f"{target.get('kind', '')}/{target.get('name', '')}",
            "min": spec.get("minReplicas", 1),
            "max": spec.get("maxReplicas", 0),
            "current": status.get("currentReplicas", 0),
            "desired": status.get("desiredReplicas", 0),
        }
    return view


def event_view(event: Object) -> dict[str, Any]:
    involved = event.get("involvedObject") or {}
    return {
        "uid": event["metadata"].get("uid", ""),
        "time": last_seen(event),
        "type": event.get("type", ""),
        "reason": event.get("reason", ""),
        "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
        "namespace": involved.get("namespace", ""),
        "message": event.get("message", ""),
        "count": occurrences(event),
    }
