"""A scheduler in a process of its own reads node usage through the metrics API
(`pinnace.scheduler.metrics_api`), on the virtual clock: a scheduler beside `pinnace up`'s,
given only the metrics API's lists, keeps the same usage in its node table as the in-process
one and places a pod as TargetLoadPacking would there; a node the metrics leave out gets no
sample, and a poll that fails keeps the samples the table had, as Trimaran's collector keeps
the load watcher's last metrics. Its CustomMetrics provider reads custom.metrics.k8s.io over
HTTP (here the cluster's HTTP app in process) to the same effect."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from tests.controllers.test_remote_controller_manager import AppClient
from tests.scheduler.test_node_usage import (
    CUSTOM_METRIC_CONFIG,
    NODE_1,
    NODE_2,
    PODS,
    pod,
    tlp_config,
)
from tests.support import SimulatedCluster

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.apiserver.metrics import NODE_METRICS, list_node_metrics, list_pod_metrics
from pinnace.client.custom_metrics import HTTPMetricsClient
from pinnace.clock import Randomness
from pinnace.cluster import ClusterOptions
from pinnace.forecast import UsageHistory
from pinnace.kubelet import node_configs
from pinnace.scheduler.adapter import SchedulerService
from pinnace.scheduler.config import parse

REMOTE = "remote-scheduler"


class MetricsAPI:
    """The metrics API's lists as the cluster's server answers them, with what a test makes
    of them: a node left out, or a failure."""

    def __init__(self, cluster: SimulatedCluster) -> None:
        self.server = cluster.server
        self.hidden: set[str] = set()
        self.failing = False
        self.polls = 0

    async def __call__(self, kind: Kind) -> Object:
        self.polls += 1
        if self.failing:
            raise StatusError(503, "ServiceUnavailable", "the server is currently unable")
        if kind is not NODE_METRICS:
            return await list_pod_metrics(self.server, "")
        listed = await list_node_metrics(self.server)
        items = [i for i in listed["items"] if i["metadata"]["name"] not in self.hidden]
        return {**listed, "items": items}


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    options = ClusterOptions(
        nodes=node_configs(2), seed=1, scheduler_config=parse(tlp_config("1m"))
    )
    cluster = SimulatedCluster(options)
    yield cluster
    cluster.close()


@pytest.fixture
def metrics(cluster: SimulatedCluster) -> MetricsAPI:
    return MetricsAPI(cluster)


def start_remote(
    cluster: SimulatedCluster, config: str, metrics: MetricsAPI, **more: Any
) -> SchedulerService:
    """A scheduler of its own for the pods of schedulerName REMOTE, with `config`'s plugins."""
    config = config.replace("profiles:\n-", f"profiles:\n- schedulerName: {REMOTE}\n ")
    service = SchedulerService(
        cluster.plane.client(), parse(config), Randomness(2), metrics_api=metrics, **more
    )
    cluster.run(service.start())
    return service


@pytest.fixture
def remote(cluster: SimulatedCluster, metrics: MetricsAPI) -> Iterator[SchedulerService]:
    service = start_remote(cluster, tlp_config("1m"), metrics)
    yield service
    cluster.run(service.stop())


def usage(service: SchedulerService | None) -> dict[str, Any]:
    assert service is not None
    table = service.core.table
    order = [table.index[name] for name in (NODE_1, NODE_2)]
    return {
        "mean": np.round(table.usage_mean[order], 3).tolist(),
        "std": np.round(table.usage_std[order], 3).tolist(),
        "count": table.usage_count[order].tolist(),
    }


def test_usage_from_the_metrics_api_is_the_in_process_usage_and_packs_alike(
    cluster: SimulatedCluster, remote: SchedulerService
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("busy", "1", NODE_1, "1")))
    cluster.wait(90)
    seen = usage(remote)
    assert seen == usage(cluster.plane.scheduler)
    assert seen["count"] == [2, 2] and seen["mean"][0][0] == 1000
    assert remote.core.table.usage_window == 60
    # node-1 at 25 % of its 4 cores, node-2 idle: TargetLoadPacking packs node-1 (37.5 %: 96
    # against 59), as the in-process scheduler does.
    placed = pod("packed", "500m", limit="500m")
    placed["spec"]["schedulerName"] = REMOTE
    cluster.run(cluster.client.create(PODS, "default", placed))
    cluster.wait(5)
    assert cluster.run(cluster.client.get(PODS, "default", "packed"))["spec"]["nodeName"] == NODE_1


def test_a_node_left_out_gets_no_sample_and_a_failed_poll_keeps_the_samples(
    cluster: SimulatedCluster,
    metrics: MetricsAPI,
    remote: SchedulerService,
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics.hidden = {NODE_2}
    cluster.run(cluster.client.create(PODS, "default", pod("busy", "1", NODE_1, "1")))
    cluster.wait(90)
    table = remote.core.table
    assert usage(remote)["count"] == [2, 0]  # node-2 scores 0, as without metrics upstream
    taken, polls = table.usage_samples_taken, metrics.polls
    metrics.failing = True
    with caplog.at_level(logging.ERROR, "pinnace.scheduler.metrics_api"):
        cluster.wait(60)
    assert metrics.polls > polls
    assert table.usage_samples_taken == taken
    assert usage(remote)["count"] == [2, 0]
    assert "Unable to update metrics" in caplog.text


def test_the_custom_metrics_provider_reads_custom_metrics_through_the_api() -> None:
    """Trimaran's CustomMetrics provider in a scheduler of its own: the pods' metric read from
    custom.metrics.k8s.io over the cluster's HTTP app gives the node table the in-process
    scheduler's loads, and a pod goes to the node whose pods serve less (test_node_usage's
    in-process case)."""
    options = ClusterOptions(
        nodes=node_configs(2), seed=1, scheduler_config=parse(CUSTOM_METRIC_CONFIG)
    )
    cluster = SimulatedCluster(options)
    http = AppClient(cluster.plane.http_app())
    custom = HTTPMetricsClient(http)  # type: ignore[arg-type]
    remote = start_remote(cluster, CUSTOM_METRIC_CONFIG, MetricsAPI(cluster), custom_metrics=custom)
    try:
        for name, node, requests in (("busy", NODE_1, "80"), ("calm", NODE_2, "20")):
            body = pod(name, "500m", node, "1")
            body["metadata"]["annotations"]["metrics.sim.pinnace.dev/http_requests_per_second"] = (
                requests
            )
            cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(120)
        seen = usage(remote)
        assert seen == usage(cluster.plane.scheduler)
        assert [round(m[0]) for m in seen["mean"]] == [3200, 800]  # 80 % and 20 % of 4 cores
        assert any("/pods/*/http_requests_per_second" in path for path in http.paths)
        placed = pod("next", "100m")
        placed["spec"]["schedulerName"] = REMOTE
        cluster.run(cluster.client.create(PODS, "default", placed))
        cluster.wait(5)
        assert (
            cluster.run(cluster.client.get(PODS, "default", "next"))["spec"]["nodeName"] == NODE_2
        )
    finally:
        cluster.run(remote.stop())
        cluster.close()


def test_forecasting_plugins_get_the_pods_usage_from_pod_metrics(
    cluster: SimulatedCluster, remote: SchedulerService
) -> None:
    """For plugins reading forecasts (the policy plugins), each sample also lists PodMetrics:
    the workloads' usage series match the in-process scheduler's. (The histories are given
    here by hand, as the scheduler gives them when a configured plugin reads forecasts.)"""
    assert cluster.plane.scheduler is not None
    in_process, sampled = cluster.plane.scheduler.usage, remote.usage
    assert in_process is not None and sampled is not None
    ours, theirs = sampled.workload_usage, in_process.workload_usage = (
        UsageHistory(),
        UsageHistory(),
    )
    for name, used in (("a", "700m"), ("b", "300m")):
        cluster.run(cluster.client.create(PODS, "default", pod(name, used, NODE_1, "1")))
    cluster.wait(90)
    workloads = theirs.workloads()
    assert len(workloads) == 2 and ours.workloads() == workloads
    for workload in workloads:
        assert ours.series(workload)[-2:, 1:].tolist() == theirs.series(workload)[-2:, 1:].tolist()
    assert {round(ours.series(w)[-1, 1]) for w in workloads} == {700, 300}
