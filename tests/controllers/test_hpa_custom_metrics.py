"""The HorizontalPodAutoscaler on Pods, Object and External metrics: the replica calculator's
rules for them (vectors worked out from replica_calculator.go), and HPAs on the virtual clock
reading the cluster's metrics adapter (a load shared by the pods behind the Deployment, a
Service's value, a queue's series)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.apiextensions.test_crds import crontab, established
from tests.controllers.test_hpa import NOW, AutoscaledWeb, pod

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.controllers.hpa import go_label_selector
from pinnace.controllers.hpa_replicas import (
    MetricError,
    PodMetric,
    PodMetricsInfo,
    ReplicaCalculator,
)

DEPLOYMENTS = catalog.kind("apps", "deployments")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
CONFIGMAPS = catalog.kind("", "configmaps")
SERVICES = catalog.kind("", "services")
SERIES_LABEL = "metrics.sim.pinnace.dev/series"
RPS = "metrics.sim.pinnace.dev/http_requests_per_second"


# --- the calculator -----------------------------------------------------------------------------


def values(**millis: int) -> PodMetricsInfo:
    return {name: PodMetric(value, NOW, 30.0) for name, value in millis.items()}


def pods_metric(current: int, target: int, metrics: PodMetricsInfo, pods: list[Object]) -> Any:
    return ReplicaCalculator().raw_resource_replicas(current, target, "", metrics, pods, NOW)


def test_a_pods_metric_scales_by_the_ratio_of_its_average_to_the_target() -> None:
    pods = [pod("a"), pod("b"), pod("c")]
    up = pods_metric(3, 15_000, values(a=20_000, b=10_000, c=30_000), pods)
    assert (up.replicas, up.raw_average) == (4, 20_000)
    five = [pod(n) for n in "abcde"]
    down = pods_metric(5, 20_000, values(**{n: 12_000 for n in "abcde"}), five)
    assert (down.replicas, down.raw_average) == (3, 12_000)
    steady = pods_metric(3, 20_000, values(a=20_000, b=21_000, c=21_000), pods)
    assert steady.replicas == 3  # 1.033 is within the tolerance


def test_a_pods_metric_counts_not_ready_pods_but_leaves_pending_ones_out_when_scaling_up() -> None:
    # readiness is CPU's concern only: a Running pod that is not Ready counts as it reports
    not_ready = [pod("a"), pod("b"), pod("c", ready="False")]
    assert pods_metric(3, 15_000, values(a=50_000, b=10_000, c=30_000), not_ready).replicas == 6
    # a Pending pod counts as 0 on the way up: 65/3 against 15 is 1.44, times 3
    pending = [pod("a"), pod("b"), pod("c", phase="Pending", ready=None)]
    assert pods_metric(3, 15_000, values(a=50_000, b=15_000), pending).replicas == 5


def test_pods_without_a_metric_count_at_the_target_when_scaling_down() -> None:
    pods = [pod(n) for n in "abcd"]
    # 5 each against 10 is 0.5; with d at the target, 25/4 = 6.25 -> 0.625 of 4 pods
    assert pods_metric(4, 10_000, values(a=5_000, b=5_000, c=5_000), pods).replicas == 3
    # on the way up the missing pod counts as 0, and a ratio that turns around keeps the count
    assert pods_metric(4, 10_000, values(a=12_000, b=12_000, c=12_000), pods).replicas == 4


def test_one_value_against_its_target_uses_the_ready_pods() -> None:
    calculator = ReplicaCalculator()
    pods = [pod("a"), pod("b"), pod("c", ready="False")]
    assert calculator.usage_ratio_replicas(3, 3.0, pods) == 6  # two ready pods, three times
    assert calculator.usage_ratio_replicas(3, 1.05, pods) == 3
    assert calculator.usage_ratio_replicas(0, 2.5, []) == 3  # from zero, the ratio alone
    with pytest.raises(MetricError, match="no pods returned by selector"):
        calculator.usage_ratio_replicas(2, 2.0, [])


def test_an_average_value_target_divides_the_value_among_the_replicas() -> None:
    calculator = ReplicaCalculator()
    assert calculator.per_pod_replicas(3, 40_000, 10_000) == (4, 13_334)
    assert calculator.per_pod_replicas(4, 42_000, 10_000) == (4, 10_500)
    assert calculator.per_pod_replicas(4, 10_000, 10_000) == (1, 2_500)


def test_a_selector_is_printed_as_go_prints_a_label_selector() -> None:
    assert go_label_selector(None) == "nil"
    selector = {
        "matchLabels": {"queue": "tasks"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
    }
    assert go_label_selector(selector) == (
        "&LabelSelector{MatchLabels:map[string]string{queue: tasks,},MatchExpressions:"
        "[]LabelSelectorRequirement{LabelSelectorRequirement{Key:tier,Operator:In,"
        "Values:[a b],},},}"
    )


# --- on the virtual clock -------------------------------------------------------------------------


class Cluster(AutoscaledWeb):
    """`web`'s pods share the series `frontend_requests` of the ConfigMap `loads`."""

    def load(self, **series: str) -> None:
        body = {"metadata": {"name": "loads", "labels": {SERIES_LABEL: ""}}, "data": series}
        try:
            current = clone(self.run(self.client.get(CONFIGMAPS, "default", "loads")))
        except Exception:
            self.run(self.client.create(CONFIGMAPS, "default", body))
            return
        current["data"] = series
        self.run(self.client.update(CONFIGMAPS, current))

    def deploy(self, replicas: int, rps: str = "share frontend_requests") -> None:
        template = {
            "metadata": {"labels": {"app": "web"}, "annotations": {RPS: rps}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        }
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template,
            },
        }
        self.run(self.client.create(DEPLOYMENTS, "default", body))

    def autoscale(self, metric: Object, max_replicas: int = 20) -> None:
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": max_replicas,
                "metrics": [metric],
            },
        }
        self.run(self.client.create(HPAS, "default", body))

    def status(self) -> Object:
        return self.hpa()["status"]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.close()


def pods_target(average: str) -> Object:
    target = {"type": "AverageValue", "averageValue": average}
    return {
        "type": "Pods",
        "pods": {"metric": {"name": "http_requests_per_second"}, "target": target},
    }


def test_a_load_shared_by_the_pods_converges_and_follows_the_load_down(cluster: Cluster) -> None:
    cluster.load(frontend_requests="100")
    cluster.deploy(1)
    cluster.autoscale(pods_target("10"))
    # 100 requests a second over one pod against 10 a pod: 10 pods, at most 4 (or double)
    # more each sync; once there each pod gets 10 and the count holds
    rising = cluster.follow(120)
    assert rising == sorted(rising) and rising[-1] == 10
    assert set(cluster.follow(60)) == {10}
    status = cluster.status()
    assert status["currentMetrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "http_requests_per_second"},
                "current": {"averageValue": "10"},
            },
        }
    ]
    assert cluster.events("SuccessfulRescale")[0] == (
        "New size: 4; reason: pods metric http_requests_per_second above target"
    )
    assert cluster.condition("ScalingActive") == (
        "True",
        "ValidMetricFound",
        "the HPA was able to successfully calculate a replica count from pods metric "
        "http_requests_per_second",
    )

    # the load falls to 25: after the 5 minutes of the stabilization window, 3 pods
    cluster.load(frontend_requests="25")
    falling = cluster.follow(330)
    assert falling[0] == 10 and falling[-1] == 3
    assert cluster.status()["currentMetrics"][0]["pods"]["current"] == {"averageValue": "8333m"}


def test_an_object_metric_on_a_service_and_an_external_metric(cluster: Cluster) -> None:
    cluster.load(queue_messages_ready="{queue=tasks} 90\n{queue=mail} 1000")
    cluster.deploy(2, rps="1")
    service = {
        "metadata": {
            "name": "front",
            "annotations": {"metrics.sim.pinnace.dev/requests-per-second": "30"},
        },
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    cluster.run(cluster.client.create(SERVICES, "default", service))
    described = {"apiVersion": "v1", "kind": "Service", "name": "front"}
    per_pod = {"type": "AverageValue", "averageValue": "10"}
    object_metric = {
        "type": "Object",
        "object": {
            "metric": {"name": "requests-per-second"},
            "describedObject": described,
            "target": per_pod,
        },
    }
    selector = {"matchLabels": {"queue": "tasks"}}
    value = {"type": "Value", "value": "45"}
    external = {
        "type": "External",
        "external": {
            "metric": {"name": "queue_messages_ready", "selector": selector},
            "target": value,
        },
    }
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 20,
            "metrics": [object_metric, external],
        },
    }
    cluster.run(cluster.client.create(HPAS, "default", body))
    cluster.wait(20)
    # the Service's 30 at 10 a pod asks for 3; the queue's 90 against 45, twice the 2 ready pods
    assert cluster.replicas() == 4
    assert cluster.status()["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "requests-per-second"},
                "current": {"averageValue": "15"},
            },
        },
        {
            "type": "External",
            "external": {
                "metric": {"name": "queue_messages_ready", "selector": selector},
                "current": {"value": "90"},
            },
        },
    ]
    assert cluster.events("SuccessfulRescale") == [
        "New size: 4; reason: external metric queue_messages_ready(&LabelSelector{MatchLabels:"
        "map[string]string{queue: tasks,},MatchExpressions:[]LabelSelectorRequirement{},}) "
        "above target"
    ]


def test_a_metric_the_adapter_does_not_have_is_reported_with_its_words(cluster: Cluster) -> None:
    cluster.deploy(1, rps="5")
    target = {"type": "AverageValue", "averageValue": "10"}
    value = {"type": "Value", "value": "10"}
    body = {
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "missing_metric"}, "target": target}},
                {"type": "External", "external": {"metric": {"name": "queue"}, "target": value}},
            ],
        },
    }
    cluster.run(cluster.client.create(HPAS, "default", body))
    cluster.wait(20)
    error = (
        "unable to get metric missing_metric: unable to fetch metrics from custom metrics "
        "API: the server could not find the metric missing_metric for pods"
    )
    assert cluster.condition("ScalingActive") == (
        "False",
        "FailedGetPodsMetric",
        f"the HPA was unable to compute the replica count: {error}",
    )
    assert cluster.events("FailedGetPodsMetric") == [error]
    assert cluster.events("FailedGetExternalMetric") == [
        "unable to get external metric default/queue/nil: unable to fetch metrics from external "
        "metrics API: the server could not find the metric queue for provided labels"
    ]
    assert cluster.events("FailedComputeMetricsReplicas") == [
        f"invalid metrics (2 invalid out of 2), first error is: failed to get pods metric "
        f"value: {error}"
    ]
    assert cluster.status()["currentMetrics"] == [{"type": ""}, {"type": ""}]


def object_target(described: Object, metric: str, value: str) -> Object:
    target = {"type": "Value", "value": value}
    return {
        "type": "Object",
        "object": {"metric": {"name": metric}, "describedObject": described, "target": target},
    }


def test_an_object_metric_of_a_custom_resource(cluster: Cluster) -> None:
    # The described object is named by group and kind, at any version, of whatever kind the
    # server serves: the custom metrics client's RESTMapper sees the CRD's kind as well.
    kind = established(cluster)
    body = crontab("nightly")
    body["metadata"]["annotations"] = {"metrics.sim.pinnace.dev/queue-length": "30"}
    cluster.run(cluster.client.create(kind, "default", body))
    cluster.deploy(1, rps="1")
    described = {"apiVersion": "stable.example.com/v1beta9", "kind": "CronTab", "name": "nightly"}
    cluster.autoscale(object_target(described, "queue-length", "10"))
    cluster.wait(20)
    assert cluster.replicas() == 3  # 30 against 10 on one pod
    assert cluster.status()["currentMetrics"] == [
        {
            "type": "Object",
            "object": {
                "metric": {"name": "queue-length"},
                "describedObject": described,
                "current": {"value": "30"},
            },
        }
    ]


def test_an_object_metric_of_a_kind_the_server_does_not_serve(cluster: Cluster) -> None:
    cluster.deploy(1, rps="1")
    described = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}
    cluster.autoscale(object_target(described, "queue-length", "10"))
    cluster.wait(20)
    error = (
        "unable to get metric queue-length: Widget on default w/unable to fetch metrics from "
        "custom metrics API: unable to map kind Widget.example.com to resource: no matches for "
        'kind "Widget" in group "example.com"'
    )
    assert cluster.condition("ScalingActive") == (
        "False",
        "FailedGetObjectMetric",
        f"the HPA was unable to compute the replica count: {error}",
    )
    assert cluster.events("FailedGetObjectMetric") == [error]
    assert cluster.replicas() == 1

    # with no adapter, that no one serves the group is found first
    cluster.server.custom_metrics = None
    cluster.wait(15)
    assert cluster.condition("ScalingActive")[2].endswith(
        "unable to fetch metrics from custom metrics API: no custom metrics API "
        "(custom.metrics.k8s.io) registered"
    )
