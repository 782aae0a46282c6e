"""A small cluster that exercises most components, run in the simulated mode on the virtual
clock with an event log: what the determinism tests run, in this process or in another."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from typing import Any

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.client import LocalClient
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet import NodeConfig
from pinnace.sim.eventlog import EventLog
from pinnace.store import MemoryStore

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
DEPLOYMENTS = catalog.kind("apps", "deployments")
DAEMON_SETS = catalog.kind("apps", "daemonsets")
JOBS = catalog.kind("batch", "jobs")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")


def nodes(count: int) -> list[NodeConfig]:
    return [
        NodeConfig(
            name=f"node-{i}",
            index=i,
            capacity={"cpu": "4", "memory": "8Gi", "pods": "30"},
            labels={"topology.kubernetes.io/zone": f"zone-{'ab'[i % 2]}"},
        )
        for i in range(1, count + 1)
    ]


def container(name: str, cpu: str, memory: str, **more: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {"name": name, "image": "busybox:1.36", "resources": {"requests": requests}, **more}


def deployment(name: str, replicas: int, cpu: str, **spec: Any) -> dict[str, Any]:
    labels = {"app": name}
    usage = {"sim.pinnace.dev/cpu": cpu, "sim.pinnace.dev/memory": "200Mi"}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": usage},
                "spec": {"containers": [container("app", cpu, "256Mi")], **spec},
            },
        },
    }


def daemon_set(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [container("agent", "50m", "32Mi")]},
            },
        },
    }


def pdb(name: str, app: str, min_available: int) -> dict[str, Any]:
    spec = {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}
    return {"metadata": {"name": name}, "spec": spec}


def hpa(name: str, target: str) -> dict[str, Any]:
    metric = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
    return {
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": metric}],
        },
    }


def job(name: str) -> dict[str, Any]:
    command = ["sh", "-c", "sleep 40; exit 0"]
    return {
        "metadata": {"name": name},
        "spec": {
            "completions": 6,
            "parallelism": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container("work", "500m", "128Mi", command=command)],
                }
            },
        },
    }


def crash_looping(name: str) -> dict[str, Any]:
    command = ["sh", "-c", "echo starting; sleep 5; exit 1"]
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container("app", "100m", "64Mi", command=command)]},
    }


ANTI_AFFINITY = {
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    },
                }
            ]
        }
    }
}

SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
}


async def _cordon(client: LocalClient, names: list[str], cordoned: bool) -> None:
    for name in names:
        await client.patch(NODES, "", name, {"spec": {"unschedulable": cordoned}})


async def _scenario(plane: ControlPlane, seconds: float) -> None:
    client = plane.client()
    high = {"metadata": {"name": "high"}, "value": 1000}
    await client.create(PRIORITY_CLASSES, "", high)
    await client.create(DAEMON_SETS, "default", daemon_set("agent"))
    await client.create(DEPLOYMENTS, "default", deployment("web", 8, "250m", **ANTI_AFFINITY))
    await client.create(DEPLOYMENTS, "default", deployment("spread", 5, "500m", **SPREAD))
    await client.create(PDBS, "default", pdb("web", "web", 6))
    await client.create(HPAS, "default", hpa("web", "web"))
    await client.create(JOBS, "default", job("batch"))
    await client.create(PODS, "default", crash_looping("crasher"))
    await asyncio.sleep(seconds / 4)
    await _cordon(client, ["node-1", "node-2"], True)
    for pod in (await client.list(PODS, "default", field_selector="spec.nodeName=node-1"))["items"]:
        with contextlib.suppress(StatusError):  # a PDB may refuse
            await client.evict("default", pod["metadata"]["name"])
    await client.create(DEPLOYMENTS, "default", deployment("late", 6, "1"))
    await asyncio.sleep(seconds / 4)
    urgent = deployment("urgent", 3, "1500m", priorityClassName="high")
    await client.create(DEPLOYMENTS, "default", urgent)
    await _cordon(client, ["node-1", "node-2"], False)
    await asyncio.sleep(seconds / 4)
    await client.delete(DEPLOYMENTS, "default", "spread")
    await asyncio.sleep(seconds / 4)


def run(seed: int, seconds: float, node_count: int = 4) -> tuple[str, bytes]:
    """The event log's SHA-256 and its lines after `seconds` of simulated time."""
    loop = VirtualEventLoop()
    clock = Clock(loop)
    options = ClusterOptions(nodes=nodes(node_count), seed=seed, simulated=True)
    plane = ControlPlane(MemoryStore(), clock, options)
    out = io.BytesIO()
    log = EventLog(plane.store, clock, out)
    try:
        loop.run_until_complete(plane.start())
        loop.run_until_complete(_scenario(plane, seconds))
        loop.run_until_complete(plane.stop())
    finally:
        log.close()
        loop.close()
        asyncio.set_event_loop(None)
    return log.sha256(), out.getvalue()


if __name__ == "__main__":
    digest, lines = run(int(sys.argv[1]), float(sys.argv[2]))
    if len(sys.argv) > 3:
        with open(sys.argv[3], "wb") as f:
            f.write(lines)
    print(digest)
