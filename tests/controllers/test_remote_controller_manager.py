"""The controllers of a `pinnace controller-manager` process, on the virtual clock: beside a
cluster run with `controllers=False`, a `ControllerManager` whose HPA reads custom and external
metrics through custom.metrics.k8s.io and external.metrics.k8s.io
(`pinnace.client.custom_metrics.HTTPMetricsClient`) and whose VPA recommender, with the
prometheus storage, reads the pods' usage history at the API server's `/pinnace/history`
(`pinnace.cli.controller_manager.pod_history`), both through the cluster's HTTP app in process
(its routes, JSON and errors, without a socket). They act as `pinnace up`'s own controllers do."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from tests.apiextensions.test_crds import crontab, established
from tests.controllers.test_hpa_custom_metrics import HPAS, SERVICES, object_target, pods_target
from tests.controllers.test_hpa_custom_metrics import Cluster as MetricsCluster
from tests.controllers.test_vpa import DEPLOYMENTS, NEVER, VPAS
from tests.http.test_app import call
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.metrics import list_pod_metrics
from pinnace.cli.controller_manager import pod_history
from pinnace.client.custom_metrics import HTTPMetricsClient
from pinnace.client.http import status_error
from pinnace.cluster import ClusterOptions, ControllerManager
from pinnace.controllers.vpa import PROMETHEUS, VPAOptions
from pinnace.kubelet import node_configs
from pinnace.resources.lists import parse_quantity


class AppClient:
    """What the HTTP metrics clients ask of an `HTTPClient`, answered by `app` in process."""

    def __init__(self, app: APIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def get_path(self, path: str) -> Object:
        self.paths.append(path)
        path, _, query = path.partition("?")
        code, body = await call(self.app, "GET", unquote(path), query.encode())
        if code >= 400:
            raise status_error(code, body)
        return json.loads(body)


def start_manager(cluster: SimulatedCluster, options: ClusterOptions) -> tuple[Any, AppClient]:
    """A controller manager of its own against the cluster, reading metrics and history over
    its HTTP app; returns (a stop coroutine factory, the HTTP side)."""
    plane = cluster.plane
    http = AppClient(plane.http_app())
    manager = ControllerManager(
        plane.client,
        options,
        lambda namespace, selector: list_pod_metrics(plane.server, namespace, selector),
        custom_metrics=HTTPMetricsClient(http),  # type: ignore[arg-type]
        history=pod_history(http),  # type: ignore[arg-type]
    )
    components = manager.components()
    for component in components:
        cluster.run(component.start())

    async def stop() -> None:
        for component in reversed(components):
            await component.stop()

    return stop, http


class RemoteMetricsCluster(MetricsCluster):
    def __init__(self) -> None:
        nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
        SimulatedCluster.__init__(self, ClusterOptions(nodes=nodes, seed=3, controllers=False))
        self.stop_manager, self.http = start_manager(self, ClusterOptions(seed=3))

    def close(self) -> None:
        self.run(self.stop_manager())
        super().close()

    def set_metrics(self, *metrics: Object) -> None:
        """The HPA's metrics replaced; then its next syncs."""
        hpa = clone(self.run(self.client.get(HPAS, "default", "web")))
        hpa["spec"]["metrics"] = list(metrics)
        self.run(self.client.update(HPAS, hpa))
        self.wait(20)


@pytest.fixture
def remote() -> Iterator[RemoteMetricsCluster]:
    cluster = RemoteMetricsCluster()
    yield cluster
    cluster.close()


def test_the_hpa_reads_pods_object_and_external_metrics_through_the_api(
    remote: RemoteMetricsCluster,
) -> None:
    remote.load(frontend_requests="40", queue_messages_ready="{queue=tasks} 90")
    remote.deploy(1)
    remote.autoscale(pods_target("10"))
    # 40 requests a second shared by the pods, 10 a pod wanted: 4 pods, 10 each
    assert remote.follow(60)[-1] == 4
    assert remote.status()["currentMetrics"][0]["pods"]["current"] == {"averageValue": "10"}
    custom = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/"
    assert f"{custom}http_requests_per_second?labelSelector=app%3Dweb" in remote.http.paths

    service = {
        "metadata": {"name": "front", "annotations": {"metrics.sim.pinnace.dev/rps": "30"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    remote.run(remote.client.create(SERVICES, "default", service))
    described = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    tasks = {"matchLabels": {"queue": "tasks"}}
    remote.set_metrics(
        {
            "type": "Object",
            "object": {
                "metric": {"name": "rps"},
                "describedObject": described,
                "target": {"type": "Value", "value": "30"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue_messages_ready", "selector": tasks},
                "target": {"type": "AverageValue", "averageValue": "45"},
            },
        },
    )
    current = remote.status()["currentMetrics"]
    assert current[0]["object"]["current"] == {"value": "30"}
    assert current[1]["external"]["current"] == {"averageValue": "22500m"}
    assert "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/services/front/rps" in (
        remote.http.paths
    )

    # a metric the adapter does not have: its 404, in the HPA's words, as in-process
    remote.set_metrics(
        {
            "type": "External",
            "external": {
                "metric": {"name": "no_such_metric"},
                "target": {"type": "Value", "value": "1"},
            },
        }
    )
    assert remote.condition("ScalingActive") == (
        "False",
        "FailedGetExternalMetric",
        "the HPA was unable to compute the replica count: unable to get external metric "
        "default/no_such_metric/nil: unable to fetch metrics from external metrics API: the "
        "server could not find the metric no_such_metric for provided labels",
    )


def test_the_hpa_maps_an_object_metrics_kind_through_discovery(
    remote: RemoteMetricsCluster,
) -> None:
    # kube-controller-manager's custom metrics client maps the described object's group and
    # kind to a resource with its discovery RESTMapper: a CRD's kind as a built-in one.
    kind = established(remote)
    body = crontab("nightly")
    body["metadata"]["annotations"] = {"metrics.sim.pinnace.dev/queue-length": "30"}
    remote.run(remote.client.create(kind, "default", body))
    remote.deploy(1, rps="1")
    described = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": "nightly"}
    remote.autoscale(object_target(described, "queue-length", "10"))
    remote.wait(20)
    assert remote.replicas() == 3
    path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/crontabs.stable.example.com"
    assert f"{path}/nightly/queue-length" in remote.http.paths

    # a kind no version of the group serves: the mapping's error, as in-process
    described = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}
    remote.set_metrics(object_target(described, "queue-length", "10"))
    assert remote.condition("ScalingActive")[2].endswith(
        "unable to fetch metrics from custom metrics API: unable to map kind Widget.example.com "
        'to resource: no matches for kind "Widget" in group "example.com"'
    )
    remote.server.custom_metrics = None  # no adapter: that is found first
    remote.wait(15)
    assert remote.condition("ScalingActive")[2].endswith(
        "unable to fetch metrics from custom metrics API: no custom metrics API "
        "(custom.metrics.k8s.io) registered"
    )


def first_recommendation(cluster: SimulatedCluster) -> Object:
    """A one-container Deployment busy from its 10th to its 30th minute, then a VPA created
    at its 60th: its recommendation one recommender interval later."""
    annotations = {
        "sim.pinnace.dev/cpu.app": "spike 100m 900m at 10m for 20m",
        "sim.pinnace.dev/memory.app": "spike 100Mi 600Mi at 10m for 20m",
    }
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    spec = {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}
    body = {"metadata": {"name": "web"}, "spec": spec}
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
    cluster.wait(3600)
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    vpa = {"targetRef": target, "updatePolicy": {"updateMode": "Off"}}
    cluster.run(cluster.client.create(VPAS, "default", {"metadata": {"name": "web"}, "spec": vpa}))
    cluster.wait(60)
    found = cluster.run(cluster.client.get(VPAS, "default", "web"))
    [entry] = found["status"]["recommendation"]["containerRecommendations"]
    return entry


def test_the_vpa_recommender_reads_the_usage_history_over_http(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """--vpa-storage prometheus in a process of its own: the first recommendation reflects the
    hour of usage before the VPA, read from the API server's history (the in-process
    recommender's test: test_vpa's test_the_prometheus_storage_recommends_at_once...)."""
    nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
    cluster = SimulatedCluster(ClusterOptions(nodes=nodes, seed=3, controllers=False))
    vpa = VPAOptions(updater_interval=NEVER, storage=PROMETHEUS, history_resolution=60.0)
    stop, http = start_manager(cluster, ClusterOptions(seed=3, vertical_pod_autoscaler=vpa))
    try:
        with caplog.at_level(logging.ERROR):
            entry = first_recommendation(cluster)
        assert parse_quantity(entry["target"]["cpu"]).milli_value() > 900
        assert parse_quantity(entry["target"]["memory"]).value() > 600 * 2**20
        read = [p for p in http.paths if p.startswith("/pinnace/history/namespaces/default/")]
        assert len(read) == 1 and read[0].startswith(
            "/pinnace/history/namespaces/default/pods/web-"
        )
        assert "cannot get cluster history" not in caplog.text
        # a pod the history does not hold: a 404 of its own, which the reader takes as none
        with pytest.raises(StatusError) as missing:
            cluster.run(http.get_path("/pinnace/history/namespaces/default/pods/gone"))
        assert (missing.value.code, missing.value.message) == (
            404,
            'the usage history holds no pod "gone" in namespace "default"',
        )
        assert cluster.run(pod_history(http)("default/gone", "app")) is None  # type: ignore[arg-type]
        [web] = cluster.run(cluster.client.list(catalog.kind("", "pods"), "default"))["items"]
        key = f"default/{web['metadata']['name']}"
        assert cluster.run(pod_history(http)(key, "nope")) is None  # type: ignore[arg-type]
        assert read[0].endswith("/containers/app")  # each container read from its own series
        assert "cannot get cluster history" not in caplog.text
    finally:
        cluster.run(stop())
        cluster.close()


def test_without_the_history_the_recommender_says_so_and_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that keeps no usage history (no dashboard, no VPA of its own reading it): the
    path is not served, and the recommender logs that it cannot get the cluster history, as
    upstream's does when Prometheus cannot be queried, and recommends from its own samples."""
    nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
    options = ClusterOptions(nodes=nodes, seed=3, controllers=False, dashboard=False)
    cluster = SimulatedCluster(options)
    vpa = VPAOptions(updater_interval=NEVER, storage=PROMETHEUS, history_resolution=60.0)
    stop, _ = start_manager(cluster, ClusterOptions(seed=3, vertical_pod_autoscaler=vpa))
    try:
        with caplog.at_level(logging.ERROR):
            entry = first_recommendation(cluster)
        assert parse_quantity(entry["target"]["cpu"]).milli_value() < 200
        assert (
            "vpa recommender: cannot get cluster history: the server could not find the "
            "requested resource" in caplog.text
        )
    finally:
        cluster.run(stop())
        cluster.close()
