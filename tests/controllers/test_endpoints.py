"""The endpoints and EndpointSlice controllers on the virtual clock, against
kube-controller-manager v1.32 (pkg/controller/endpoint, pkg/controller/endpointslice): ready
pods are addresses, not-ready ones notReadyAddresses (ready=false in slices), pods being
deleted leave the Endpoints but stay in slices as terminating, named target ports resolve to
the pods' container ports, and both go with their Service."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import PODS, Workloads

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.controllers.endpoints import truncate

SERVICES = catalog.kind("", "services")
ENDPOINTS = catalog.kind("", "endpoints")
SLICES = catalog.kind("discovery.k8s.io", "endpointslices")


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


def pod(name: str, **annotations: str) -> Object:
    return {
        "metadata": {"name": name, "labels": {"app": "web"}, "annotations": annotations},
        "spec": {
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
                }
            ],
        },
    }


def web_service(**spec: Any) -> Object:
    spec = {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}], **spec}
    return {"metadata": {"name": "web", "labels": {"tier": "front"}}, "spec": spec}


def endpoints(cluster: Workloads) -> Object:
    return cluster.run(cluster.client.get(ENDPOINTS, "default", "web"))


def slices(cluster: Workloads) -> list[Object]:
    listed = cluster.run(
        cluster.client.list(SLICES, "default", label_selector="kubernetes.io/service-name=web")
    )
    return listed["items"]


def conditions(cluster: Workloads) -> dict[str, dict[str, bool]]:
    return {
        e["targetRef"]["name"]: e["conditions"] for s in slices(cluster) for e in s["endpoints"]
    }


def addresses(ep: Object, key: str) -> list[str]:
    return sorted(a["targetRef"]["name"] for s in ep.get("subsets") or [] for a in s.get(key, []))


def test_ready_pods_with_their_named_port(cluster: Workloads) -> None:
    for name in ("a", "b"):
        cluster.run(cluster.client.create(PODS, "default", pod(name)))
    cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(10)
    ep = endpoints(cluster)
    assert ep["metadata"]["labels"] == {"tier": "front"}
    assert addresses(ep, "addresses") == ["a", "b"]
    assert ep["subsets"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    (es,) = slices(cluster)
    assert es["metadata"]["generateName"] == "web-"
    assert es["metadata"]["labels"] == {
        "tier": "front",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert es["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert es["addressType"] == "IPv4"
    assert es["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    ready = {"ready": True, "serving": True, "terminating": False}
    assert conditions(cluster) == {"a": ready, "b": ready}


def test_a_pod_that_stops_being_ready_is_a_not_ready_address(cluster: Workloads) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    flaky = pod("b", **{"sim.pinnace.dev/readiness-fails-after": "30s"})
    cluster.run(cluster.client.create(PODS, "default", flaky))
    cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(10)
    assert addresses(endpoints(cluster), "addresses") == ["a", "b"]
    cluster.settle(60)
    ep = endpoints(cluster)
    assert addresses(ep, "addresses") == ["a"]
    assert addresses(ep, "notReadyAddresses") == ["b"]
    assert conditions(cluster)["b"] == {"ready": False, "serving": False, "terminating": False}


def test_a_terminating_pod_leaves_the_endpoints_and_is_terminating_in_its_slice(
    cluster: Workloads,
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    slow = pod("b", **{"sim.pinnace.dev/stop-seconds": "20"})
    cluster.run(cluster.client.create(PODS, "default", slow))
    cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(10)
    cluster.run(cluster.client.delete(PODS, "default", "b", DeleteOptions()))
    cluster.settle(5)
    assert addresses(endpoints(cluster), "addresses") == ["a"]
    assert addresses(endpoints(cluster), "notReadyAddresses") == []
    terminating = conditions(cluster)["b"]
    assert terminating["terminating"] is True
    assert terminating["ready"] is False
    cluster.settle(60)
    assert set(conditions(cluster)) == {"a"}


def test_a_service_selecting_nothing_and_its_deletion(cluster: Workloads) -> None:
    cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(5)
    assert endpoints(cluster).get("subsets") in (None, [])
    (placeholder,) = slices(cluster)
    assert (placeholder["endpoints"], placeholder["ports"]) == ([], [])
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    cluster.settle(10)
    (es,) = slices(cluster)
    assert [e["targetRef"]["name"] for e in es["endpoints"]] == ["a"]
    # the placeholder was written over, not deleted for a new slice
    assert es["metadata"]["name"] == placeholder["metadata"]["name"]
    cluster.run(cluster.client.delete(SERVICES, "default", "web"))
    cluster.settle(10)
    names = [
        e["metadata"]["name"]
        for e in cluster.run(cluster.client.list(ENDPOINTS, "default"))["items"]
    ]
    assert names == ["kubernetes"]
    assert slices(cluster) == []


def test_selectorless_and_headless_services(cluster: Workloads) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    manual = {"metadata": {"name": "manual"}, "spec": {"ports": [{"port": 80}]}}
    cluster.run(cluster.client.create(SERVICES, "default", manual))
    headless = web_service(clusterIP="None")
    cluster.run(cluster.client.create(SERVICES, "default", headless))
    cluster.settle(10)
    names = {
        e["metadata"]["name"]
        for e in cluster.run(cluster.client.list(ENDPOINTS, "default"))["items"]
    }
    assert names == {"kubernetes", "web"}  # a Service without a selector: the user's to write
    ep = endpoints(cluster)
    assert ep["metadata"]["labels"] == {"tier": "front", "service.kubernetes.io/headless": ""}
    assert addresses(ep, "addresses") == ["a"]


def test_the_last_change_trigger_time(cluster: Workloads) -> None:
    created = cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(5)
    trigger = "endpoints.kubernetes.io/last-change-trigger-time"
    created_at = created["metadata"]["creationTimestamp"]
    # the first sync: the Service's creation
    assert endpoints(cluster)["metadata"]["annotations"] == {trigger: created_at}
    assert slices(cluster)[0]["metadata"]["annotations"] == {trigger: created_at}
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    cluster.settle(10)
    ready = next(
        c["lastTransitionTime"]
        for c in cluster.run(cluster.client.get(PODS, "default", "a"))["status"]["conditions"]
        if c["type"] == "Ready"
    )
    # the pod's becoming Ready
    assert endpoints(cluster)["metadata"]["annotations"] == {trigger: ready}
    assert slices(cluster)[0]["metadata"]["annotations"] == {trigger: ready}


def test_past_a_thousand_addresses_the_endpoints_are_truncated() -> None:
    subsets = [
        {"addresses": [{"ip": f"10.0.{i // 250}.{i % 250}"} for i in range(900)], "ports": [1]},
        {"addresses": [{"ip": f"10.1.{i // 250}.{i % 250}"} for i in range(300)], "ports": [2]},
    ]
    assert truncate(subsets)
    # ready addresses cut to 1000 in proportion (750 and 250), not-ready ones dropped
    assert [len(s["addresses"]) for s in subsets] == [750, 250]
    small = [{"addresses": [{"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.2"}]}]
    assert not truncate(small)


def test_endpoints_written_for_a_service_without_selector_are_mirrored(
    cluster: Workloads,
) -> None:
    # concepts/services-networking/service: "Services without selectors"
    service = {
        "metadata": {"name": "my-service"},
        "spec": {"ports": [{"port": 80, "targetPort": 9376}]},
    }
    cluster.run(cluster.client.create(SERVICES, "default", service))
    written = {
        "metadata": {"name": "my-service", "labels": {"team": "a"}},
        "subsets": [
            {
                "addresses": [{"ip": "10.4.5.6"}],
                "notReadyAddresses": [{"ip": "10.4.5.7"}],
                "ports": [{"port": 9376}],
            }
        ],
    }
    cluster.run(cluster.client.create(ENDPOINTS, "default", written))
    cluster.settle(5)
    listed = cluster.run(
        cluster.client.list(
            SLICES, "default", label_selector="kubernetes.io/service-name=my-service"
        )
    )
    (mirrored,) = listed["items"]
    assert mirrored["metadata"]["labels"] == {
        "team": "a",
        "kubernetes.io/service-name": "my-service",
        "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io",
    }
    assert mirrored["metadata"]["ownerReferences"][0]["kind"] == "Endpoints"
    assert mirrored["addressType"] == "IPv4"
    assert mirrored["ports"] == [{"name": "", "port": 9376, "protocol": "TCP"}]
    assert mirrored["endpoints"] == [
        {"addresses": ["10.4.5.6"], "conditions": {"ready": True}},
        {"addresses": ["10.4.5.7"], "conditions": {"ready": False}},
    ]
    # the API server's own kubernetes Endpoints is not mirrored (it writes its slice itself)
    managers = {
        s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by")
        for s in cluster.run(cluster.client.list(SLICES, "default"))["items"]
    }
    assert managers == {None, "endpointslicemirroring-controller.k8s.io"}
    cluster.run(cluster.client.delete(ENDPOINTS, "default", "my-service"))
    cluster.settle(5)
    listed = cluster.run(
        cluster.client.list(
            SLICES, "default", label_selector="kubernetes.io/service-name=my-service"
        )
    )
    assert listed["items"] == []


def test_only_a_pod_change_an_endpoint_shows_syncs_its_service(cluster: Workloads) -> None:
    """podEndpointsChanged: a pod status change that no endpoint shows (a condition of its
    own) syncs no Service, so the Endpoints stay as someone left them; a readiness change
    syncs it and the controller writes them back."""
    cluster.run(cluster.client.create(PODS, "default", pod("a")))
    flaky = pod("b", **{"sim.pinnace.dev/readiness-fails-after": "30s"})
    cluster.run(cluster.client.create(PODS, "default", flaky))
    cluster.run(cluster.client.create(SERVICES, "default", web_service()))
    cluster.settle(10)
    ep = endpoints(cluster)
    edited = {**ep, "metadata": {**ep["metadata"], "labels": {"edited": "by-hand"}}}
    edited = cluster.run(cluster.client.update(ENDPOINTS, edited))
    a = cluster.run(cluster.client.get(PODS, "default", "a"))
    extra = {"type": "example.com/Audited", "status": "True"}
    conditions_of_a = [*a["status"]["conditions"], extra]
    a = {**a, "status": {**a["status"], "conditions": conditions_of_a}}
    cluster.run(cluster.client.update_status(PODS, a))
    cluster.settle(5)
    version = endpoints(cluster)["metadata"]["resourceVersion"]
    assert version == edited["metadata"]["resourceVersion"], "no Service synced: the edit stays"
    cluster.settle(60)  # b's readiness probe fails
    ep = endpoints(cluster)
    assert ep["metadata"]["labels"] == {"tier": "front"}
    assert addresses(ep, "notReadyAddresses") == ["b"]
