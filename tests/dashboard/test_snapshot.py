"""The dashboard's snapshot and its server-sent events, against the cluster they describe (a
`ControlPlane` on the virtual clock)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from tests.client.conftest import EVENTS
from tests.metrics.test_apiserver_metrics import call
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.dashboard import Dashboard
from pinnace.kubelet.config import node_configs

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")


def pod(name: str, cpu: str, memory: str = "64Mi") -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    container = {"name": "main", "image": "nginx", "resources": resources}
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    running = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=1))
    yield running
    running.close()


def dashboard_of(cluster: SimulatedCluster) -> Dashboard:
    """The cluster's dashboard, its caches started (as a first page view starts them)."""
    assert cluster.plane.dashboard is not None
    cluster.run(cluster.plane.dashboard.ready())
    return cluster.plane.dashboard


def test_nodes_show_allocatable_requested_and_used_and_pending_pods_the_schedulers_reason(
    cluster: SimulatedCluster,
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("web", "250m")))
    cluster.run(cluster.client.create(PODS, "default", pod("huge", "100")))
    template = {"metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}  # fmt: skip
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": "api"}}, "template": template}
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", {"metadata": {"name": "api"},
                                                              "spec": spec}))  # fmt: skip
    cluster.wait(30)
    shown = dashboard_of(cluster).snapshot()

    (node,) = shown["nodes"]
    assert node["ready"] and not node["unschedulable"] and node["pressures"] == []
    assert node["resources"]["cpu"]["allocatable"] == 4
    assert node["resources"]["cpu"]["requested"] == 0.25  # web; the Deployment's pod asks none
    assert node["resources"]["memory"]["requested"] == 64 * 2**20
    assert node["resources"]["pods"]["requested"] == 2
    assert node["resources"]["cpu"]["used"] is not None
    qos = {p["name"]: p["qos"] for p in node["pods"]}
    assert qos.pop("web") == "Burstable"
    assert list(qos.values()) == ["BestEffort"]
    (pending,) = shown["pending"]
    assert (pending["name"], pending["reason"]) == ("huge", "FailedScheduling")
    assert "Insufficient cpu" in pending["message"]
    (deployment,) = shown["workloads"]["deployments"]
    assert (deployment["name"], deployment["desired"], deployment["ready"]) == ("api", 1, 1)
    assert any(e["reason"] == "FailedScheduling" for e in shown["events"])


def test_each_change_is_pushed_to_the_events_stream(cluster: SimulatedCluster) -> None:
    dashboard = dashboard_of(cluster)

    async def first_pod_message() -> dict[str, Any]:
        response = await dashboard.respond("/events")
        assert response.content_type == "text/event-stream" and response.stream is not None
        assert await anext(response.stream) == b"retry: 2000\n\n"
        await cluster.client.create(PODS, "default", pod("web", "250m"))
        async for chunk in response.stream:
            message = orjson.loads(chunk.removeprefix(b"data: "))
            if message["kind"] == "pods":
                await response.stream.aclose()
                return dict(message)
        raise AssertionError("the stream ended")

    message = cluster.run(asyncio.wait_for(first_pod_message(), 60))
    assert (message["type"], message["namespace"], message["name"]) == ("ADDED", "default", "web")
    assert message["node"] == ""  # not bound yet


def test_a_snapshot_of_some_nodes_has_only_their_cards_and_every_pending_pod(
    cluster: SimulatedCluster,
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("web", "250m")))
    cluster.run(cluster.client.create(PODS, "default", pod("huge", "100")))
    cluster.wait(30)
    dashboard = dashboard_of(cluster)

    (node,) = dashboard.snapshot(["pinnace-node-1", "gone"])["nodes"]
    assert node == dashboard.snapshot()["nodes"][0]
    assert [p["name"] for p in node["pods"]] == ["web"]
    none = dashboard.snapshot([])
    assert none["nodes"] == [] and [p["name"] for p in none["pending"]] == ["huge"]
    cluster.run(cluster.client.delete(PODS, "default", "web"))
    cluster.wait(30)
    assert dashboard.snapshot(["pinnace-node-1"])["nodes"][0]["pods"] == []


def test_the_http_front_end_serves_the_page_plotly_and_the_snapshot(
    cluster: SimulatedCluster,
) -> None:
    app = cluster.plane.http_app()
    assert cluster.run(call(app, "GET", "/dashboard"))[0] == 301
    status, page = cluster.run(call(app, "GET", "/dashboard/"))
    assert status == 200 and b'<script src="dashboard.js"' in page
    status, plotly = cluster.run(call(app, "GET", "/dashboard/plotly.min.js"))
    assert status == 200 and b"plotly.js" in plotly[:500]
    status, body = cluster.run(call(app, "GET", "/dashboard/api/snapshot"))
    assert status == 200 and [n["name"] for n in orjson.loads(body)["nodes"]] == ["pinnace-node-1"]
    status, body = cluster.run(call(app, "GET", "/dashboard/api/snapshot/pinnace-node-1,other"))
    assert status == 200 and [n["name"] for n in orjson.loads(body)["nodes"]] == ["pinnace-node-1"]
    status, body = cluster.run(call(app, "GET", "/dashboard/api/snapshot/"))
    assert status == 200 and orjson.loads(body)["nodes"] == []
    assert cluster.run(call(app, "GET", "/dashboard/nothing"))[0] == 404
    assert cluster.run(call(app, "POST", "/dashboard/api/snapshot"))[0] == 405


def test_the_latest_events_follow_the_events_as_they_come_change_and_go(
    cluster: SimulatedCluster,
) -> None:
    """The snapshot's latest Events, kept from the informer's notifications, are what sorting
    every Event gives: after more than twice as many as it shows, an older one updated to the
    latest time, and deletions of those it showed."""
    dashboard = dashboard_of(cluster)

    def event(i: int, second: int) -> dict[str, Any]:
        return {
            "metadata": {"name": f"e{i:03d}"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reason": f"r{i:03d}",
            "type": "Normal",
            "lastTimestamp": f"2999-01-01T00:{second // 60:02d}:{second % 60:02d}Z",
        }

    def reasons() -> list[str]:
        return [e["reason"] for e in dashboard.snapshot()["events"]]

    for i in range(120):
        cluster.run(cluster.client.create(EVENTS, "default", event(i, i)))
    cluster.wait(1)
    assert reasons() == [f"r{i:03d}" for i in range(70, 120)]

    oldest = copy.deepcopy(cluster.run(cluster.client.get(EVENTS, "default", "e000")))
    oldest["lastTimestamp"] = event(0, 150)["lastTimestamp"]  # repeated: the latest now
    cluster.run(cluster.client.update(EVENTS, oldest))
    cluster.wait(1)
    assert reasons() == [f"r{i:03d}" for i in (*range(71, 120), 0)]

    for i in (0, *range(119, 99, -1)):
        cluster.run(cluster.client.delete(EVENTS, "default", f"e{i:03d}"))
    cluster.wait(1)
    assert reasons() == [f"r{i:03d}" for i in range(50, 100)]
