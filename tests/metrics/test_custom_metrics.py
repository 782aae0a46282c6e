"""custom.metrics.k8s.io and external.metrics.k8s.io on the virtual clock: what pods,
Services and series ConfigMaps declare, read through the HTTP paths an adapter serves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.apiextensions.test_crds import crontab, established
from tests.http.test_app import call
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs

DEPLOYMENTS = catalog.kind("apps", "deployments")
SERVICES = catalog.kind("", "services")
CONFIGMAPS = catalog.kind("", "configmaps")
CUSTOM = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL = "/apis/external.metrics.k8s.io/v1beta1"


class Cluster(SimulatedCluster):
    def __init__(self) -> None:
        super().__init__(ClusterOptions(nodes=node_configs(1), seed=1))
        self.app = self.plane.http_app()

    def get(self, path: str, query: str = "") -> tuple[int, Any]:
        code, body = self.run(call(self.app, "GET", path, query.encode()))
        return code, json.loads(body)

    def series(self, **data: str) -> None:
        body = {
            "metadata": {"name": "loads", "labels": {"metrics.sim.pinnace.dev/series": ""}},
            "data": data,
        }
        self.run(self.client.create(CONFIGMAPS, "default", body))

    def deploy(self, replicas: int, annotations: dict[str, str]) -> None:
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}, "annotations": annotations},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                },
            },
        }
        self.run(self.client.create(DEPLOYMENTS, "default", body))


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.close()


def values(listed: dict[str, Any]) -> list[str]:
    return [item["value"] for item in listed["items"]]


def test_pods_share_a_series_and_a_ramp_counts_from_the_pod_start(cluster: Cluster) -> None:
    cluster.series(frontend_requests="{tier=web} 90\n{tier=api} 1000")
    cluster.deploy(
        3,
        {
            "metrics.sim.pinnace.dev/http_requests_per_second": "share frontend_requests{tier=web}",
            "metrics.sim.pinnace.dev/queue_depth": "ramp 0 10 100s",
        },
    )
    cluster.wait(50)
    code, listed = cluster.get(
        f"{CUSTOM}/namespaces/default/pods/*/http_requests_per_second", "labelSelector=app%3Dweb"
    )
    assert code == 200, listed
    assert listed["kind"] == "MetricValueList"
    assert values(listed) == ["30", "30", "30"]
    item = listed["items"][0]
    assert item["describedObject"]["kind"] == "Pod"
    assert item["describedObject"]["apiVersion"] == "/v1"
    assert item["metric"] == {"name": "http_requests_per_second", "selector": None}
    # A declared metric has no labels: a metric selector keeps it only if it matches none.
    path = f"{CUSTOM}/namespaces/default/pods/*/http_requests_per_second"
    assert values(cluster.get(path, "metricLabelSelector=!verb")[1]) == ["30", "30", "30"]
    assert values(cluster.get(path, "metricLabelSelector=verb%3DGET")[1]) == []
    code, bad = cluster.get(path, "metricLabelSelector=a%3D%3D%3Db")
    assert code == 400, bad

    [ramp] = {v for v in values(cluster.get(f"{CUSTOM}/namespaces/default/pods/*/queue_depth")[1])}
    assert 4 < float(ramp) <= 5  # up to 50 s after the pods started

    code, old = cluster.get(
        "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/http_requests_per_second"
    )
    assert old["items"][0]["metricName"] == "http_requests_per_second"


def test_an_unknown_metric_is_the_adapters_not_found(cluster: Cluster) -> None:
    cluster.deploy(1, {})
    cluster.wait(20)
    code, status = cluster.get(f"{CUSTOM}/namespaces/default/pods/*/nothing_here")
    assert (code, status["reason"]) == (404, "NotFound")
    assert status["message"] == "the server could not find the metric nothing_here for pods"
    code, status = cluster.get(f"{CUSTOM}/namespaces/default/services/front/rps")
    assert status["message"] == "the server could not find the metric rps for services front"
    code, status = cluster.get(f"{EXTERNAL}/namespaces/default/queue")
    assert (code, status["message"]) == (
        404,
        "the server could not find the metric queue for provided labels",
    )


def test_object_and_external_metrics_and_discovery(cluster: Cluster) -> None:
    cluster.series(queue_messages_ready="{queue=tasks} ramp 0 100 100s\n{queue=mail} 7")
    service = {
        "metadata": {
            "name": "front",
            "annotations": {"metrics.sim.pinnace.dev/requests-per-second": "2500m"},
        },
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    cluster.run(cluster.client.create(SERVICES, "default", service))
    cluster.wait(50)

    code, listed = cluster.get(f"{CUSTOM}/namespaces/default/services/front/requests-per-second")
    assert code == 200
    assert values(listed) == ["2500m"]
    assert listed["items"][0]["describedObject"] == {
        "kind": "Service",
        "namespace": "default",
        "name": "front",
        "apiVersion": "/v1",
    }

    code, external = cluster.get(
        f"{EXTERNAL}/namespaces/default/queue_messages_ready", "labelSelector=queue%3Dtasks"
    )
    assert code == 200
    assert external["kind"] == "ExternalMetricValueList"
    [item] = external["items"]
    assert item["metricLabels"] == {"queue": "tasks"}
    assert 45 <= float(item["value"]) <= 55

    code, resources = cluster.get(CUSTOM)
    assert code == 200
    assert {
        "name": "services/requests-per-second",
        "singularName": "",
        "namespaced": True,
        "kind": "MetricValueList",
        "verbs": ["get"],
    } in resources["resources"]
    code, resources = cluster.get(EXTERNAL)
    assert [r["name"] for r in resources["resources"]] == ["queue_messages_ready"]
    code, groups = cluster.get("/apis")
    names = {g["name"]: g["preferredVersion"]["version"] for g in groups["groups"]}
    assert names["custom.metrics.k8s.io"] == "v1beta2"
    assert names["external.metrics.k8s.io"] == "v1beta1"


def test_an_object_metric_of_a_custom_resource(cluster: Cluster) -> None:
    kind = established(cluster)
    body = crontab("nightly")
    body["metadata"]["annotations"] = {"metrics.sim.pinnace.dev/queue-length": "3"}
    cluster.run(cluster.client.create(kind, "default", body))
    cluster.wait(20)

    path = f"{CUSTOM}/namespaces/default/crontabs.stable.example.com/nightly/queue-length"
    code, listed = cluster.get(path)
    assert code == 200, listed
    assert values(listed) == ["3"]
    assert listed["items"][0]["describedObject"] == {
        "kind": "CronTab",
        "namespace": "default",
        "name": "nightly",
        "apiVersion": "stable.example.com/v1",
    }
