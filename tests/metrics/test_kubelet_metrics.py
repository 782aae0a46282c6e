"""A node's kubelet endpoints through the API server's node proxy, on the virtual clock: the
CPU counters rise at the rate the usage model gives (capped at the limit, the rest throttled),
the working set and limits are the pods'."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Metric, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from pinnace.api import catalog
from pinnace.clock.rfc3339 import parse_time
from pinnace.clock.virtual import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.store import MemoryStore

from .test_apiserver_metrics import Samples, call, samples

PODS = catalog.kind("", "pods")
MI = 1024 * 1024


def pod(name: str, uses: str, limits: dict[str, str]) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "busybox:1.36",
        "command": ["sleep", "infinity"],
        "resources": {"limits": limits},
    }
    annotations = {"sim.pinnace.dev/cpu": uses, "sim.pinnace.dev/memory": "40Mi"}
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [container]},
    }


async def one_node(clock: VirtualClock, housekeeping_interval: float = 10.0) -> ControlPlane:
    """A started cluster of one node and no controllers, on the virtual clock."""
    options = ClusterOptions(
        nodes=node_configs(1), controllers=False, housekeeping_interval=housekeeping_interval
    )
    plane = ControlPlane(MemoryStore(), clock, options)
    await plane.start()
    return plane


def series(found: Samples, name: str, pod: str) -> tuple[float, dict[str, str]]:
    for (sample, labels), value in found.items():
        if sample == name and dict(labels).get("pod") == pod:
            return value, dict(labels)
    raise KeyError((name, pod))


def test_cadvisor_and_resource_metrics_follow_the_usage_model() -> None:
    async def scenario() -> tuple[Samples, Samples, Samples, dict[str, Any]]:
        plane = await one_node(clock)
        app = plane.http_app()
        client = plane.client()
        await client.create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await client.create(PODS, "default", pod("hungry", "250m", {"cpu": "100m"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        proxy = f"/api/v1/nodes/{node}/proxy"
        _, first = await call(app, "GET", f"{proxy}/metrics/cadvisor")
        await asyncio.sleep(60)
        _, second = await call(app, "GET", f"{proxy}/metrics/cadvisor")
        _, resource = await call(app, "GET", f"{proxy}/metrics/resource")
        _, summary = await call(app, "GET", f"{proxy}/stats/summary")
        code, _ = await call(app, "GET", f"{proxy}/metrics/nothing")
        assert code == 404
        await plane.stop()
        return samples(first), samples(second), samples(resource), json.loads(summary)

    with VirtualClock() as clock:
        first, second, resource, summary = clock.run(scenario())

    def rate(name: str, pod: str) -> float:
        return (series(second, name, pod)[0] - series(first, name, pod)[0]) / 60

    cpu = "container_cpu_usage_seconds_total"
    assert abs(rate(cpu, "steady") - 0.150) < 1e-6
    assert abs(rate(cpu, "hungry") - 0.100) < 1e-6  # capped at its limit
    _, labels = series(second, cpu, "steady")
    assert labels["namespace"] == "default" and labels["container"] == "main"
    assert labels["image"] == "docker.io/library/busybox:1.36"  # as the runtime names it
    assert labels["id"].startswith("/kubepods/pod") and labels["name"]
    periods = "container_cpu_cfs_periods_total"
    assert rate(periods, "hungry") == 10  # 100 ms periods
    assert rate("container_cpu_cfs_throttled_periods_total", "hungry") == 10
    assert abs(rate("container_cpu_cfs_throttled_seconds_total", "hungry") - 0.150) < 1e-6
    assert not any(n == periods and dict(ls)["pod"] == "steady" for n, ls in second)
    assert series(second, "container_memory_working_set_bytes", "steady")[0] == 40 * MI
    assert series(second, "container_spec_memory_limit_bytes", "steady")[0] == 64 * MI
    assert series(second, "container_spec_memory_limit_bytes", "hungry")[0] == 0
    assert series(second, "container_oom_events_total", "hungry")[0] == 0
    assert series(resource, cpu, "steady")[0] == series(second, cpu, "steady")[0]
    assert series(resource, "pod_memory_working_set_bytes", "hungry")[0] == 40 * MI
    node_cpu = resource["node_cpu_usage_seconds_total", frozenset()]
    assert node_cpu > 0
    pods = {p["podRef"]["name"]: p for p in summary["pods"]}
    assert pods["steady"]["cpu"]["usageNanoCores"] == 150_000_000
    assert pods["hungry"]["memory"]["workingSetBytes"] == 40 * MI


def test_cadvisor_samples_carry_the_time_of_their_stats() -> None:
    """As cAdvisor's do, so that Prometheus computes rates from when the usage was read, not
    from when its scrape happened to be answered."""

    async def scenario() -> tuple[bytes, float]:
        plane = await one_node(clock)
        app = plane.http_app()
        await plane.client().create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        _, text = await call(app, "GET", f"/api/v1/nodes/{node}/proxy/metrics/cadvisor")
        # The kubelet's resource metrics are stamped so too (NewLazyMetricWithTimestamp).
        _, resource = await call(app, "GET", f"/api/v1/nodes/{node}/proxy/metrics/resource")
        now = plane.clock.now()
        await plane.stop()
        return text + resource, now

    with VirtualClock() as clock:
        text, now = clock.run(scenario())
    unstamped = ("container_start_time_seconds", "resource_scrape_error")
    lines = [line for line in text.decode().splitlines() if not line.startswith(("#", *unstamped))]
    assert any(line.startswith("node_cpu_usage_seconds_total") for line in lines)
    assert any(line.startswith("pod_memory_working_set_bytes") for line in lines)
    for line in lines:
        stamp = int(line.rsplit(" ", 1)[1])
        assert now * 1000 - 10_000 <= stamp <= now * 1000  # milliseconds, within a sync


def test_a_node_is_read_once_per_housekeeping_interval() -> None:
    """As cAdvisor reads a node's containers every housekeeping interval (10 s) and serves its
    last reading: every path, and every scrape within the interval, has the same reading; a
    scrape after it, a new one."""

    async def scenario() -> tuple[bytes, bytes, bytes, bytes]:
        plane = await one_node(clock)
        app = plane.http_app()
        await plane.client().create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        proxy = f"/api/v1/nodes/{node}/proxy"
        _, first = await call(app, "GET", f"{proxy}/metrics/cadvisor")
        await asyncio.sleep(9)
        _, again = await call(app, "GET", f"{proxy}/metrics/cadvisor")
        _, resource = await call(app, "GET", f"{proxy}/metrics/resource")
        await asyncio.sleep(1)
        _, later = await call(app, "GET", f"{proxy}/metrics/cadvisor")
        await plane.stop()
        return first, again, resource, later

    with VirtualClock() as clock:
        first, again, resource, later = clock.run(scenario())
    assert again == first
    cpu = "container_cpu_usage_seconds_total"
    assert series(samples(resource), cpu, "steady")[0] == series(samples(first), cpu, "steady")[0]
    assert abs(series(samples(later), cpu, "steady")[0] - series(samples(first), cpu, "steady")[0]
               - 0.150 * 10) < 1e-6  # fmt: skip


def test_the_housekeeping_interval_is_the_kubelet_s_flag() -> None:
    """--housekeeping-interval 2s: a scrape 2 s after a reading has a new one, one a second
    after that the same."""

    async def scenario() -> tuple[bytes, bytes, bytes]:
        plane = await one_node(clock, housekeeping_interval=2.0)
        app = plane.http_app()
        await plane.client().create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        cadvisor = f"/api/v1/nodes/{node}/proxy/metrics/cadvisor"
        _, first = await call(app, "GET", cadvisor)
        await asyncio.sleep(2)
        _, second = await call(app, "GET", cadvisor)
        await asyncio.sleep(1)
        _, again = await call(app, "GET", cadvisor)
        await plane.stop()
        return first, second, again

    with VirtualClock() as clock:
        first, second, again = clock.run(scenario())
    cpu = "container_cpu_usage_seconds_total"
    used = [series(samples(body), cpu, "steady")[0] for body in (first, second)]
    assert abs(used[1] - used[0] - 0.150 * 2) < 1e-6
    assert again == second


def test_a_container_started_within_the_interval_is_read_at_once() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        plane = await one_node(clock)
        app, client = plane.http_app(), plane.client()
        await client.create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        summary = f"/api/v1/nodes/{node}/proxy/stats/summary"
        _, before = await call(app, "GET", summary)
        await client.create(PODS, "default", pod("late", "250m", {"memory": "64Mi"}))
        await asyncio.sleep(3)
        _, after = await call(app, "GET", summary)
        await plane.stop()
        return before, after

    with VirtualClock() as clock:
        before, after = clock.run(scenario())
    assert [p["podRef"]["name"] for p in json.loads(before)["pods"]] == ["steady"]
    pods = {p["podRef"]["name"]: p for p in json.loads(after)["pods"]}
    assert pods["late"]["cpu"]["usageNanoCores"] == 250_000_000


def test_the_text_is_what_prometheus_client_writes_of_the_same_families() -> None:
    """The endpoints write the text format themselves: parsed and written again by
    prometheus_client, it comes out byte for byte the same (HELP, TYPE, label order, value
    and timestamp formats)."""

    async def scenario() -> list[bytes]:
        plane = await one_node(clock)
        app = plane.http_app()
        client = plane.client()
        await client.create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await client.create(
            PODS, "default", pod("hungry", "periodic 100m 900m 60s", {"cpu": "300m"})
        )
        await asyncio.sleep(97.3)
        (node,) = plane.nodes.agents
        bodies = []
        for path in ("/metrics/cadvisor", "/metrics/resource", "/metrics"):
            _, body = await call(app, "GET", f"/api/v1/nodes/{node}/proxy{path}")
            bodies.append(body)
        await plane.stop()
        return bodies

    with VirtualClock() as clock:
        bodies = clock.run(scenario())
    for body in bodies:
        families = list(text_string_to_metric_families(body.decode()))
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Parsed(families))
        assert generate_latest(registry) == body
    assert b"container_cpu_cfs_throttled_periods_total{" in bodies[0]


class _Parsed(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def test_a_scrape_through_the_node_proxy_is_counted_as_kube_apiserver_counts_it() -> None:
    # kube-apiserver's RequestInfo stops at the `proxy` subresource: every node's scrape of
    # every path counts in one series, verb CONNECT, not one series per node and path.
    async def scenario() -> Samples:
        plane = await one_node(clock)
        app = plane.http_app()
        (node,) = plane.nodes.agents
        for path in ("metrics/cadvisor", "metrics/cadvisor", "metrics/resource", "stats/summary"):
            assert (await call(app, "GET", f"/api/v1/nodes/{node}/proxy/{path}"))[0] == 200
        _, text = await call(app, "GET", "/metrics")
        await plane.stop()
        return samples(text)

    with VirtualClock() as clock:
        found = clock.run(scenario())
    proxied = {
        "verb": "CONNECT",
        "dry_run": "",
        "group": "",
        "version": "v1",
        "resource": "nodes",
        "subresource": "proxy",
        "scope": "resource",
        "component": "apiserver",
    }
    assert found["apiserver_request_total", frozenset({**proxied, "code": "200"}.items())] == 4
    assert not any("proxy/" in dict(labels).get("subresource", "") for _, labels in found)


def test_the_node_counter_holds_all_its_containers_have_used() -> None:
    """A node's CPU seconds count the usage of every container that ran on it, as the root
    cgroup's do: never less than its containers' sum, from the first scrape on, and not less
    once a container has gone."""

    async def scenario() -> tuple[Samples, dict[str, Any], Samples, Samples]:
        plane = await one_node(clock)
        app, client = plane.http_app(), plane.client()
        await client.create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await client.create(PODS, "default", pod("brief", "250m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        proxy = f"/api/v1/nodes/{node}/proxy"
        _, first = await call(app, "GET", f"{proxy}/metrics/resource")
        _, summary = await call(app, "GET", f"{proxy}/stats/summary")
        await asyncio.sleep(20)
        _, before = await call(app, "GET", f"{proxy}/metrics/resource")
        await client.delete(PODS, "default", "brief")
        await asyncio.sleep(40)
        _, after = await call(app, "GET", f"{proxy}/metrics/resource")
        await plane.stop()
        return samples(first), json.loads(summary), samples(before), samples(after)

    with VirtualClock() as clock:
        first, summary, before, after = clock.run(scenario())

    def node_and_pods(found: Samples) -> tuple[float, float]:
        pods = sum(v for (name, _), v in found.items() if name == "pod_cpu_usage_seconds_total")
        return found["node_cpu_usage_seconds_total", frozenset()], pods

    node, pods = node_and_pods(first)
    assert pods > 0.4 * 25  # both pods, credited since they started
    assert node >= pods - 1e-6
    nanoseconds = sum(p["cpu"]["usageCoreNanoSeconds"] for p in summary["pods"])
    assert summary["node"]["cpu"]["usageCoreNanoSeconds"] >= nanoseconds
    node_before, _ = node_and_pods(before)
    node_after, pods_after = node_and_pods(after)
    assert node_after >= pods_after
    assert node_after >= node_before + 0.150 * 40 - 1e-6  # steady's, and brief's kept


def test_running_containers_are_counted_by_state() -> None:
    """kubelet_running_containers{container_state} counts the runtime's containers by state,
    as the kubelet's PLEG does: a container that crashed and waits to restart is `exited`."""

    async def scenario() -> Samples:
        plane = await one_node(clock)
        app, client = plane.http_app(), plane.client()
        await client.create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        crashing = pod("crashing", "10m", {"memory": "64Mi"})
        crashing["metadata"]["annotations"] |= {
            "sim.pinnace.dev/run-seconds": "5",
            "sim.pinnace.dev/exit-code": "1",
        }
        await client.create(PODS, "default", crashing)
        await asyncio.sleep(12)  # crashing has exited twice, and waits 10 s to start again
        (node,) = plane.nodes.agents
        _, text = await call(app, "GET", f"/api/v1/nodes/{node}/proxy/metrics")
        await plane.stop()
        return samples(text)

    with VirtualClock() as clock:
        found = clock.run(scenario())
    running = "kubelet_running_containers"
    assert found[running, frozenset({("container_state", "running")})] == 1
    assert found[running, frozenset({("container_state", "exited")})] >= 1
    assert found["kubelet_running_pods", frozenset()] == 2


def test_a_pods_cpu_seconds_hold_its_restarted_containers_usage() -> None:
    """A pod's CPU seconds are its cgroup's, which outlives its containers: a container that
    crashes and is started again does not take the pod's count back to zero."""

    async def scenario() -> list[tuple[Samples, dict[str, Any]]]:
        plane = await one_node(clock)
        app, client = plane.http_app(), plane.client()
        crashing = pod("crashing", "500m", {"memory": "64Mi"})
        crashing["metadata"]["annotations"]["sim.pinnace.dev/run-seconds"] = "20"
        await client.create(PODS, "default", crashing)
        (node,) = plane.nodes.agents
        proxy = f"/api/v1/nodes/{node}/proxy"
        readings = []
        for _ in range(6):  # across its first runs and restarts
            await asyncio.sleep(10)
            _, resource = await call(app, "GET", f"{proxy}/metrics/resource")
            _, summary = await call(app, "GET", f"{proxy}/stats/summary")
            readings.append((samples(resource), json.loads(summary)))
        await plane.stop()
        return readings

    with VirtualClock() as clock:
        readings = clock.run(scenario())
    labels = frozenset({("namespace", "default"), ("pod", "crashing")})
    seconds = [found.get(("pod_cpu_usage_seconds_total", labels)) for found, _ in readings]
    nanoseconds = [summary["pods"][0]["cpu"]["usageCoreNanoSeconds"] for _, summary in readings]
    assert all(s is not None for s in seconds), seconds  # a pod waiting to restart too
    assert seconds == sorted(seconds) and seconds[-1] > 0.5 * 25, seconds  # type: ignore[type-var]
    assert nanoseconds == sorted(nanoseconds), nanoseconds


def test_resource_metrics_are_v1_32s_families() -> None:
    """The resource metrics collector's families (pkg/kubelet/metrics/collectors/
    resource_metrics.go), in name order as the Go registry gathers them: each container's start
    time (unstamped), swap usage 0 (the nodes have no swap) and no scrape error."""

    async def scenario() -> tuple[str, float]:
        plane = await one_node(clock)
        app = plane.http_app()
        await plane.client().create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        _, text = await call(app, "GET", f"/api/v1/nodes/{node}/proxy/metrics/resource")
        status = await plane.client().get(PODS, "default", "steady")
        (container,) = status["status"]["containerStatuses"]
        started = container["state"]["running"]["startedAt"]
        await plane.stop()
        return text.decode(), parse_time(started)

    with VirtualClock() as clock:
        text, started = clock.run(scenario())
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert list(families) == [
        "container_cpu_usage_seconds",
        "container_memory_working_set_bytes",
        "container_start_time_seconds",
        "container_swap_usage_bytes",
        "node_cpu_usage_seconds",
        "node_memory_working_set_bytes",
        "node_swap_usage_bytes",
        "pod_cpu_usage_seconds",
        "pod_memory_working_set_bytes",
        "pod_swap_usage_bytes",
        "resource_scrape_error",
    ]
    (start,) = families["container_start_time_seconds"].samples
    assert start.labels == {"container": "main", "namespace": "default", "pod": "steady"}
    assert 0 <= start.value - started < 1 and start.timestamp is None  # startedAt: seconds
    assert families["container_start_time_seconds"].documentation == (
        "[STABLE] Start time of the container since unix epoch in seconds"
    )
    assert families["node_swap_usage_bytes"].documentation == (
        "[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems"
    )
    for name in ("container_swap_usage_bytes", "node_swap_usage_bytes", "pod_swap_usage_bytes"):
        assert [s.value for s in families[name].samples] == [0]
        assert all(s.timestamp is not None for s in families[name].samples)
    (error,) = families["resource_scrape_error"].samples
    assert (error.labels, error.value, error.timestamp) == ({}, 0, None)
    assert families["resource_scrape_error"].documentation == (
        "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise"
    )
