"""kube-scheduler's metrics at /metrics/scheduler: attempts by result and profile, pending pods
by queue, the SLI of pods placed."""

from __future__ import annotations

import asyncio

from pinnace.api import catalog
from pinnace.clock import Clock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.store import MemoryStore

from .test_apiserver_metrics import Samples, call, samples, value

PODS = catalog.kind("", "pods")


def pod(name: str, cpu: str) -> dict[str, object]:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def test_attempts_pending_pods_and_the_sli_follow_the_scheduler() -> None:
    async def scenario() -> Samples:
        options = ClusterOptions(nodes=node_configs(1), controllers=False)
        plane = ControlPlane(MemoryStore(), Clock(asyncio.get_running_loop()), options)
        await plane.start()
        app = plane.http_app()
        client = plane.client()
        await client.create(PODS, "default", pod("fits", "1"))
        await client.create(PODS, "default", pod("too-big", "64"))
        assert plane.scheduler is not None
        metrics = plane.scheduler.core.metrics
        while sum(metrics.attempts.values()) < 2:  # until both have had a cycle
            await asyncio.sleep(0.01)
        _, text = await call(app, "GET", "/metrics/scheduler")
        await plane.stop()
        return samples(text)

    found = asyncio.run(scenario())
    attempts = "scheduler_schedule_attempts_total"
    profile = "default-scheduler"
    assert value(found, attempts, result="scheduled", profile=profile) == 1
    assert value(found, attempts, result="unschedulable", profile=profile) == 1
    count = "scheduler_scheduling_attempt_duration_seconds_count"
    assert value(found, count, result="scheduled", profile=profile) == 1
    assert value(found, "scheduler_pending_pods", queue="unschedulable") == 1
    assert value(found, "scheduler_pending_pods", queue="active") == 0
    assert value(found, "scheduler_preemption_attempts_total") == 1
    # No victims were found: the histogram has no label, so it is served from the start, as
    # a plain histogram of component-base is, with nothing counted.
    assert value(found, "scheduler_preemption_victims_count") == 0
    assert value(found, "scheduler_preemption_victims_bucket", le="64") == 0
    assert value(found, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") == 1


def test_extension_points_every_cycle_and_plugins_on_a_sample_of_cycles() -> None:
    async def scenario() -> Samples:
        options = ClusterOptions(nodes=node_configs(2), controllers=False)
        plane = ControlPlane(MemoryStore(), Clock(asyncio.get_running_loop()), options)
        await plane.start()
        app = plane.http_app()
        client = plane.client()
        assert plane.scheduler is not None
        metrics = plane.scheduler.core.metrics
        for i in range(10):  # cycles 1 and 11 are sampled
            await client.create(PODS, "default", pod(f"p{i}", "10m"))
            while sum(metrics.attempts.values()) < i + 1:
                await asyncio.sleep(0.01)
        await client.create(PODS, "default", pod("too-big", "64"))
        while sum(metrics.attempts.values()) < 11:
            await asyncio.sleep(0.01)
        _, text = await call(app, "GET", "/metrics/scheduler")
        await plane.stop()
        return samples(text)

    found = asyncio.run(scenario())
    points = "scheduler_framework_extension_point_duration_seconds_count"
    profile = "default-scheduler"
    for point in ("PreFilter", "PreScore", "Score", "Bind"):
        assert value(found, points, extension_point=point, status="Success", profile=profile) == (
            11 if point == "PreFilter" else 10
        )
    assert (
        value(found, points, extension_point="PostFilter", status="Unschedulable", profile=profile)
        == 1
    )
    assert not any(
        name == points and ("extension_point", "Filter") in labels for name, labels in found
    )
    plugins = "scheduler_plugin_execution_duration_seconds_count"
    fit = {"plugin": "NodeResourcesFit", "extension_point": "Filter"}
    assert value(found, plugins, status="Success", **fit) == 1  # the first cycle
    # The buckets' bounds are Go's ExponentialBuckets', each the previous times 1.5 (so the
    # le labels are kube-scheduler's, to the last digit).
    buckets = "scheduler_plugin_execution_duration_seconds_bucket"
    for le in ("2.2500000000000005e-05", "0.00011390625000000003"):
        assert value(found, buckets, status="Success", le=le, **fit) <= 1
    assert value(found, plugins, status="Unschedulable", **fit) == 1  # the eleventh: too big
    assert (
        value(found, plugins, plugin="DefaultBinder", extension_point="Bind", status="Success") == 1
    )
    assert (
        value(
            found,
            plugins,
            plugin="DefaultPreemption",
            extension_point="PostFilter",
            status="Unschedulable",
        )
        == 1
    )
