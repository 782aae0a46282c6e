"""The HorizontalPodAutoscaler controller on the virtual clock: a Deployment on simulated nodes,
the metrics API answering from a load the test sets, and the controllers `pinnace up` runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import EVENTS
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.autoscaling.hpa import default_hpa
from pinnace.api.objects import Object
from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.client import InformerFactory
from pinnace.clock.rfc3339 import format_time
from pinnace.cluster import ClusterOptions
from pinnace.controllers.hpa_behavior import Normalizer
from pinnace.controllers.hpa_replicas import (
    MetricError,
    PodMetric,
    PodMetricsInfo,
    ReplicaCalculator,
)
from pinnace.kubelet import node_configs

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
MI = 1024 * 1024


class AutoscaledWeb(SimulatedCluster):
    """Two nodes, the scheduler and the controllers, and what a test reads back of the
    Deployment `web` and its HorizontalPodAutoscaler `web` in `default`."""

    def __init__(self) -> None:
        nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
        super().__init__(ClusterOptions(nodes=nodes, seed=3))

    def replicas(self) -> int:
        return self.run(self.client.get(DEPLOYMENTS, "default", "web"))["spec"]["replicas"]

    def hpa(self) -> Object:
        return self.run(self.client.get(HPAS, "default", "web"))

    def condition(self, kind: str) -> tuple[str, str, str]:
        for c in self.hpa()["status"].get("conditions") or []:
            if c["type"] == kind:
                return c["status"], c["reason"], c["message"]
        raise AssertionError(f"no {kind} condition")

    def events(self, reason: str) -> list[str]:
        items = self.run(self.client.list(EVENTS, "default"))["items"]
        found = [e for e in items if e["reason"] == reason]
        return [e["message"] for e in sorted(found, key=lambda e: e["firstTimestamp"])]

    def follow(self, seconds: float, step: float = 15.0) -> list[int]:
        """The target's replica count after each `step` for `seconds`."""
        seen = []
        for _ in range(int(seconds / step)):
            self.wait(step)
            seen.append(self.replicas())
        return seen


class Autoscaling(AutoscaledWeb):
    """`AutoscaledWeb` with a metrics source of the test's own (or none): the running pods of
    the `web` deployment share `cpu_millis` and `memory_mib` equally."""

    def __init__(self, metrics: bool = True) -> None:
        super().__init__()
        self.cpu_millis = 0
        self.memory_mib = 10
        self.informers = InformerFactory(self.client)
        self.pods = self.informers.informer(PODS)
        self.informers.start()
        self.server.metrics_source = self.summaries if metrics else None
        self.wait(2)

    def summaries(self) -> dict[str, Summary]:
        running = [p for p in self.pods.list("default") if p["status"].get("phase") == "Running"]
        now = self.server.clock.now()
        by_node: dict[str, Summary] = {}
        for pod in running:
            node = pod["spec"]["nodeName"]
            summary = by_node.setdefault(node, Summary(now, NodeStats()))
            share = ContainerStats(
                "app",
                self.cpu_millis * 1_000_000 // len(running),
                self.memory_mib * MI // len(running),
            )
            m = pod["metadata"]
            summary.pods.append(PodStats(m["uid"], m["namespace"], m["name"], [share]))
        return by_node

    def deploy(self, replicas: int = 1) -> None:
        container = {
            "name": "app",
            "image": "nginx",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        }
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [container]},
                },
            },
        }
        self.run(self.client.create(DEPLOYMENTS, "default", body))

    def autoscale(self, metrics: list[Object] | None = None, **spec: Any) -> None:
        body = {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": metrics or [cpu(50)],
                **spec,
            },
        }
        self.run(self.client.create(HPAS, "default", body))

    def close(self) -> None:
        self.run(self.informers.stop())
        super().close()


def cpu(utilization: int) -> Object:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


def memory_average(value: str) -> Object:
    target = {"type": "AverageValue", "averageValue": value}
    return {"type": "Resource", "resource": {"name": "memory", "target": target}}


@pytest.fixture
def cluster() -> Iterator[Autoscaling]:
    c = Autoscaling()
    yield c
    c.close()


CPU_REASON = "cpu resource utilization (percentage of request) above target"


def test_replicas_follow_a_load_ramp_up_and_back_down_after_the_stabilization_window(
    cluster: Autoscaling,
) -> None:
    cluster.deploy(1)
    cluster.autoscale()
    cluster.cpu_millis = 30
    cluster.wait(60)
    assert cluster.replicas() == 1
    status = cluster.hpa()["status"]
    [current] = status["currentMetrics"]
    assert current["resource"]["current"] == {"averageUtilization": 30, "averageValue": "30m"}
    assert status["currentReplicas"] == status["desiredReplicas"] == 1

    # 800m over 100m requests at a 50% target wants 16 pods: at most max(2 x n, 4) per sync,
    # and never more than maxReplicas
    cluster.cpu_millis = 800
    rising = cluster.follow(120)
    assert rising[-1] == 10
    assert rising == sorted(rising) and rising[0] > 1
    assert cluster.events("SuccessfulRescale")[0] == f"New size: 4; reason: {CPU_REASON}"
    assert cluster.condition("ScalingLimited") == (
        "True",
        "TooManyReplicas",
        "the desired replica count is more than the maximum replica count",
    )
    assert "lastScaleTime" in cluster.hpa()["status"]

    # the load falls to 60m: 10 pods at 6% want 2, but for 5 minutes the highest recent
    # recommendation (10) holds
    cluster.cpu_millis = 60
    held = cluster.follow(270)
    assert set(held) == {10}
    assert cluster.condition("AbleToScale")[1] == "ScaleDownStabilized"
    falling = cluster.follow(60)
    assert falling[-1] == 2
    assert (
        cluster.events("SuccessfulRescale")[-1] == "New size: 2; reason: All metrics below target"
    )


def test_a_change_within_the_tolerance_does_not_scale(cluster: Autoscaling) -> None:
    cluster.deploy(2)
    cluster.autoscale()
    cluster.cpu_millis = 108  # 54% of the requests against 50%: a ratio of 1.08
    cluster.wait(60)
    assert cluster.replicas() == 2
    assert (
        cluster.hpa()["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"]
        == 54
    )
    cluster.cpu_millis = 112  # 56%: 1.12 is past the tolerance of 0.1
    cluster.wait(30)
    assert cluster.replicas() == 3


def test_the_largest_proposal_of_several_metrics_wins(cluster: Autoscaling) -> None:
    cluster.deploy(2)
    cluster.autoscale([cpu(50), memory_average("100Mi")])
    cluster.cpu_millis = 20
    cluster.memory_mib = 300  # 150Mi a pod: 1.5 x the target
    cluster.wait(40)
    assert cluster.replicas() == 3
    assert cluster.events("SuccessfulRescale") == [
        "New size: 3; reason: memory resource above target"
    ]
    # three pods now: 7m (6.67m rounded up) of 100m each, and 100Mi each, which the HPA
    # writes as a DecimalSI milli-quantity, as Kubernetes does
    metrics = cluster.hpa()["status"]["currentMetrics"]
    assert metrics[0]["resource"]["current"]["averageUtilization"] == 7
    assert metrics[1] == {
        "type": "Resource",
        "resource": {"name": "memory", "current": {"averageValue": "104857600"}},
    }


def test_min_replicas_are_restored_and_max_replicas_bound_the_target(cluster: Autoscaling) -> None:
    cluster.deploy(1)
    cluster.autoscale(minReplicas=2, maxReplicas=3)
    cluster.wait(20)
    assert cluster.replicas() == 2
    assert cluster.events("SuccessfulRescale") == [
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    ]
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 6))
    cluster.wait(20)
    assert cluster.replicas() == 3
    assert cluster.events("SuccessfulRescale")[-1] == (
        "New size: 3; reason: Current number of replicas above Spec.MaxReplicas"
    )


def test_scale_up_policies_limit_the_rate(cluster: Autoscaling) -> None:
    cluster.deploy(1)
    behavior = {
        "scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
        "scaleDown": {"stabilizationWindowSeconds": 0},
    }
    cluster.autoscale(behavior=behavior)
    cluster.cpu_millis = 500
    seen = cluster.follow(180, step=30)
    # one pod more per minute
    assert seen == [2, 2, 3, 3, 4, 4]
    assert cluster.condition("ScalingLimited")[1] == "ScaleUpLimit"
    cluster.cpu_millis = 10
    cluster.wait(30)
    assert cluster.replicas() == 1  # no stabilization window down, 100% per 15 s by default


def test_without_metrics_the_hpa_reports_why_it_cannot_scale() -> None:
    cluster = Autoscaling(metrics=False)
    try:
        cluster.deploy(2)
        cluster.autoscale()
        cluster.wait(20)
        assert cluster.replicas() == 2
        status, reason, message = cluster.condition("ScalingActive")
        assert (status, reason) == ("False", "FailedGetResourceMetric")
        assert message == (
            "the HPA was unable to compute the replica count: failed to get cpu utilization: "
            "unable to get metrics for resource cpu: unable to fetch metrics from resource "
            "metrics API: the server could not find the requested resource "
            "(get pods.metrics.k8s.io)"
        )
        assert cluster.condition("AbleToScale")[:2] == ("True", "SucceededGetScale")
        assert cluster.hpa()["status"]["currentReplicas"] == 2
        assert cluster.events("FailedComputeMetricsReplicas")
    finally:
        cluster.close()


# --- the replica calculator on hand-made pods ---------------------------------------------------

NOW = 10_000.0


def pod(
    name: str,
    request: str = "100m",
    phase: str = "Running",
    started: float = NOW - 600,
    ready: str | None = "True",
    ready_since: float = NOW - 590,
) -> Object:
    status: Object = {"phase": phase, "startTime": format_time(started)}
    if ready is not None:
        since = format_time(ready_since)
        status["conditions"] = [{"type": "Ready", "status": ready, "lastTransitionTime": since}]
    container = {"name": "app", "resources": {"requests": {"cpu": request}}}
    return {"metadata": {"name": name}, "spec": {"containers": [container]}, "status": status}


def usage(**millis: int) -> PodMetricsInfo:
    return {name: PodMetric(value, NOW, 10.0) for name, value in millis.items()}


def proposal(pods: list[Object], metrics: PodMetricsInfo, current: int, target: int = 50) -> int:
    calculator = ReplicaCalculator()
    return calculator.resource_replicas(current, target, "cpu", metrics, pods, NOW).replicas


def test_unready_pods_count_as_using_nothing_when_scaling_up() -> None:
    pods = [pod("ready"), pod("starting", request="300m", phase="Pending", ready=None)]
    # alone, the ready pod (260% of its request against 50%) would ask for 6; with the pending
    # pod's request at 0% the utilization is 65%: 3
    assert proposal(pods, usage(ready=260), current=2) == 3


def test_pods_without_metrics_count_as_using_their_request_when_scaling_down() -> None:
    pods = [pod("a"), pod("b"), pod("c"), pod("silent")]
    # 40% against 50% asks for 3 of the 3 measured; the silent pod at 100% makes it 55%,
    # within the tolerance: 4 stay
    assert proposal(pods, usage(a=40, b=40, c=40), current=4) == 4
    assert proposal(pods[:3], usage(a=40, b=40, c=40), current=3) == 3  # 0.8 x 3 = 2.4 -> 3
    assert proposal(pods[:3], usage(a=20, b=20, c=20), current=3) == 2


def test_cpu_of_pods_still_starting_is_left_out() -> None:
    # started a minute ago and ready for 5 s: less than one 10 s metrics window
    fresh = pod("fresh", started=NOW - 60, ready_since=NOW - 5)
    assert proposal([pod("old"), fresh], usage(old=50, fresh=500), current=2) == 2
    # ready for 30 s: its sample counts, 275% against 50%
    warm = pod("warm", started=NOW - 60, ready_since=NOW - 30)
    assert proposal([pod("old"), warm], usage(old=50, warm=500), current=2) == 11


def test_a_pod_past_start_up_is_left_out_only_if_it_was_never_ready() -> None:
    never = pod("never", ready="False", ready_since=NOW - 595)  # 5 s after start
    lost = pod("lost", ready="False", ready_since=NOW - 100)  # ready once, lost readiness
    assert proposal([pod("a"), never], usage(a=50, never=500), current=2) == 2
    assert proposal([pod("a"), lost], usage(a=50, lost=500), current=2) == 11


def test_a_container_without_a_request_is_an_error() -> None:
    bare = pod("bare")
    bare["spec"]["containers"][0]["resources"] = {}
    with pytest.raises(MetricError, match="missing request for cpu in container app of Pod bare"):
        proposal([bare], usage(bare=10), current=1)


# --- normalization: stabilization and rate policies, on explicit times ---------------------------


def normalize(normalizer: Normalizer, spec: Object, current: int, desired: int, now: float) -> int:
    replicas, _ = normalizer.normalize("default/web", spec, current, desired, 1, now)
    if replicas != current:
        normalizer.record_scale("default/web", spec.get("behavior"), current, replicas, now)
    return replicas


def behavior(up: Object | None = None, down: Object | None = None) -> Object:
    """A spec whose behavior is defaulted as the API server defaults it."""
    hpa = {"spec": {"maxReplicas": 20, "behavior": {"scaleUp": up, "scaleDown": down}}}
    default_hpa(hpa)
    return hpa["spec"]


def test_a_percent_scale_down_policy_limits_each_period() -> None:
    spec = behavior(
        down={
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}],
        }
    )
    normalizer = Normalizer()
    seen, current = [], 10
    for step in range(7):
        current = normalize(normalizer, spec, current, 1, step * 30.0)
        seen.append(current)
    # half of the count at the start of each 60 s period, rounded down
    assert seen == [5, 5, 2, 2, 1, 1, 1]


def test_select_policy_min_takes_the_smaller_change_and_disabled_none() -> None:
    up = {
        "selectPolicy": "Min",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    assert normalize(Normalizer(), behavior(up=up), 2, 10, 0.0) == 4  # +100% < +4
    disabled = behavior(down={"selectPolicy": "Disabled"})
    normalizer = Normalizer()
    assert normalize(normalizer, disabled, 5, 1, 0.0) == 5
    _, conditions = normalizer.normalize("default/web", disabled, 5, 1, 1, 400.0)
    assert conditions[1][:3] == ("ScalingLimited", "True", "ScaleDownLimit")


def test_a_scale_up_stabilization_window_takes_the_lowest_recent_recommendation() -> None:
    spec = behavior(up={"stabilizationWindowSeconds": 60})
    normalizer = Normalizer()
    normalizer.record_initial("default/web", 2, 0.0)
    assert normalize(normalizer, spec, 2, 8, 15.0) == 2  # the recommendation of 2 at 0 s holds
    assert normalize(normalizer, spec, 2, 8, 45.0) == 2
    # every recent recommendation says 8 now; the default policies add at most 4 pods a period
    assert normalize(normalizer, spec, 2, 8, 75.0) == 6


def test_a_missing_target_or_one_scaled_to_zero_is_reported(cluster: Autoscaling) -> None:
    cluster.autoscale()
    cluster.wait(20)
    assert cluster.condition("AbleToScale") == (
        "False",
        "FailedGetScale",
        "the HPA controller was unable to get the target's current scale: "
        'deployments.apps "web" not found',
    )
    assert cluster.events("FailedGetScale") == ['deployments.apps "web" not found']

    cluster.deploy(0)
    cluster.wait(15)
    assert cluster.condition("AbleToScale")[:2] == ("True", "SucceededGetScale")
    assert cluster.condition("ScalingActive") == (
        "False",
        "ScalingDisabled",
        "scaling is disabled since the replica count of the target is zero",
    )
    assert cluster.replicas() == 0


def test_a_container_resource_metric_reads_one_container(cluster: Autoscaling) -> None:
    cluster.deploy(1)
    target = {"type": "Utilization", "averageUtilization": 50}
    container = {"name": "cpu", "container": "app", "target": target}
    cluster.autoscale([{"type": "ContainerResource", "containerResource": container}])
    cluster.cpu_millis = 80
    cluster.wait(20)
    assert cluster.replicas() == 2
    assert cluster.events("SuccessfulRescale") == [
        "New size: 2; reason: cpu container resource utilization (percentage of request) "
        "above target"
    ]
    [current] = cluster.hpa()["status"]["currentMetrics"]
    assert current == {
        "type": "ContainerResource",
        "containerResource": {
            "name": "cpu",
            "container": "app",
            "current": {"averageUtilization": 80, "averageValue": "80m"},
        },
    }


def test_custom_metrics_fail_as_without_an_adapter(cluster: Autoscaling) -> None:
    cluster.server.custom_metrics = None
    cluster.deploy(1)
    target = {"type": "AverageValue", "averageValue": "10"}
    pods = {"metric": {"name": "requests_per_second"}, "target": target}
    cluster.autoscale([{"type": "Pods", "pods": pods}])
    cluster.wait(20)
    status, reason, message = cluster.condition("ScalingActive")
    assert (status, reason) == ("False", "FailedGetPodsMetric")
    assert message == (
        "the HPA was unable to compute the replica count: unable to get metric "
        "requests_per_second: unable to fetch metrics from custom metrics API: no custom "
        "metrics API (custom.metrics.k8s.io) registered"
    )
    assert cluster.hpa()["status"]["currentMetrics"] == [{"type": ""}]
