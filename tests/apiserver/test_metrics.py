"""metrics.k8s.io/v1beta1 through the HTTP front end in process, answered from hand-made stats
summaries: discovery, node and pod metrics as metrics-server v0.7 formats them, selectors,
namespaces and NotFound."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.options import WriteOptions
from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Randomness
from pinnace.clock.rfc3339 import format_time

NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
METRICS = "/apis/metrics.k8s.io/v1beta1"
GIB = 1024**3


class Metrics:
    def __init__(self, api: Harness) -> None:
        self.api = api
        self.app = APIApp(api.server, Randomness(1))
        self.summaries: dict[str, Summary] = {}

    def serve(self) -> None:
        self.api.server.metrics_source = lambda: self.summaries

    def get(self, path: str, query: str = "", accept: str = "") -> tuple[int, Any]:
        return self.api.run(self._get(path, query, accept))

    async def _get(self, path: str, query: str, accept: str) -> tuple[int, Any]:
        headers = [(b"accept", accept.encode())] if accept else []
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "query_string": query.encode(),
            "headers": headers,
        }
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    def node(self, name: str, **labels: str) -> None:
        body = {"metadata": {"name": name, "labels": labels}}
        self.api.call(self.api.server.create, NODES, "", body)

    def pod(
        self, name: str, namespace: str = "default", phase: str = "Running", **labels: str
    ) -> None:
        body = {
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "b"}],
            },
        }
        created = clone(self.api.call(self.api.server.create, PODS, namespace, body).obj)
        created["status"] = {"phase": phase}
        self.api.call(
            self.api.server.update, PODS, namespace, name, created, WriteOptions(), "status"
        )


def stats(namespace: str, name: str, cpu_millis: int, memory_mib: int) -> PodStats:
    return PodStats(
        uid=f"uid-{name}",
        namespace=namespace,
        name=name,
        containers=[
            ContainerStats("app", cpu_millis * 1_000_000, memory_mib * 1024 * 1024),
            ContainerStats("side", 1_234_567, 1000),
        ],
    )


@pytest.fixture
def metrics(api: Harness) -> Metrics:
    return Metrics(api)


def _groups(document: Object) -> dict[str, Object]:
    return {item["metadata"].get("name", ""): item for item in document["items"]}


def test_the_group_is_served_and_discovered_only_with_a_metrics_source(metrics: Metrics) -> None:
    code, answer = metrics.get(f"{METRICS}/nodes")
    assert (code, answer["reason"]) == (404, "NotFound")
    assert "metrics.k8s.io" not in _groups(metrics.get("/apis", accept=AGGREGATED)[1])

    metrics.serve()
    group = _groups(metrics.get("/apis", accept=AGGREGATED)[1])["metrics.k8s.io"]
    [version] = group["versions"]
    assert version["version"] == "v1beta1"
    resources = {r["resource"]: r for r in version["resources"]}
    assert resources["nodes"]["responseKind"]["kind"] == "NodeMetrics"
    assert resources["nodes"]["scope"] == "Cluster"
    assert resources["pods"]["responseKind"]["kind"] == "PodMetrics"
    assert resources["pods"]["scope"] == "Namespaced"
    assert resources["pods"]["verbs"] == resources["nodes"]["verbs"] == ["get", "list"]

    names = [g["name"] for g in metrics.get("/apis")[1]["groups"]]
    assert "metrics.k8s.io" in names
    code, listed = metrics.get(METRICS)
    assert code == 200 and listed["groupVersion"] == "metrics.k8s.io/v1beta1"
    assert [r["name"] for r in listed["resources"]] == ["nodes", "pods"]


def test_node_metrics_report_cpu_in_nanocores_and_memory_working_set(metrics: Metrics) -> None:
    metrics.node("n1", zone="a")
    metrics.node("n2", zone="b")
    metrics.node("n3", zone="b")
    metrics.summaries["n1"] = Summary(1000.0, NodeStats(250_000_000, 8 * GIB, 3 * GIB))
    metrics.summaries["n2"] = Summary(1001.0, NodeStats(123_456_789, 8 * GIB, 1442164 * 1024))
    metrics.serve()

    code, listed = metrics.get(f"{METRICS}/nodes")
    assert code == 200
    assert (listed["kind"], listed["apiVersion"]) == ("NodeMetricsList", "metrics.k8s.io/v1beta1")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["n1", "n2"]  # n3: no stats
    first, second = listed["items"]
    assert first["usage"] == {"cpu": "250m", "memory": "3Gi"}
    assert second["usage"] == {"cpu": "123456789n", "memory": "1442164Ki"}
    assert first["timestamp"] == format_time(1000.0)
    assert first["window"] == "10s"
    assert first["metadata"]["labels"]["zone"] == "a"

    selected = metrics.get(f"{METRICS}/nodes", "labelSelector=zone%3Db")[1]
    assert [i["metadata"]["name"] for i in selected["items"]] == ["n2"]

    code, one = metrics.get(f"{METRICS}/nodes/n2")
    assert code == 200
    assert (one["kind"], one["metadata"]["name"]) == ("NodeMetrics", "n2")
    code, missing = metrics.get(f"{METRICS}/nodes/n3")
    assert (code, missing["message"]) == (404, 'nodemetrics.metrics.k8s.io "n3" not found')
    code, unknown = metrics.get(f"{METRICS}/nodes/ghost")
    assert (code, unknown["message"]) == (404, 'node "ghost" not found')


def test_pod_metrics_list_running_pods_per_container_by_namespace(metrics: Metrics) -> None:
    metrics.api.call(metrics.api.server.create, NAMESPACES, "", {"metadata": {"name": "other"}})
    metrics.pod("web-1", app="web")
    metrics.pod("web-2", app="web")
    metrics.pod("db-1", app="db")
    metrics.pod("pending", phase="Pending", app="web")
    metrics.pod("away", namespace="other", app="web")
    metrics.summaries["n1"] = Summary(
        500.0,
        NodeStats(1_000_000_000, 8 * GIB, 2 * GIB),
        [
            stats("default", "web-1", 100, 64),
            stats("default", "db-1", 300, 512),
            stats("default", "pending", 1, 1),
            stats("other", "away", 50, 32),
        ],
    )
    metrics.serve()

    code, listed = metrics.get(f"{METRICS}/namespaces/default/pods")
    assert code == 200 and listed["kind"] == "PodMetricsList"
    # web-2 has no stats yet and pending is not Running: both are left out
    assert [i["metadata"]["name"] for i in listed["items"]] == ["db-1", "web-1"]
    web = listed["items"][1]
    assert web["metadata"]["namespace"] == "default"
    assert web["timestamp"] == format_time(500.0) and web["window"] == "10s"
    assert web["containers"] == [
        {"name": "app", "usage": {"cpu": "100m", "memory": "64Mi"}},
        {"name": "side", "usage": {"cpu": "1234567n", "memory": "1k"}},  # as Go writes 1000
    ]

    selected = metrics.get(f"{METRICS}/namespaces/default/pods", "labelSelector=app%3Dweb")[1]
    assert [i["metadata"]["name"] for i in selected["items"]] == ["web-1"]
    everywhere = metrics.get(f"{METRICS}/pods", "labelSelector=app%3Dweb")[1]
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("default", "web-1"),
        ("other", "away"),
    ]

    code, one = metrics.get(f"{METRICS}/namespaces/other/pods/away")
    assert (code, one["kind"], one["containers"][0]["usage"]["cpu"]) == (200, "PodMetrics", "50m")
    code, missing = metrics.get(f"{METRICS}/namespaces/default/pods/web-2")
    assert (code, missing["message"]) == (
        404,
        'podmetrics.metrics.k8s.io "default/web-2" not found',
    )
    code, unknown = metrics.get(f"{METRICS}/namespaces/default/pods/ghost")
    assert (code, unknown["message"]) == (404, 'pod "ghost" not found')


def test_metrics_are_read_only_and_unknown_paths_are_not_found(metrics: Metrics) -> None:
    metrics.serve()
    assert metrics.get(f"{METRICS}/services")[0] == 404
    assert metrics.get(f"{METRICS}/pods/web")[0] == 404  # a pod needs its namespace
    code, answer = metrics.get(f"{METRICS}/nodes", "watch=true")
    assert (code, answer["reason"]) == (405, "MethodNotAllowed")


def test_kubectl_get_prints_usage_and_window_as_metrics_server_does(metrics: Metrics) -> None:
    metrics.pod("web-1")
    metrics.summaries["n1"] = Summary(
        500.0, NodeStats(250_000_000, 8 * GIB, 3 * GIB), [stats("default", "web-1", 100, 64)]
    )
    metrics.serve()
    code, table = metrics.get(f"{METRICS}/namespaces/default/pods", accept=TABLE)
    assert code == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "cpu", "memory", "Window"]
    # the pod's two containers summed: 100m + 1234567n, 64Mi + 1000 bytes
    assert [r["cells"] for r in table["rows"]] == [["web-1", "101234567n", "67109864", "10s"]]
