"""Node usage as the scheduler sees it, on the virtual clock: sampled from the node agents'
summaries every 30 s, averaged over the configured window in the node table, and acted on by
TargetLoadPacking as a whole simulated cluster runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.support import SimulatedCluster, score_only_config

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.forecast import ewma
from pinnace.kubelet import node_configs
from pinnace.scheduler.config import parse
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.schedule_one import Scheduler

PODS = catalog.kind("", "pods")
NODE_1, NODE_2 = "pinnace-node-1", "pinnace-node-2"


def tlp_config(window: str, interval: str = "30s") -> str:
    """TargetLoadPacking as the only Score plugin."""
    return score_only_config(
        "TargetLoadPacking", f"{{usageWindow: {window}, usageSampleInterval: {interval}}}"
    )


CUSTOM_METRIC_CONFIG = score_only_config(
    "TargetLoadPacking",
    "{usageWindow: 1m, metricProvider: "
    '{type: CustomMetrics, metric: http_requests_per_second, nodeCapacity: "100"}}',
)
"""TargetLoadPacking as the only Score plugin, on the CustomMetrics provider: a node takes 100
requests a second."""


def pod(name: str, cpu_used: str, node: str = "", limit: str = "100m") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "app",
                "image": "nginx",
                "resources": {
                    "requests": {"cpu": limit, "memory": "64Mi"},
                    "limits": {"cpu": limit, "memory": "64Mi"},
                },
            }
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "annotations": {"sim.pinnace.dev/cpu": cpu_used}},
        "spec": spec,
    }


@pytest.fixture
def cluster() -> Any:
    options = ClusterOptions(
        nodes=node_configs(2), seed=1, scheduler_config=parse(tlp_config("1m"))
    )
    cluster = SimulatedCluster(options)
    yield cluster
    cluster.close()


def core(cluster: SimulatedCluster) -> Scheduler:
    assert cluster.plane.scheduler is not None
    return cluster.plane.scheduler.core


def until_next_sample(cluster: SimulatedCluster) -> None:
    """Step virtual time until the scheduler has taken one more usage sample."""
    table = core(cluster).table
    taken = table.usage_samples_taken
    while table.usage_samples_taken == taken:
        cluster.wait(1)


def cpu_mean_and_std(cluster: SimulatedCluster, node: str) -> tuple[float, float]:
    table = core(cluster).table
    i = table.index[node]
    return round(table.usage_mean[i, 0], 3), round(table.usage_std[i, 0], 3)


def test_usage_is_averaged_over_the_window_on_the_virtual_clock(
    cluster: SimulatedCluster,
) -> None:
    table = core(cluster).table
    assert (table.usage_window, table.usage_interval) == (60, 30)
    cluster.run(cluster.client.create(PODS, "default", pod("a", "500m", NODE_1, "1")))
    cluster.wait(60)  # the window holds only samples of a running
    until_next_sample(cluster)
    assert cpu_mean_and_std(cluster, NODE_1) == (500, 0)
    assert cpu_mean_and_std(cluster, NODE_2) == (0, 0)
    assert table.usage_count[table.index[NODE_1]] == 2

    # Right after a sample, b starts: the next sample has both, the window one of each.
    cluster.run(cluster.client.create(PODS, "default", pod("b", "300m", NODE_1, "1")))
    cluster.wait(10)
    until_next_sample(cluster)
    assert cpu_mean_and_std(cluster, NODE_1) == (650, 150)
    until_next_sample(cluster)
    assert cpu_mean_and_std(cluster, NODE_1) == (800, 0)
    sampled_at = table.usage_time
    until_next_sample(cluster)
    assert table.usage_time == sampled_at + 30


def test_the_sample_interval_is_an_argument() -> None:
    options = ClusterOptions(
        nodes=node_configs(1), seed=1, scheduler_config=parse(tlp_config("30s", "10s"))
    )
    cluster = SimulatedCluster(options)
    try:
        cluster.wait(1)
        taken = core(cluster).table.usage_samples_taken
        cluster.wait(60)
        table = core(cluster).table
        assert (table.usage_window, table.usage_interval) == (30, 10)
        assert table.usage_samples_taken == taken + 6
    finally:
        cluster.close()


def test_target_load_packing_packs_a_burst_up_to_the_target(cluster: SimulatedCluster) -> None:
    """node-1 uses 1 of its 4 cores (25 %), node-2 nothing. Two pods of 500m created at
    once: the first packs node-1 (37.5 %: 96 against 59), the second, with the first counted
    though no sample shows it yet (50 %: 33), goes to node-2."""
    cluster.run(cluster.client.create(PODS, "default", pod("busy", "1", NODE_1, "1")))
    cluster.wait(90)
    for name in ("first", "second"):
        cluster.run(cluster.client.create(PODS, "default", pod(name, "500m", limit="500m")))
    cluster.wait(5)
    placed = {
        name: cluster.run(cluster.client.get(PODS, "default", name))["spec"]["nodeName"]
        for name in ("first", "second")
    }
    assert placed == {"first": NODE_1, "second": NODE_2}
    # Explained as if pending, second sees what the scheduler saw: node-1's measured 1 core and
    # first's 500m not measured yet (50 %: 33), node-2 idle (its own 500m: 12.5 %: 59).
    assert cluster.plane.explainer is not None
    explanation = cluster.run(cluster.plane.explainer("default", "second"))
    scores = {n["name"]: n["scores"] for n in explanation["nodes"]}
    assert {name: [s["raw"] for s in listed] for name, listed in scores.items()} == {
        NODE_1: [33],
        NODE_2: [59],
    }
    assert explanation["selected"] == NODE_2


def test_usage_rows_move_with_their_nodes() -> None:
    """Removing a node moves the last row into its place: its usage samples go with it, and a
    node added later starts with none."""
    table = NodeTable()
    for name in ("a", "b", "c"):
        resources = {"cpu": "4", "memory": "8Gi", "pods": "10"}
        table.add_node({"metadata": {"name": name}, "status": {"capacity": resources}})
    table.track_usage(60, 30, lambda: 0.0)
    table.record_usage(0.0, {"a": (100, 1.0), "b": (200, 2.0), "c": (300, 3.0)})
    table.record_usage(30.0, {"a": (300, 1.0), "b": (400, 2.0), "c": (500, 3.0)})
    table.remove_node("a")
    assert table.names == ["c", "b"]
    assert table.usage_mean[:, 0].tolist() == [400, 300]
    assert table.usage_std[:, 0].tolist() == [100, 100]
    assert table.capacity[:, 0].tolist() == [4000, 4000]
    table.add_node({"metadata": {"name": "d"}, "status": {}})
    assert table.usage_count.tolist() == [2, 2, 0]
    table.record_usage(60.0, {"d": (50, 5.0), "b": (600, 2.0)})  # c not reported this time
    assert table.usage_mean[:, 0].tolist() == [500, 500, 50]
    assert table.usage_count.tolist() == [1, 2, 1]


def test_each_nodes_forecast_is_the_ewma_of_its_samples_in_the_window() -> None:
    """pinnace.forecast.ewma over the samples the window holds, a node's missing samples
    skipped, per resource."""
    table = NodeTable()
    for name in ("a", "b"):
        table.add_node({"metadata": {"name": name}, "status": {}})
    table.track_usage(90, 30, lambda: 0.0)  # three samples
    cpu_a, cpu_b = [100.0, 400.0, 200.0, 800.0], [50.0, 0.0, 70.0, 90.0]
    for i, (a, b) in enumerate(zip(cpu_a, cpu_b, strict=True)):
        usage = {"a": (a, 2 * a)}
        if i != 1:  # b has no sample the second time
            usage["b"] = (b, 2 * b)
        table.record_usage(30.0 * i, usage)
    # The window holds the last three samples: a's 400, 200, 800; b's 70, 90.
    assert table.usage_forecast[:, 0] == pytest.approx(
        [ewma(np.array(cpu_a[1:])), ewma(np.array([70.0, 90.0]))]
    )
    assert table.usage_forecast[:, 1] == pytest.approx(2 * table.usage_forecast[:, 0])


def test_target_load_packing_on_a_custom_metric_packs_by_its_load() -> None:
    """Both nodes use the same CPU, but node-1's pods serve 80 of the 100 requests a second a
    node can take and node-2's 20: on the CustomMetrics provider, node-1 is past the target
    (80 % and the pod's own 2.5 %: 12) and node-2 below it (22.5 %: 74), so the next pod goes
    to node-2."""
    options = ClusterOptions(
        nodes=node_configs(2), seed=1, scheduler_config=parse(CUSTOM_METRIC_CONFIG)
    )
    cluster = SimulatedCluster(options)
    try:
        for name, node, requests in (("busy", NODE_1, "80"), ("calm", NODE_2, "20")):
            body = pod(name, "500m", node, "1")
            body["metadata"]["annotations"]["metrics.sim.pinnace.dev/http_requests_per_second"] = (
                requests
            )
            cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(120)  # the window's two samples both have the pods' loads
        summaries = cluster.plane.nodes.summaries()  # what metrics.k8s.io serves
        assert (
            summaries[NODE_1].node.cpu_usage_nano_cores
            == summaries[NODE_2].node.cpu_usage_nano_cores
        )
        cluster.run(cluster.client.create(PODS, "default", pod("next", "100m")))
        cluster.wait(5)
        placed = cluster.run(cluster.client.get(PODS, "default", "next"))["spec"]["nodeName"]
        assert placed == NODE_2
        assert cluster.plane.explainer is not None
        cluster.run(cluster.client.create(PODS, "default", pod("another", "100m")))
        explanation = cluster.run(cluster.plane.explainer("default", "another"))
        scores = {n["name"]: [s["raw"] for s in n["scores"]] for n in explanation["nodes"]}
        # node-2 with next's 2.5 % not measured yet: 25 %, round(60 * 25 / 40 + 40) = 78
        assert scores == {NODE_1: [12], NODE_2: [78]}
    finally:
        cluster.close()


def test_custom_metric_loads_are_read_in_every_namespace_with_pods_without_listing_them() -> None:
    """The CustomMetrics provider asks custom.metrics.k8s.io namespace by namespace; the
    namespaces come from the pod cache's index, not from listing every pod each sample."""
    options = ClusterOptions(
        nodes=node_configs(2), seed=1, scheduler_config=parse(CUSTOM_METRIC_CONFIG)
    )
    cluster = SimulatedCluster(options)
    try:
        scheduler = cluster.plane.scheduler
        assert scheduler is not None
        listed = 0
        whole_list = scheduler.pods.list

        def counting_list(*args: Any, **kwargs: Any) -> Any:
            nonlocal listed
            listed += 1
            return whole_list(*args, **kwargs)

        scheduler.pods.list = counting_list  # type: ignore[method-assign]
        namespace = {"metadata": {"name": "shop"}}
        cluster.run(cluster.client.create(catalog.kind("", "namespaces"), "", namespace))
        for name, node, requests, where in (
            ("busy", NODE_1, "80", "shop"),
            ("calm", NODE_2, "20", "default"),
        ):
            body = pod(name, "500m", node, "1")
            body["metadata"]["annotations"]["metrics.sim.pinnace.dev/http_requests_per_second"] = (
                requests
            )
            cluster.run(cluster.client.create(PODS, where, body))
        cluster.wait(120)
        table = core(cluster).table
        means = [round(table.usage_mean[table.index[n], 0]) for n in (NODE_1, NODE_2)]
        assert means == [3200, 800]  # 80 % and 20 % of 4 cores
        assert listed == 0
    finally:
        cluster.close()
