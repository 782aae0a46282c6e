"""`kubectl top`, `kubectl autoscale` and the Python client against `pinnace up --nodes 2`: the
metrics API answers from the simulated containers' usage, and the HPA scales a Deployment on
it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from prometheus_client.parser import text_string_to_metric_families
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.clock.rfc3339 import parse_time

PODS = """
apiVersion: v1
kind: Pod
metadata:
  name: busy
  labels: {app: busy}
  annotations:
    sim.pinnace.dev/cpu: "250m"
    sim.pinnace.dev/memory: "100Mi"
    sim.pinnace.dev/cpu.sidecar: "20m"
    sim.pinnace.dev/memory.sidecar: "10Mi"
spec:
  nodeName: pinnace-node-1
  containers:
  - {name: main, image: nginx}
  - {name: sidecar, image: busybox, command: [sleep, infinity]}
---
apiVersion: v1
kind: Pod
metadata:
  name: idle
  labels: {app: idle}
spec:
  nodeName: pinnace-node-2
  containers:
  - {name: main, image: nginx}
"""


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
      annotations:
        sim.pinnace.dev/cpu: "90m"
    spec:
      containers:
      - name: web
        image: nginx
        resources:
          requests: {cpu: 100m}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(
        tmp_path_factory.mktemp("pinnace-top"),
        flags=("--nodes", "2", "--horizontal-pod-autoscaler-sync-period", "2s"),
    )
    running.ok("apply", "-f", "-", stdin=PODS)
    running.ok("wait", "--for=condition=Ready", "pod/busy", "pod/idle", "--timeout=30s")
    yield running
    stop(running)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_kubectl_top_pods_shows_each_pods_usage(cluster: Cluster) -> None:
    assert rows(cluster.ok("top", "pods")) == [
        ["NAME", "CPU(cores)", "MEMORY(bytes)"],
        ["busy", "270m", "110Mi"],
        ["idle", "0m", "0Mi"],
    ]
    assert rows(cluster.ok("top", "pod", "busy", "--containers")) == [
        ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"],
        ["busy", "main", "250m", "100Mi"],
        ["busy", "sidecar", "20m", "10Mi"],
    ]
    assert rows(cluster.ok("top", "pods", "-l", "app=idle", "--no-headers")) == [
        ["idle", "0m", "0Mi"]
    ]
    missing = cluster.kubectl("top", "pod", "ghost")
    assert missing.returncode != 0
    assert 'pod "ghost" not found' in missing.stderr


def test_kubectl_top_nodes_shows_usage_against_allocatable(cluster: Cluster) -> None:
    table = rows(cluster.ok("top", "nodes"))
    assert table[0] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert [row[0] for row in table[1:]] == ["pinnace-node-1", "pinnace-node-2"]
    for _, cores, cpu_percent, memory, memory_percent in table[1:]:
        assert cores.endswith("m") and cpu_percent.endswith("%")
        assert memory.endswith("Mi") and memory_percent.endswith("%")
    busy_node = table[1]
    assert int(busy_node[1][:-1]) >= 270  # the busy pod runs there
    [one] = rows(cluster.ok("top", "node", "pinnace-node-2", "--no-headers"))
    assert one[0] == "pinnace-node-2"


def test_the_kubelets_resource_metrics_give_each_containers_start_time(
    cluster: Cluster,
) -> None:
    """/metrics/resource through the node proxy, as Prometheus scrapes a v1.32 kubelet."""
    text = cluster.ok("get", "--raw", "/api/v1/nodes/pinnace-node-1/proxy/metrics/resource")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    starts = {
        s.labels["container"]: s.value for s in families["container_start_time_seconds"].samples
    }
    status = json.loads(cluster.ok("get", "pod", "busy", "-o", "json"))["status"]
    for container in status["containerStatuses"]:
        started = parse_time(container["state"]["running"]["startedAt"])
        assert 0 <= starts[container["name"]] - started < 1
    assert [s.value for s in families["resource_scrape_error"].samples] == [0]
    assert [s.value for s in families["node_swap_usage_bytes"].samples] == [0]


def test_kubectl_autoscale_scales_a_deployment_on_cpu(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=DEPLOYMENT)
    cluster.ok("rollout", "status", "deployment/web", "--timeout=30s")
    created = cluster.ok("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5")
    assert created.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    [header, row] = rows(cluster.ok("get", "hpa"))
    assert header == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row[:3] == ["web", "Deployment/web", "cpu:"]  # <unknown>/50% until the first sync

    # one pod at 90% of its request against 50%: the first sync (every 2 s here) asks for 2
    replicas = "jsonpath={.spec.replicas}"
    eventually(lambda: cluster.ok("get", "deployment", "web", "-o", replicas) == "2", 60, 1)
    events = cluster.ok("get", "events", "--field-selector", "reason=SuccessfulRescale")
    assert (
        "New size: 2; reason: cpu resource utilization (percentage of request) above target"
        in events
    )
    [_, row] = rows(cluster.ok("get", "hpa", "web"))
    assert row[2:4] == ["cpu:", "90%/50%"]


def test_the_python_client_reads_pod_metrics_and_autoscalers(cluster: Cluster) -> None:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    try:
        metrics = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            "metrics.k8s.io", "v1beta1", "default", "pods", "busy"
        )
        assert metrics["kind"] == "PodMetrics"
        assert [c["usage"] for c in metrics["containers"]] == [
            {"cpu": "250m", "memory": "100Mi"},
            {"cpu": "20m", "memory": "10Mi"},
        ]
        body = {
            "metadata": {"name": "py"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "py"},
                "maxReplicas": 3,
            },
        }
        autoscaling = client.AutoscalingV2Api(api_client)
        created = autoscaling.create_namespaced_horizontal_pod_autoscaler("default", body)
        assert created.spec.min_replicas == 1
        assert created.spec.metrics[0].resource.target.average_utilization == 80
        v1 = client.AutoscalingV1Api(api_client).read_namespaced_horizontal_pod_autoscaler(
            "py", "default"
        )
        assert v1.spec.target_cpu_utilization_percentage == 80
    finally:
        api_client.close()
