"""A node's kubelet endpoints through the API server's node proxy, on the virtual clock: the
CPU counters rise at the rate the usage model gives (capped at the limit, the rest throttled),
the working set and limits are the pods'."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pinnace.api import catalog
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


def series(found: Samples, name: str, pod: str) -> tuple[float, dict[str, str]]:
    for (sample, labels), value in found.items():
        if sample == name and dict(labels).get("pod") == pod:
            return value, dict(labels)
    raise KeyError((name, pod))


def test_cadvisor_and_resource_metrics_follow_the_usage_model() -> None:
    async def scenario() -> tuple[Samples, Samples, Samples, dict[str, Any]]:
        options = ClusterOptions(nodes=node_configs(1), controllers=False)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
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
        options = ClusterOptions(nodes=node_configs(1), controllers=False)
        plane = ControlPlane(MemoryStore(), clock, options)
        await plane.start()
        app = plane.http_app()
        await plane.client().create(PODS, "default", pod("steady", "150m", {"memory": "64Mi"}))
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        _, text = await call(app, "GET", f"/api/v1/nodes/{node}/proxy/metrics/cadvisor")
        now = plane.clock.now()
        await plane.stop()
        return text, now

    with VirtualClock() as clock:
        text, now = clock.run(scenario())
    lines = [line for line in text.decode().splitlines() if line.startswith("container_")]
    assert lines
    for line in lines:
        stamp = int(line.rsplit(" ", 1)[1])
        assert now * 1000 - 10_000 <= stamp <= now * 1000  # milliseconds, within a sync
