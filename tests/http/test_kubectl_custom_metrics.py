"""An HPA on a custom metric through kubectl against `pinnace up`: the Deployment's pods share
a request rate declared in a series ConfigMap, custom.metrics.k8s.io serves it (`kubectl get
--raw`), and the HPA scales the Deployment until each pod is at its target."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

MANIFESTS = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: loads
  labels: {metrics.sim.pinnace.dev/series: ""}
data:
  frontend_requests: "40"
  queue_messages_ready: "{queue=tasks} 12"
---
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
        metrics.sim.pinnace.dev/http_requests_per_second: "share frontend_requests"
    spec:
      containers:
      - {name: web, image: nginx}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 6
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "10"}
"""
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(
        tmp_path_factory.mktemp("pinnace-custom-metrics"),
        flags=("--nodes", "2", "--horizontal-pod-autoscaler-sync-period", "2s"),
    )
    yield running
    stop(running)


def test_an_hpa_on_a_pods_metric_scales_through_kubectl(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=MANIFESTS)

    # 40 requests a second shared by the pods, 10 a pod wanted: 4 pods, 10 each
    replicas = "jsonpath={.spec.replicas}"
    eventually(lambda: cluster.ok("get", "deployment", "web", "-o", replicas) == "4", 60, 0.5)

    def at_target() -> list[str]:
        [_, row] = [line.split() for line in cluster.ok("get", "hpa", "web").splitlines()]
        assert row[2] == "10/10" and row[5] == "4", row
        return row

    row = eventually(at_target, 60, 0.5)
    assert row[:5] == ["web", "Deployment/web", "10/10", "1", "6"]
    described = cluster.ok("describe", "hpa", "web")
    assert '"http_requests_per_second" on pods:' in described
    assert "ValidMetricFound" in described

    resources = json.loads(cluster.ok("get", "--raw", CUSTOM))
    assert {"name": "pods/http_requests_per_second", "kind": "MetricValueList"}.items() <= next(
        r for r in resources["resources"] if r["name"] == "pods/http_requests_per_second"
    ).items()
    listed = json.loads(
        cluster.ok(
            "get",
            "--raw",
            f"{CUSTOM}/namespaces/default/pods/*/http_requests_per_second?labelSelector=app%3Dweb",
        )
    )
    assert [item["value"] for item in listed["items"]] == ["10"] * 4
    path = f"{CUSTOM}/namespaces/default/pods/*/http_requests_per_second"
    verb_get = json.loads(cluster.ok("get", "--raw", f"{path}?metricLabelSelector=verb%3DGET"))
    assert verb_get["items"] == []  # declared metrics have no labels

    external = json.loads(
        cluster.ok(
            "get",
            "--raw",
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready",
        )
    )
    assert [(i["metricLabels"], i["value"]) for i in external["items"]] == [
        ({"queue": "tasks"}, "12")
    ]

    missing = cluster.kubectl("get", "--raw", f"{CUSTOM}/namespaces/default/pods/*/nope")
    assert missing.returncode != 0
    assert "Error from server (NotFound): the server could not find the metric nope for pods" in (
        missing.stderr
    )


CRONTABS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""
ON_A_CRONTAB = """
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
  annotations: {metrics.sim.pinnace.dev/queue-length: "30"}
spec: {cronSpec: "0 3 * * *"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: batch
spec:
  replicas: 1
  selector:
    matchLabels: {app: batch}
  template:
    metadata:
      labels: {app: batch}
    spec:
      containers:
      - {name: batch, image: nginx}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: batch
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: batch}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Object
    object:
      metric: {name: queue-length}
      describedObject: {apiVersion: stable.example.com/v1, kind: CronTab, name: nightly}
      target: {type: Value, value: "10"}
"""


def test_an_hpa_on_a_custom_resources_object_metric(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=CRONTABS)
    cluster.ok("wait", "--for=condition=Established", "crd/crontabs.stable.example.com")
    cluster.ok("apply", "-f", "-", stdin=ON_A_CRONTAB)

    # the CronTab's 30 against 10: three times the one pod, at most 3
    replicas = "jsonpath={.spec.replicas}"
    eventually(lambda: cluster.ok("get", "deployment", "batch", "-o", replicas) == "3", 60, 0.5)
    current = "jsonpath={.status.currentMetrics[0].object.current.value}"
    assert eventually(lambda: cluster.ok("get", "hpa", "batch", "-o", current), 30, 0.5) == "30"
    assert "ValidMetricFound" in cluster.ok("describe", "hpa", "batch")
