"""The HorizontalPodAutoscaler on a custom resource's scale subresource, on the virtual clock:
the target's group and kind are mapped to the kinds the server serves (as v1.32's
scaleForResourceMappings does with its RESTMapper), its Scale's `status.selector` finds the
pods, and the new count is written through /scale; a kind nothing serves and a CRD without
the scale subresource are reported as v1.32 reports them."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.test_hpa import Autoscaling, cpu
from tests.controllers.test_remote_controller_manager import AppClient

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.client.mapper import DiscoveryMapper

CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
SCALE = {
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
    "labelSelectorPath": ".status.selector",
}


def webapp_crd(scale: bool = True) -> Object:
    """`webapps.example.com`, kind WebApp: an operator's resource that says how many replicas
    it wants (with the scale subresource at spec.replicas, status.replicas and
    status.selector, or without it)."""
    replicas = {"replicas": {"type": "integer"}}
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": copy.deepcopy(replicas)},
            "status": {
                "type": "object",
                "properties": {**replicas, "selector": {"type": "string"}},
            },
        },
    }
    subresources: Object = {"status": {}}
    if scale:
        subresources["scale"] = SCALE
    return {
        "metadata": {"name": "webapps.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "webapps", "kind": "WebApp"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources,
                }
            ],
        },
    }


class CustomTarget(Autoscaling):
    """The `web` Deployment's pods (app=web) are those the WebApp `web` says it runs."""

    def establish(self, scale: bool = True) -> Kind:
        self.run(self.client.create(CRDS, "", webapp_crd(scale)))
        self.wait(1)
        kind = self.server.kinds.by_resource("example.com", "webapps")
        assert kind is not None
        return kind

    def webapp(self, kind: Kind, replicas: int) -> None:
        body = {
            "apiVersion": "example.com/v1",
            "kind": "WebApp",
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas},
        }
        created = self.run(self.client.create(kind, "default", body))
        created["status"] = {"replicas": replicas, "selector": "app=web"}
        self.run(self.client.update_status(kind, created))

    def autoscale_webapp(self, kind: str = "WebApp", **spec: Any) -> None:
        ref = {"apiVersion": "example.com/v1", "kind": kind, "name": "web"}
        self.autoscale(scaleTargetRef=ref, **spec)

    def wanted(self, kind: Kind) -> int:
        return self.run(self.client.get(kind, "default", "web"))["spec"]["replicas"]


@pytest.fixture
def cluster() -> Iterator[CustomTarget]:
    c = CustomTarget()
    yield c
    c.close()


def test_the_hpa_scales_a_custom_resource_through_its_scale_subresource(
    cluster: CustomTarget,
) -> None:
    kind = cluster.establish()
    cluster.deploy(2)
    cluster.webapp(kind, 2)
    cluster.autoscale_webapp(metrics=[cpu(50)])
    # 400m over two pods requesting 100m each, against 50%: 8 replicas wanted, at most
    # max(2 x 2, 4) = 4 the first period
    cluster.cpu_millis = 400
    cluster.wait(20)
    assert cluster.wanted(kind) == 4
    assert cluster.condition("AbleToScale")[:2] == ("True", "SucceededRescale")
    assert cluster.events("SuccessfulRescale") == [
        "New size: 4; reason: cpu resource utilization (percentage of request) above target"
    ]
    cluster.wait(15)
    assert cluster.wanted(kind) == 8
    status = cluster.hpa()["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (4, 8)
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 200
    assert cluster.replicas() == 2  # the Deployment is not the target

    # the load falls: the highest recommendation of the last 5 minutes holds, then it goes
    cluster.cpu_millis = 20
    cluster.wait(270)
    assert cluster.wanted(kind) == 8
    assert cluster.condition("AbleToScale")[1] == "ScaleDownStabilized"
    cluster.wait(60)
    assert cluster.wanted(kind) == 1
    assert cluster.events("SuccessfulRescale")[-1] == (
        "New size: 1; reason: All metrics below target"
    )


def test_a_kind_nothing_serves_is_reported_until_its_crd_is_established(
    cluster: CustomTarget,
) -> None:
    cluster.deploy(1)
    cluster.autoscale_webapp()
    cluster.wait(20)
    message = 'no matches for kind "WebApp" in group "example.com"'
    assert cluster.condition("AbleToScale") == (
        "False",
        "FailedGetScale",
        f"the HPA controller was unable to get the target's current scale: {message}",
    )
    assert cluster.events("FailedGetScale") == [message]

    kind = cluster.establish()
    cluster.webapp(kind, 1)
    cluster.wait(15)
    assert cluster.condition("AbleToScale")[0] == "True"
    assert cluster.hpa()["status"]["currentReplicas"] == 1


def test_a_crd_without_the_scale_subresource_cannot_be_a_target(cluster: CustomTarget) -> None:
    kind = cluster.establish(scale=False)
    cluster.deploy(1)
    cluster.webapp(kind, 1)
    cluster.autoscale_webapp()
    cluster.wait(20)
    # kube-apiserver answers /scale of a CRD that does not declare it with the object's 404
    message = 'webapps.example.com "web" not found'
    assert cluster.condition("AbleToScale") == (
        "False",
        "FailedGetScale",
        f"the HPA controller was unable to get the target's current scale: {message}",
    )
    assert cluster.events("FailedGetScale") == [message]
    assert cluster.wanted(kind) == 1


def test_discovery_maps_a_custom_kind_at_each_version_it_is_served(cluster: CustomTarget) -> None:
    # what the HPA of a `pinnace controller-manager` process maps its target with
    mapper = DiscoveryMapper(AppClient(cluster.plane.http_app()))
    assert cluster.run(mapper.mappings("example.com", "WebApp")) == []
    cluster.establish()
    [found] = cluster.run(mapper.mappings("example.com", "WebApp"))
    assert (found.api_version, found.plural) == ("example.com/v1", "webapps")
    assert found.namespaced
    [deployments] = cluster.run(mapper.mappings("apps", "Deployment"))
    assert (deployments.api_version, deployments.plural) == ("apps/v1", "deployments")
