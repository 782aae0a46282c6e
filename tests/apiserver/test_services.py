"""Services through the API server: v1.32's defaulting, validation wording and the service
storage's allocations (pkg/registry/core/service/storage), and the `kubernetes` Service the
API server keeps in `default`."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.service_allocation import ServiceNetwork
from pinnace.store import MemoryStore

SERVICES = catalog.kind("", "services")
ENDPOINTS = catalog.kind("", "endpoints")
SLICES = catalog.kind("discovery.k8s.io", "endpointslices")


def service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"metadata": {"name": name}, "spec": spec}


def create(api: Harness, name: str, **spec: Any) -> dict[str, Any]:
    return api.call(api.server.create, SERVICES, "default", service(name, **spec)).obj


def test_the_kubernetes_service_has_the_first_ip_and_the_api_servers_port(api: Harness) -> None:
    svc = api.call(api.server.get, SERVICES, "default", "kubernetes")
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["ports"] == [
        {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}
    ]
    ep = api.call(api.server.get, ENDPOINTS, "default", "kubernetes")
    assert ep["subsets"][0]["ports"] == [{"name": "https", "port": 6443, "protocol": "TCP"}]
    es = api.call(api.server.get, SLICES, "default", "kubernetes")
    assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert es["endpoints"][0]["conditions"] == {"ready": True}


def test_defaults_and_an_allocated_cluster_ip(api: Harness) -> None:
    spec = create(api, "web", selector={"app": "web"})["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("SingleStack", ["IPv4"])
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    # dynamic allocations come from above the static band (the first 256 addresses)
    assert spec["clusterIP"].startswith("10.") and not spec["clusterIP"].startswith("10.96.0.")


def test_a_requested_ip_is_honoured_once(api: Harness) -> None:
    assert create(api, "a", clusterIP="10.96.0.10")["spec"]["clusterIPs"] == ["10.96.0.10"]
    assert api.invalid_causes(
        api.server.create, SERVICES, "default", service("b", clusterIP="10.96.0.10")
    ) == [
        'spec.clusterIPs: Invalid value: []string{"10.96.0.10"}: failed to allocate IP '
        "10.96.0.10: provided IP is already allocated"
    ]
    assert api.invalid_causes(
        api.server.create, SERVICES, "default", service("c", clusterIP="10.0.0.1")
    ) == [
        'spec.clusterIPs: Invalid value: []string{"10.0.0.1"}: failed to allocate IP 10.0.0.1: '
        "the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is "
        "10.96.0.0/12"
    ]


def test_delete_releases_the_ip_and_node_port(api: Harness) -> None:
    spec = create(api, "np", type="NodePort", clusterIP="10.96.0.20")["spec"]
    node_port = spec["ports"][0]["nodePort"]
    assert 30000 + 86 <= node_port <= 32767  # the upper band first
    again = service("np2", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
    assert api.invalid_causes(api.server.create, SERVICES, "default", again) == [
        f"spec.ports[0].nodePort: Invalid value: {node_port}: provided port is already allocated"
    ]
    api.call(api.server.delete, SERVICES, "default", "np")
    assert create(
        api,
        "np2",
        type="NodePort",
        clusterIP="10.96.0.20",
        ports=[{"port": 80, "nodePort": node_port}],
    )


def test_a_node_port_out_of_range_and_on_a_cluster_ip_service(api: Harness) -> None:
    bad = service("np", type="NodePort", ports=[{"port": 80, "nodePort": 80}])
    assert api.invalid_causes(api.server.create, SERVICES, "default", bad) == [
        "spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. "
        "The range of valid ports is 30000-32767"
    ]
    bad = service("cip", ports=[{"port": 80, "nodePort": 30500}])
    assert api.invalid_causes(api.server.create, SERVICES, "default", bad) == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    ]


def test_a_refused_create_gives_its_ip_back(api: Harness) -> None:
    bad = service("x", clusterIP="10.96.0.30", ports=[{"port": 80}, {"port": 81}])
    assert api.invalid_causes(api.server.create, SERVICES, "default", bad) == [
        "spec.ports[0].name: Required value",
        "spec.ports[1].name: Required value",
    ]
    assert create(api, "y", clusterIP="10.96.0.30")["spec"]["clusterIP"] == "10.96.0.30"


def test_headless_services(api: Harness) -> None:
    spec = create(api, "db", clusterIP="None", selector={"app": "db"})["spec"]
    assert (spec["clusterIPs"], spec["ipFamilyPolicy"], spec["ipFamilies"]) == (
        ["None"],
        "SingleStack",
        ["IPv4"],
    )
    spec = create(api, "ext", clusterIP="None", ports=[])["spec"]
    assert (spec["ipFamilyPolicy"], spec["ipFamilies"]) == ("RequireDualStack", ["IPv4", "IPv6"])
    bad = service("np", type="NodePort", clusterIP="None")
    assert api.invalid_causes(api.server.create, SERVICES, "default", bad) == [
        'spec.clusterIPs[0]: Invalid value: "None": '
        "may not be set to 'None' for NodePort services"
    ]


def test_validation_wording(api: Harness) -> None:
    bad = {
        "metadata": {"name": "Web"},
        "spec": {
            "type": "Foo",
            "sessionAffinity": "Sticky",
            "ports": [{"port": 0, "protocol": "HTTP"}],
        },
    }
    assert api.invalid_causes(api.server.create, SERVICES, "default", bad) == [
        'metadata.name: Invalid value: "Web": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an "
        "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
        "'[a-z]([-a-z0-9]*[a-z0-9])?')",
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        # targetPort defaults to port
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"',
        'spec.type: Unsupported value: "Foo": supported values: "ClusterIP", "ExternalName", '
        '"LoadBalancer", "NodePort"',
    ]


def test_an_update_keeps_the_allocations_and_may_not_change_the_ip(api: Harness) -> None:
    created = create(api, "web", type="NodePort")
    ip, node_port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    # a PUT that leaves the allocated fields out keeps them
    body = service("web", type="NodePort")
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = api.call(api.server.update, SERVICES, "default", "web", body).obj
    assert updated["spec"]["clusterIP"] == ip
    assert updated["spec"]["ports"][0]["nodePort"] == node_port

    def move(svc: dict[str, Any]) -> dict[str, Any]:
        svc["spec"]["clusterIP"] = "10.96.0.40"
        svc["spec"]["clusterIPs"] = ["10.96.0.40"]
        return svc

    with pytest.raises(StatusError) as e:
        api.call(api.server.modify, SERVICES, "default", "web", move)
    assert e.value.code == 422
    assert (
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.40"}: may not change once set'
        in str(e.value)
    )


def test_a_type_change_to_cluster_ip_releases_the_node_port(api: Harness) -> None:
    created = create(api, "web", type="NodePort")
    node_port = created["spec"]["ports"][0]["nodePort"]

    def to_cluster_ip(svc: dict[str, Any]) -> dict[str, Any]:
        svc["spec"]["type"] = "ClusterIP"
        svc["spec"].pop("externalTrafficPolicy")
        return svc

    updated = api.call(api.server.modify, SERVICES, "default", "web", to_cluster_ip).obj
    assert "nodePort" not in updated["spec"]["ports"][0]
    taken = service("np", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
    assert api.call(api.server.create, SERVICES, "default", taken).obj


def test_quota_counts_services_node_ports_and_load_balancers(api: Harness) -> None:
    # the docs' "Configure Quotas for API Objects" task, with node ports
    quotas = catalog.kind("", "resourcequotas")
    hard = {"services": "3", "services.nodeports": "1", "services.loadbalancers": "0"}
    quota = {"metadata": {"name": "object-quota-demo"}, "spec": {"hard": hard}}
    api.call(api.server.create, quotas, "default", quota)
    create(api, "a", type="NodePort")
    used = api.call(api.server.get, quotas, "default", "object-quota-demo")["status"]["used"]
    # the kubernetes Service counts too
    assert used == {"services": "2", "services.loadbalancers": "0", "services.nodeports": "1"}
    with pytest.raises(StatusError) as e:
        create(api, "b", type="LoadBalancer")
    assert (e.value.code, str(e.value)) == (
        403,
        'services "b" is forbidden: exceeded quota: object-quota-demo, requested: '
        "services.loadbalancers=1,services.nodeports=1, used: "
        "services.loadbalancers=0,services.nodeports=1, limited: "
        "services.loadbalancers=0,services.nodeports=1",
    )


def test_another_service_cidr_and_node_port_range() -> None:
    network = ServiceNetwork(
        cluster_ip_range="172.20.0.0/24", node_port_range=(31000, 31001), secure_port=8443
    )
    harness = Harness(network=network)
    try:
        kubernetes = harness.call(harness.server.get, SERVICES, "default", "kubernetes")
        assert kubernetes["spec"]["clusterIP"] == "172.20.0.1"
        assert kubernetes["spec"]["ports"][0]["targetPort"] == 8443
        spec = create(
            harness,
            "np",
            type="NodePort",
            ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}],
        )["spec"]
        assert sorted(p["nodePort"] for p in spec["ports"]) == [31000, 31001]
        assert spec["clusterIP"].startswith("172.20.0.")
        with pytest.raises(StatusError) as e:
            create(harness, "full", type="NodePort")
        assert (e.value.code, str(e.value)) == (
            500,
            "Internal error occurred: failed to allocate a nodePort: range is full",
        )
    finally:
        harness.loop.close()


def test_a_restart_on_the_same_data_keeps_the_allocations_and_follows_the_port() -> None:
    store = MemoryStore()
    first = Harness(store)
    taken = create(first, "web", type="NodePort")["spec"]
    first.loop.close()
    again = Harness(store, network=ServiceNetwork(secure_port=7443))
    try:
        kubernetes = again.call(again.server.get, SERVICES, "default", "kubernetes")
        assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"
        assert kubernetes["spec"]["ports"][0]["targetPort"] == 7443
        ep = again.call(again.server.get, ENDPOINTS, "default", "kubernetes")
        assert ep["subsets"][0]["ports"][0]["port"] == 7443
        es = again.call(again.server.get, SLICES, "default", "kubernetes")
        assert es["ports"][0]["port"] == 7443
        same_ip = service("other", clusterIP=taken["clusterIP"])
        assert again.invalid_causes(again.server.create, SERVICES, "default", same_ip)
        node_port = taken["ports"][0]["nodePort"]
        same_port = service("other", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
        assert again.invalid_causes(again.server.create, SERVICES, "default", same_port)
    finally:
        again.loop.close()


def test_endpoints_and_endpoint_slice_validation(api: Harness) -> None:
    empty = {"metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 80}]}]}
    assert api.invalid_causes(api.server.create, ENDPOINTS, "default", empty) == [
        "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"
    ]
    loopback = {"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]}
    assert api.invalid_causes(api.server.create, ENDPOINTS, "default", loopback) == [
        'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback '
        "range (127.0.0.0/8, ::1/128)"
    ]
    ok = {
        "metadata": {"name": "e"},
        "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}],
    }
    created = api.call(api.server.create, ENDPOINTS, "default", ok).obj
    assert created["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]
    bad_slice = {
        "metadata": {"name": "s"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["fd00::1"]}, {"addresses": []}],
        "ports": [{"port": 80}],
    }
    assert api.invalid_causes(api.server.create, SLICES, "default", bad_slice) == [
        'endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
        "endpoints[1].addresses: Required value: must contain at least 1 address",
    ]
    bad_slice["endpoints"] = [{"addresses": ["10.1.2.3"]}]
    stored = api.call(api.server.create, SLICES, "default", bad_slice).obj
    assert stored["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]


def test_a_single_stack_cluster_refuses_dual_stack_and_the_other_family(api: Harness) -> None:
    def causes(**spec: Any) -> list[str]:
        body = service("x", selector={"app": "x"}, **spec)
        return api.invalid_causes(api.server.create, SERVICES, "default", body)

    assert causes(ipFamilyPolicy="RequireDualStack") == [
        'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured '
        "for dual-stack services"
    ]
    assert causes(ipFamilies=["IPv6"]) == [
        'spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster'
    ]
    assert causes(clusterIP="fd00::1") == [
        'spec.clusterIPs[0]: Invalid value: []string{"fd00::1"}: IPv6 is not configured on this '
        "cluster"
    ]
    assert causes(ipFamilyPolicy="SingleStack", ipFamilies=["IPv4", "IPv6"]) == [
        'spec.ipFamilyPolicy: Invalid value: "SingleStack": must be '
        "'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"
    ]
    prefer = create(api, "p", selector={"app": "p"}, ipFamilyPolicy="PreferDualStack")["spec"]
    assert (prefer["ipFamilyPolicy"], prefer["ipFamilies"]) == ("PreferDualStack", ["IPv4"])


def test_a_put_leaving_out_what_was_allocated_writes_nothing(api: Harness) -> None:
    created = create(api, "web", type="NodePort")
    body = service("web", type="NodePort")
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = api.call(api.server.update, SERVICES, "default", "web", body).obj
    assert updated["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_load_balancers_status(api: Harness) -> None:
    create(api, "lb", type="LoadBalancer")
    create(api, "plain")

    def ingress(**fields: str) -> Any:
        def mutate(svc: dict[str, Any]) -> dict[str, Any]:
            svc["status"] = {"loadBalancer": {"ingress": [fields]}}
            return svc

        return mutate

    modify = api.server.modify
    status = api.call(modify, SERVICES, "default", "lb", ingress(ip="203.0.113.7"), None, "status")
    assert status.obj["status"]["loadBalancer"]["ingress"] == [
        {"ip": "203.0.113.7", "ipMode": "VIP"}
    ]
    assert api.invalid_causes(
        modify, SERVICES, "default", "plain", ingress(ip="203.0.113.8"), None, "status"
    ) == [
        "status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is "
        "'LoadBalancer'"
    ]
    assert api.invalid_causes(
        modify, SERVICES, "default", "lb", ingress(hostname="1.2.3.4"), None, "status"
    ) == [
        'status.loadBalancer.ingress[0].hostname: Invalid value: "1.2.3.4": must be a DNS name, '
        "not an IP address"
    ]
