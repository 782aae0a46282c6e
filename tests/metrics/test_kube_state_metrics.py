"""kube-state-metrics' core families at /metrics/cluster, against the objects they describe."""

from __future__ import annotations

import asyncio

from pinnace.api import catalog
from pinnace.clock import Clock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.metrics.kube_state import resource_series
from pinnace.store import MemoryStore

from .test_apiserver_metrics import Samples, call, samples, value

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def test_pods_nodes_deployments_and_hpas_as_kube_state_metrics_reports_them() -> None:
    async def scenario() -> tuple[Samples, str]:
        options = ClusterOptions(nodes=node_configs(1))
        plane = ControlPlane(MemoryStore(), Clock(asyncio.get_running_loop()), options)
        await plane.start()
        app = plane.http_app()
        client = plane.client()
        container = {
            "name": "main",
            "image": "nginx",
            "resources": {
                "requests": {"cpu": "250m", "memory": "64Mi"},
                "limits": {"memory": "128Mi", "ephemeral-storage": "1Gi"},
            },
        }
        pod = {"metadata": {"name": "web"}, "spec": {"containers": [container]}}
        created = await client.create(PODS, "default", pod)
        template = {"metadata": {"labels": {"app": "api"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
        deployment = {
            "metadata": {"name": "api"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "api"}},
                "template": template,
            },
        }
        await client.create(DEPLOYMENTS, "default", deployment)
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"}
        hpa = {"metadata": {"name": "api"},
               "spec": {"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 3}}  # fmt: skip
        await client.create(HPAS, "default", hpa)
        uid = created["metadata"]["uid"]
        running = key("kube_pod_status_phase", namespace="default", pod="web", uid=uid,
                      phase="Running")  # fmt: skip
        replicas = key("kube_deployment_status_replicas", namespace="default", deployment="api")
        for _ in range(400):  # until the pod runs and the Deployment reports its replicas
            found = samples((await call(app, "GET", "/metrics/cluster"))[1])
            if found.get(running) == 1 and found.get(replicas):
                break
            await asyncio.sleep(0.05)
        await plane.stop()
        return found, created["metadata"]["uid"]

    found, uid = asyncio.run(scenario())
    pod = {"namespace": "default", "pod": "web", "uid": uid}
    assert value(found, "kube_pod_status_phase", phase="Pending", **pod) == 0
    (node,) = {dict(labels)["node"] for name, labels in found if name.endswith("_requests")}
    resource = {**pod, "container": "main", "node": node}
    requests = "kube_pod_container_resource_requests"
    assert value(found, requests, resource="cpu", unit="core", **resource) == 0.25
    assert value(found, requests, resource="memory", unit="byte", **resource) == 64 * 2**20
    limits = "kube_pod_container_resource_limits"
    assert value(found, limits, resource="memory", unit="byte", **resource) == 128 * 2**20
    assert value(found, limits, resource="ephemeral_storage", unit="byte", **resource) == 2**30
    restarts = "kube_pod_container_status_restarts_total"
    assert value(found, restarts, container="main", **pod) == 0
    allocatable = "kube_node_status_allocatable"
    assert value(found, allocatable, node=node, resource="cpu", unit="core") == 4
    assert value(found, allocatable, node=node, resource="pods", unit="integer") == 110
    hpa = {"namespace": "default", "horizontalpodautoscaler": "api"}
    assert (
        value(found, "kube_deployment_status_replicas", namespace="default", deployment="api") == 2
    )
    assert key("kube_horizontalpodautoscaler_status_current_replicas", **hpa) in found


def test_resource_names_become_label_values_with_kube_state_metrics_units() -> None:
    found = list(resource_series({"nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi", "cpu": "1500m"}))
    assert found == [
        ("cpu", "core", 1.5),
        ("hugepages_2Mi", "byte", 4 * 2**20),
        ("nvidia_com_gpu", "integer", 1),
    ]
