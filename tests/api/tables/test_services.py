"""The Service, Endpoints and EndpointSlice tables, as kubectl 1.32 prints them from
kube-apiserver's (printService, printEndpoints, printEndpointSlice)."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.endpoints import ENDPOINTS
from pinnace.api.core.service import SERVICE
from pinnace.api.discoveryk8s.endpointslice import ENDPOINT_SLICE
from pinnace.api.kind import Kind
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-01T02:00:00Z")
META = {"name": "x", "namespace": "default", "creationTimestamp": "2025-01-01T00:00:00Z"}


def table(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    return to_table(kind, [{"metadata": META, **obj}], now=NOW, list_meta={})


def row(kind: Kind, obj: dict[str, Any]) -> list[Any]:
    return table(kind, obj)["rows"][0]["cells"]


def columns(kind: Kind) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table(kind, {})["columnDefinitions"]]


def test_service_columns_and_rows() -> None:
    assert columns(SERVICE) == [
        ("Name", 0),
        ("Type", 0),
        ("Cluster-IP", 0),
        ("External-IP", 0),
        ("Port(s)", 0),
        ("Age", 0),
        ("Selector", 1),
    ]
    node_port = {
        "type": "NodePort",
        "clusterIPs": ["10.96.7.8"],
        "ports": [
            {"port": 80, "protocol": "TCP", "nodePort": 30080},
            {"port": 53, "protocol": "UDP"},
        ],
        "selector": {"app": "web"},
    }
    assert row(SERVICE, {"spec": node_port}) == [
        "x",
        "NodePort",
        "10.96.7.8",
        "<none>",
        "80:30080/TCP,53/UDP",
        "120m",
        "app=web",
    ]
    balancer = {"type": "LoadBalancer", "clusterIPs": ["10.96.0.9"], "ports": []}
    assert row(SERVICE, {"spec": balancer})[3:5] == ["<pending>", "<none>"]
    ingress = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    with_ip = {"spec": {**balancer, "externalIPs": ["198.51.100.1"]}, "status": ingress}
    assert row(SERVICE, with_ip)[3] == "203.0.113.7,198.51.100.1"
    external = {"type": "ExternalName", "externalName": "db.example.com"}
    assert row(SERVICE, {"spec": external})[2:4] == ["<none>", "db.example.com"]


def test_endpoints_show_three_addresses_and_how_many_more() -> None:
    addresses = [{"ip": f"10.0.0.{i}"} for i in range(1, 6)]
    endpoints = {"subsets": [{"addresses": addresses, "ports": [{"port": 8080}]}]}
    assert row(ENDPOINTS, endpoints) == [
        "x",
        "10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 2 more...",
        "120m",
    ]
    assert row(ENDPOINTS, {})[1] == "<none>"
    not_ready = {"subsets": [{"notReadyAddresses": addresses[:1], "ports": [{"port": 80}]}]}
    assert row(ENDPOINTS, not_ready)[1] == ""


def test_endpoint_slices() -> None:
    assert columns(ENDPOINT_SLICE) == [
        ("Name", 0),
        ("AddressType", 0),
        ("Ports", 0),
        ("Endpoints", 0),
        ("Age", 0),
    ]
    endpoints = [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 5)]
    slice_ = {"addressType": "IPv4", "ports": [{"name": "", "port": 80}], "endpoints": endpoints}
    assert row(ENDPOINT_SLICE, slice_) == [
        "x",
        "IPv4",
        "80",
        "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
        "120m",
    ]
    assert row(ENDPOINT_SLICE, {"addressType": "IPv4", "ports": [], "endpoints": []})[2:4] == [
        "<unset>",
        "<unset>",
    ]
