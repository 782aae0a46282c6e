"""A small cluster run on the virtual clock under an Observer, for the observer's and the
report's tests: three 4-CPU nodes, two in pool general and one in pool big; a Deployment of
three 1.5-CPU pods using 1 CPU each; a pod of 5 CPUs that fits nowhere; a pod of 500m on the
big node that uses twice its memory limit (OOMKilled over and over). At TAINT_AT the big node
is tainted NoExecute: the web pod there is evicted and its replacement goes to a general node
(the hog tolerates the taint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.client import PatchType
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import NodeConfig
from pinnace.kubelet.config import NODE_POOL_LABEL
from pinnace.sim.observe import Observer

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
DEPLOYMENTS = catalog.kind("apps", "deployments")
MI = 1024 * 1024
GI = 1024 * MI
INTERVAL = 10.0
RUN_SECONDS = 120.0
TAINT_AT = 60.0
TAINT = {"key": "dedicated", "value": "maintenance", "effect": "NoExecute"}


def nodes() -> list[NodeConfig]:
    pools = ["general", "general", "big"]
    return [
        NodeConfig(name=f"{pool}-{i}", index=i, labels={NODE_POOL_LABEL: pool})
        for i, pool in enumerate(pools, start=1)
    ]


def container(cpu: str, memory: str, **resources: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    return {"name": "app", "image": "app:1", "resources": {"requests": requests, **resources}}


def deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"sim.pinnace.dev/cpu": "1", "sim.pinnace.dev/memory": "512Mi"},
                },
                "spec": {"containers": [container("1500m", "1Gi")]},
            },
        },
    }


def too_big() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big"},
        "spec": {"containers": [container("5", "1Gi")]},
    }


def hog() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "annotations": {"sim.pinnace.dev/memory": "256Mi"}},
        "spec": {
            "containers": [container("500m", "64Mi", limits={"memory": "128Mi"})],
            "nodeSelector": {NODE_POOL_LABEL: "big"},
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
    }


@dataclass
class Run:
    cluster: SimulatedCluster
    observer: Observer


def run() -> Run:
    """The run, stopped after RUN_SECONDS; the caller closes `cluster`."""
    cluster = SimulatedCluster(ClusterOptions(nodes=nodes(), seed=1))
    observer = Observer(cluster.plane, INTERVAL)
    try:
        cluster.run(observer.start())
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment()))
        cluster.run(cluster.client.create(PODS, "default", too_big()))
        cluster.run(cluster.client.create(PODS, "default", hog()))
        cluster.wait(TAINT_AT)
        taint = {"spec": {"taints": [TAINT]}}
        cluster.run(cluster.client.patch(NODES, "", "big-3", taint, PatchType.MERGE))
        cluster.wait(RUN_SECONDS - TAINT_AT)
        cluster.run(observer.stop())
    except BaseException:
        cluster.close()
        raise
    return Run(cluster, observer)
