"""What the dashboard shows, as plain data built from informers' caches: nodes with
allocatable, requested and used per resource (as kube-state-metrics' and kubectl describe
node's "Allocated resources" add requests up: every non-terminal pod bound to the node), pending
pods with kube-scheduler's last FailedScheduling message, and the workloads' status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pinnace.api.objects import Object
from pinnace.api.stats import PodStats, Summary
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


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def pod_stats(summaries: Mapping[str, Summary]) -> dict[str, PodStats]:
    """namespace/name -> the pod's stats, from every node's summary."""
    return {f"{p.namespace}/{p.name}": p for s in summaries.values() for p in s.pods}


def usage(stats: PodStats | None) -> dict[str, float]:
    if stats is None:
        return {}
    return {CPU: stats.cpu_usage_nano_cores / 1e9, MEMORY: float(stats.memory_working_set_bytes)}


def pod_view(pod: Object, stats: PodStats | None) -> dict[str, Any]:
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


def node_view(
    node: Object, pods: list[Object], summary: Summary | None, stats: Mapping[str, PodStats]
) -> dict[str, Any]:
    status = node.get("status") or {}
    conditions = {c["type"]: c.get("status", "") for c in status.get("conditions") or ()}
    requested = {CPU: 0.0, MEMORY: 0.0, "pods": float(len(pods))}
    for pod in pods:
        for name, amount in amounts(pod_requests(pod)).items():
            requested[name] = requested.get(name, 0.0) + amount
    used: dict[str, float] = {}
    if summary is not None:
        used = {
            CPU: summary.node.cpu_usage_nano_cores / 1e9,
            MEMORY: float(summary.node.memory_working_set_bytes),
            "pods": float(len(summary.pods)),
        }
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
                "requested": requested.get(name, 0.0),
                "used": used.get(name),
            }
            for name in RESOURCES
        },
        "pods": [pod_view(p, stats.get(key_of(p))) for p in sorted(pods, key=key_of)],
    }


def _taint(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '')}{value}:{taint.get('effect', '')}"


def pending_view(pod: Object, failed: Object | None) -> dict[str, Any]:
    """A pod not bound yet, with the scheduler's last word on it: its FailedScheduling
    event's message, else its PodScheduled condition's."""
    conditions = (pod.get("status") or {}).get("conditions") or ()
    scheduled: Mapping[str, Any] = next(
        (c for c in conditions if c.get("type") == "PodScheduled"), {}
    )
    view = pod_view(pod, None)
    if failed is not None:
        view["reason"], view["message"] = failed.get("reason", ""), failed.get("message", "")
    else:
        view["reason"] = scheduled.get("reason", "")
        view["message"] = scheduled.get("message", "")
    return view


def nodes_and_pending(
    nodes: Iterable[Object],
    pods: Iterable[Object],
    failed: Callable[[str], Object | None],
    summaries: Mapping[str, Summary],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The node views, by name, and the pending pods', by namespace and name; `failed` gives
    a pod's (namespace/name) last FailedScheduling event."""
    by_node: dict[str, list[Object]] = {}
    pending = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName", "")
        if (pod.get("status") or {}).get("phase") in TERMINAL:
            continue
        if node:
            by_node.setdefault(node, []).append(pod)
        else:
            pending.append(pending_view(pod, failed(key_of(pod))))
    stats = pod_stats(summaries)
    views = [
        node_view(n, by_node.get(name, []), summaries.get(name), stats)
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
        "time": event.get("lastTimestamp") or event.get("eventTime") or "",
        "type": event.get("type", ""),
        "reason": event.get("reason", ""),
        "object": f"{involved.get('kind', '')}/{involved.get('name', '')}",
        "namespace": involved.get("namespace", ""),
        "message": event.get("message", ""),
        "count": event.get("count", 1),
    }
