"""PodTopologySpread's system default constraints select a pod's siblings by the Services
selecting it (kube-scheduler v1.32's helper.DefaultSelector), with the Services read from the
API: bare pods behind a Service spread away from a node crowded with their siblings, even
where resource scoring alone would put them beside them."""

from __future__ import annotations

from tests.controllers.workloads import PODS, Workloads

from pinnace.api import catalog
from pinnace.api.objects import Object

SERVICES = catalog.kind("", "services")


def bare_pod(name: str, node: str = "", cpu: str = "", memory: str = "") -> Object:
    container: Object = {"name": "c", "image": "nginx:1.27"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    spec: Object = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    labels = {"app": "web"} if not cpu else {"app": "batch"}
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


def placed(with_service: bool) -> str:
    cluster = Workloads(nodes=2, shape={"cpu": "4", "memory": "16Gi", "pods": "20"})
    try:
        if with_service:
            service = {
                "metadata": {"name": "web"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
            }
            cluster.run(cluster.client.create(SERVICES, "default", service))
        for i in range(4):
            cluster.run(
                cluster.client.create(PODS, "default", bare_pod(f"web-{i}", "pinnace-node-1"))
            )
        big = bare_pod("batch", "pinnace-node-2", cpu="3", memory="12Gi")
        cluster.run(cluster.client.create(PODS, "default", big))
        cluster.settle(5)
        cluster.run(cluster.client.create(PODS, "default", bare_pod("web-new")))
        cluster.settle(5)
        pod = cluster.run(cluster.client.get(PODS, "default", "web-new"))
        return str(pod["spec"].get("nodeName", ""))
    finally:
        cluster.close()


def test_a_service_makes_its_pods_spread() -> None:
    assert placed(with_service=False) == "pinnace-node-1"  # resources alone: the idle node
    assert placed(with_service=True) == "pinnace-node-2"
