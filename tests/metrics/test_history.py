"""The usage history: samples at a fixed resolution for a bounded window, filled from the
cluster on the virtual clock, read by the dashboard."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.api.status import StatusError
from pinnace.apiserver.agent_summaries import AgentSummaries
from pinnace.clock.virtual import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.kubelet.endpoints import stats_summary
from pinnace.metrics.history import UsageHistory
from pinnace.metrics.recorder import HistoryRecorder
from pinnace.store import MemoryStore

from .test_apiserver_metrics import call

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
NODES = catalog.kind("", "nodes")
MI = 1024 * 1024
GI = 1024 * MI


def test_the_cluster_series_keep_the_last_window_oldest_first() -> None:
    history = UsageHistory(resolution=10, window=30, object_window=20)
    for tick in range(5):
        history.record(100.0 + 10 * tick, {"cpu_used": tick}, {}, {})
    series = history.cluster_series()
    assert series["time"] == [120.0, 130.0, 140.0]
    assert series["cpu_used"] == [2.0, 3.0, 4.0]
    assert history.cluster_series(since=135)["cpu_used"] == [4.0]


def test_a_series_seen_late_has_nothing_before_it() -> None:
    history = UsageHistory(resolution=10, window=30, object_window=30)
    history.record(0, {"a": 1}, {}, {})
    history.record(10, {"a": 2, "b": 5}, {}, {})
    assert history.cluster_series()["b"] == [None, 5.0]


def test_a_pod_has_samples_only_while_it_ran_and_its_row_is_reused_a_window_later() -> None:
    history = UsageHistory(resolution=10, window=40, object_window=20)
    history.record(0, {}, {"ns/a": {"c": (0.5, 100.0)}}, {})
    history.record(10, {}, {"ns/a": {"c": (0.25, 200.0)}, "ns/b": {"c": (1.0, 1.0)}}, {})
    assert history.pod("ns/a") == {
        "time": [0.0, 10.0],
        "cpu": [0.5, 0.25],
        "memory": [100.0, 200.0],
    }
    history.record(20, {}, {"ns/b": {"c": (1.0, 1.0)}}, {})
    assert history.pod("ns/a") == {
        "time": [10.0, 20.0],
        "cpu": [0.25, None],
        "memory": [200.0, None],
    }
    history.record(30, {}, {"ns/b": {"c": (1.0, 1.0)}}, {})
    history.record(40, {}, {"ns/b": {"c": (1.0, 1.0)}}, {})  # a whole window since ns/a
    assert history.pod("ns/a") is None
    history.record(50, {}, {"ns/c": {"c": (2.0, 2.0)}}, {})
    assert len(history.containers) == 2  # ns/b's and ns/c's, ns/c's in ns/a's old row
    assert history.pod("ns/c") == {"time": [40.0, 50.0], "cpu": [None, 2.0], "memory": [None, 2.0]}


def test_a_pods_usage_is_kept_per_container_and_summed_when_read() -> None:
    history = UsageHistory(resolution=10, window=40, object_window=30)
    history.record(0, {}, {"ns/a": {"app": (0.5, 100.0), "log": (0.01, 10.0)}}, {})
    history.record(10, {}, {"ns/a": {"app": (0.25, 200.0)}}, {})  # log not sampled
    history.record(20, {}, {}, {})
    assert history.container("ns/a", "app") == {
        "time": [0.0, 10.0, 20.0],
        "cpu": [0.5, 0.25, None],
        "memory": [100.0, 200.0, None],
    }
    log = history.container("ns/a", "log")
    assert log is not None and log["memory"] == [10.0, None, None]
    total = history.pod("ns/a")
    assert total is not None
    assert total["cpu"] == [pytest.approx(0.51), 0.25, None]
    assert total["memory"] == [110.0, 200.0, None]
    assert history.container("ns/a", "none") is None
    for time in (30, 40, 50, 60):  # the rows are freed at the first tick of a window
        history.record(time, {}, {}, {})  # a whole window after ns/a was last seen
    assert history.pod("ns/a") is None and history.container("ns/a", "app") is None


def test_a_container_costs_its_window_of_two_float32_fields() -> None:
    history = UsageHistory()  # 10 s for an hour: 360 samples
    two = {"app": (0.1, 1.0), "sidecar": (0.01, 1.0)}
    history.record(0, {}, {f"ns/p{i}": two for i in range(1000)}, {})
    row = 360 * 2 * 4 + 8  # the samples, and when the container was last seen
    assert 2000 * row <= history.containers.nbytes <= 2048 * row  # rows grow by doubling


def test_a_window_shorter_than_the_resolution_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        UsageHistory(resolution=10, window=5)


def pod(name: str, uses: dict[str, str], requests: dict[str, str], limits: dict[str, str]) -> Any:
    container = {
        "name": "main",
        "image": "busybox",
        "command": ["sleep", "infinity"],
        "resources": {"requests": requests, "limits": limits},
    }
    annotations = {f"sim.pinnace.dev/{k}": v for k, v in uses.items()}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [container]},
    }


def test_the_recorder_samples_usage_requests_the_queue_and_oom_kills() -> None:
    history = UsageHistory(resolution=10, window=600, object_window=300)

    async def scenario() -> None:
        options = ClusterOptions(nodes=node_configs(1), usage_history=history)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
        client = plane.client()
        await client.create(PODS, "default", pod("steady", {"cpu": "300m"}, {"cpu": "500m"}, {}))
        leaky = pod("leaky", {"memory": "100Mi"}, {"memory": "32Mi"}, {"memory": "64Mi"})
        await client.create(PODS, "default", leaky)
        await client.create(PODS, "default", pod("huge", {}, {"cpu": "64"}, {}))
        deployment = {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }
        await client.create(DEPLOYMENTS, "default", deployment)
        await asyncio.sleep(3600)  # past every window, to see them stay bounded
        await plane.stop()

    with VirtualClock() as clock:
        clock.run(scenario())
    series = history.cluster_series()
    assert len(series["time"]) == 60  # ten minutes at 10 s, after an hour
    assert series["time"] == sorted(series["time"])
    last = {name: values[-1] for name, values in series.items()}
    assert last["cpu_requested"] == pytest.approx(0.5)  # bound pods only: not huge
    assert last["memory_requested"] == 32 * MI
    assert last["cpu_allocatable"] > 0 and last["memory_allocatable"] > 0
    assert last["pods_pending"] == 1  # huge
    assert last["cpu_used"] >= 0.3
    assert sum(v for v in series["oom_kills"] if v) >= 1  # leaky, restarted with back-off
    steady = history.pod("default/steady")
    assert steady is not None and steady["cpu"][-1] == pytest.approx(0.3)
    web = history.workload("deployments/default/web")
    assert web is not None and web["desired"][-1] == 2 and web["ready"][-1] == 2


def test_evictions_are_counted_from_their_events_and_their_counts() -> None:
    events = catalog.kind("", "events")

    def event(name: str, reason: str, count: int) -> dict[str, Any]:
        involved = {"kind": "Pod", "namespace": "default", "name": name}
        return {
            "metadata": {"name": f"{name}.{reason.lower()}"},
            "involvedObject": involved,
            "reason": reason,
            "message": reason,
            "type": "Warning",
            "count": count,
            "source": {"component": "test"},
        }

    async def scenario() -> list[float]:
        history = UsageHistory(resolution=10, window=600, object_window=300)
        options = ClusterOptions(nodes=node_configs(1), usage_history=history)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
        client = plane.client()
        await asyncio.sleep(10)
        for name, reason, count in (
            ("a", "Evicted", 1),
            ("b", "TaintManagerEviction", 1),
            ("c", "Preempted", 2),
            ("d", "Killing", 5),  # not an eviction
        ):
            await client.create(events, "default", event(name, reason, count))
        await asyncio.sleep(10)
        evicted = await client.get(events, "default", "a.evicted")
        await client.update(events, evicted | {"count": 4})  # seen 3 times more
        killing = await client.get(events, "default", "d.killing")
        await client.update(events, killing | {"count": 9})
        await asyncio.sleep(15)
        await plane.stop()
        return [v for v in history.cluster_series()["evictions"] if v is not None]

    with VirtualClock() as clock:
        counted = clock.run(scenario())
    assert sum(counted) == 1 + 1 + 2 + 3
    assert [v for v in counted if v] == [4, 3]


def test_the_dashboard_serves_the_history() -> None:
    async def scenario() -> list[tuple[int, Any]]:
        plane = ControlPlane(MemoryStore(), clock, ClusterOptions(nodes=node_configs(1)))
        await plane.start()
        app = plane.http_app()
        await asyncio.sleep(60)
        answers = []
        for path in ("history", "workloads/deployments/default/none", "workloads/pods/a/b"):
            code, body = await call(app, "GET", f"/dashboard/api/{path}")
            answers.append((code, json.loads(body)))
        await plane.stop()
        return answers

    with VirtualClock() as clock:
        (code, history), (missing, _), (not_a_workload, _) = clock.run(scenario())
    assert code == 200 and history["resolution"] == 10
    assert len(history["series"]["time"]) == 7  # at the start, then every 10 s for a minute
    assert history["series"]["pods_running"][-1] == 0
    assert history["fragmentation"] == {}  # no workloads, no shapes
    assert missing == not_a_workload == 404


def deployment(name: str, requests: dict[str, str]) -> Any:
    labels = {"app": name}
    resources = {"requests": requests, "limits": {k: v for k, v in requests.items() if "/" in k}}
    container = {"name": "c", "image": "nginx", "resources": resources}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def test_fragmentation_is_sampled_per_template_shape() -> None:
    history = UsageHistory(resolution=10, window=600, object_window=300)

    async def scenario() -> None:
        options = ClusterOptions(nodes=node_configs(2), usage_history=history)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
        client = plane.client()
        shape = {"cpu": "1500m", "memory": "1Gi"}
        for name, requests in (("big", shape), ("twin", shape), ("gpu", {"example.com/gpu": "1"})):
            await client.create(DEPLOYMENTS, "default", deployment(name, requests))
        await client.create(DEPLOYMENTS, "default", deployment("none", {}))
        await asyncio.sleep(30)
        await plane.stop()

    with VirtualClock() as clock:
        clock.run(scenario())
    series = history.cluster_series()
    cpu = round(series["cpu_allocatable"][-1] * 1000 / 2)  # millicores a node, both alike
    memory = round(series["memory_allocatable"][-1] / 2)
    fits = min(cpu // 1500, memory // GI)
    frag = history.fragmentation()
    # the twin has big's shape; a template without requests strands nothing it asks for
    assert set(frag) == {"deployments/default/big", "deployments/default/gpu",
                         "deployments/default/none"}  # fmt: skip
    big = frag["deployments/default/big"]
    assert big["cpu"][-1] == pytest.approx((cpu - fits * 1500) / cpu)
    assert big["memory"][-1] == pytest.approx((memory - fits * GI) / memory)
    assert frag["deployments/default/gpu"]["cpu"][-1] == 1.0  # no node has the resource
    assert frag["deployments/default/none"]["cpu"][-1] is None


def test_a_vpas_recommendation_is_kept_and_served() -> None:
    vpas = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"targetRef": target, "updatePolicy": {"updateMode": "Off"}},
    }
    recommendation = {
        "containerRecommendations": [
            {"containerName": "a", "target": {"cpu": "250m", "memory": "100Mi"}},
            {"containerName": "b", "target": {"cpu": "1", "memory": "28Mi"}},
        ]
    }

    async def scenario() -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
        plane = ControlPlane(MemoryStore(), clock, ClusterOptions(nodes=node_configs(1)))
        await plane.start()
        app = plane.http_app()
        client = plane.client()
        created = await client.create(vpas, "default", vpa)
        await asyncio.sleep(30)
        created = await client.get(vpas, "default", "web")
        created["status"] = {"recommendation": recommendation}
        await client.update_status(vpas, created)
        await asyncio.sleep(30)
        _, body = await call(app, "GET", "/dashboard/api/workloads/vpas/default/web")
        _, snapshot = await call(app, "GET", "/dashboard/api/snapshot")
        await plane.stop()
        assert plane.history is not None
        return (
            plane.history.recommendation("default/web"),
            json.loads(body),
            json.loads(snapshot)["workloads"]["vpas"],
        )

    with VirtualClock() as clock:
        kept, served, shown = clock.run(scenario())
    assert kept is not None and kept["cpu"][0] is None  # no recommendation at first
    assert kept["cpu"][-1] == 1.25 and kept["memory"][-1] == 128 * MI
    assert served == kept
    (row,) = shown
    assert (row["target"], row["mode"], row["cpu"], row["memory"]) == (
        "Deployment/web",
        "Off",
        1.25,
        128 * MI,
    )


def test_the_recorder_scrapes_agents_nodes_and_samples_on_without_those_that_do_not_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The nodes of `pinnace agent` processes (labelled pinnace.dev/agent) are scraped every
    sample; one whose kubelet refuses, or does not answer, is left out, told once, and the
    samples keep their resolution."""
    history = UsageHistory(resolution=10, window=600, object_window=300)
    hello = PodStats("uid-1", "default", "hello", [ContainerStats("hello", 250_000_000, 100 * MI)])

    class Kubelets:
        """Kubelets of an agent that serves each node's /stats/summary only."""

        def remote(self, node: dict[str, Any]) -> bool:
            return True

        async def get(self, node: dict[str, Any], path: str) -> AsyncIterator[bytes]:
            name = node["metadata"]["name"]
            if path != "/stats/summary":
                raise StatusError(404, "NotFound", "404 page not found\n")
            if name == "far-2":
                raise StatusError(500, "", f'Get "http://far:10250{path}": connection refused')
            if name == "far-3":
                await asyncio.Event().wait()  # never answers
            summary = Summary(
                clock.now(), NodeStats(250_000_000, memory_working_set_bytes=100 * MI), [hello]
            )
            return _body(stats_summary(name, summary, [], 0.0, {}))

    scrape = AgentSummaries(Kubelets(), " for the usage history").scrape

    async def scenario() -> None:
        options = ClusterOptions(nodes=[], scheduler=False, controllers=False, dashboard=False)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
        client = plane.client()
        for i in (1, 2, 3):
            labels = {"pinnace.dev/agent": "far"}
            await client.create(NODES, "", {"metadata": {"name": f"far-{i}", "labels": labels}})
        recorder = HistoryRecorder(client, history, dict, None, lambda: 0, scrape)
        await recorder.start()
        await asyncio.sleep(60)
        await recorder.stop()
        await plane.stop()

    with VirtualClock() as clock, caplog.at_level(logging.WARNING):
        clock.run(scenario())
    series = history.container("default/hello", "hello")
    assert series is not None and len(series["time"]) >= 6
    assert set(series["cpu"]) == {0.25} and set(series["memory"]) == {100 * MI}
    first = series["time"][0]
    assert first is not None
    assert series["time"] == [first + 10.0 * i for i in range(len(series["time"]))]
    assert history.cluster_series()["pods_running"][-1] == 1
    told = [r.getMessage() for r in caplog.records if "for the usage history" in r.getMessage()]
    assert len(told) == 2
    assert "far-2" in told[0] and "connection refused" in told[0]
    assert "far-3" in told[1] and "no answer in time" in told[1]


async def _body(data: bytes) -> AsyncIterator[bytes]:
    yield data
