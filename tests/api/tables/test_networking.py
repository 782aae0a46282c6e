"""Columns and cells of ingresses, ingress classes, network policies and pod templates, as
printers.go (v1.32) prints them."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.podtemplate import POD_TEMPLATE
from pinnace.api.kind import Kind
from pinnace.api.networking.ingress import INGRESS
from pinnace.api.networking.ingressclass import INGRESS_CLASS
from pinnace.api.networking.networkpolicy import NETWORK_POLICY
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-01T02:00:00Z")
META = {"name": "x", "namespace": "default", "creationTimestamp": "2025-01-01T00:00:00Z"}


def table(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    return to_table(kind, [{"metadata": META, **obj}], now=NOW, list_meta={})


def row(kind: Kind, obj: dict[str, Any]) -> list[Any]:
    return table(kind, obj)["rows"][0]["cells"]


def names(kind: Kind) -> list[str]:
    return [c["name"] for c in table(kind, {})["columnDefinitions"]]


def test_ingress_columns_and_cells() -> None:
    assert names(INGRESS) == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert row(INGRESS, {"spec": {"rules": [{}]}}) == ["x", "<none>", "*", "", "80", "120m"]
    rules = [{"host": h} for h in ("a.io", "", "b.io", "c.io", "d.io")]
    status = {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.io"}]}}
    spec = {"ingressClassName": "nginx", "rules": rules, "tls": [{}]}
    assert row(INGRESS, {"spec": spec, "status": status}) == [
        "x",
        "nginx",
        "a.io,b.io,c.io + 2 more...",
        "10.0.0.2,lb.io",
        "80, 443",
        "120m",
    ]


def test_ingress_class_columns_and_cells() -> None:
    assert names(INGRESS_CLASS) == ["Name", "Controller", "Parameters", "Age"]
    assert row(INGRESS_CLASS, {"spec": {"controller": "k8s.io/nginx"}}) == [
        "x",
        "k8s.io/nginx",
        "<none>",
        "120m",
    ]
    params = {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p", "scope": "Cluster"}
    assert row(INGRESS_CLASS, {"spec": {"controller": "a.io/b", "parameters": params}})[2] == (
        "Params.k8s.example.com/p"
    )


def test_network_policy_columns_and_cells() -> None:
    assert names(NETWORK_POLICY) == ["Name", "Pod-Selector", "Age"]
    assert row(NETWORK_POLICY, {"spec": {"podSelector": {}}}) == ["x", "<none>", "120m"]
    selector = {"matchLabels": {"role": "db"}}
    assert row(NETWORK_POLICY, {"spec": {"podSelector": selector}})[1] == "role=db"


def test_pod_template_columns_and_cells() -> None:
    assert names(POD_TEMPLATE) == ["Name", "Containers", "Images", "Pod Labels"]
    template = {
        "metadata": {"labels": {"tier": "web", "app": "shop"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
    }
    assert row(POD_TEMPLATE, {"template": template}) == [
        "x",
        "a,b",
        "nginx,redis",
        "app=shop,tier=web",
    ]
