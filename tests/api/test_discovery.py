"""Discovery documents against kube-apiserver v1.32's (kubernetes/kubernetes api/discovery/*.json
for the same resources)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pinnace.api import catalog, discovery
from pinnace.api.coordination.lease import LEASE
from pinnace.api.core.binding import BINDING
from pinnace.api.core.configmap import CONFIG_MAP
from pinnace.api.core.event import EVENT
from pinnace.api.core.limitrange import LIMIT_RANGE
from pinnace.api.core.namespace import NAMESPACE
from pinnace.api.core.node import NODE
from pinnace.api.core.pod import POD
from pinnace.api.core.resourcequota import RESOURCE_QUOTA
from pinnace.api.scheduling.priorityclass import PRIORITY_CLASS

CORE = [BINDING, CONFIG_MAP, EVENT, LIMIT_RANGE, NAMESPACE, NODE, POD, RESOURCE_QUOTA]
ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]


def by_name(resource_list: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in resource_list["resources"]}


class TestCoreResourceList:
    """/api/v1"""

    @pytest.fixture
    def resources(self) -> dict[str, dict[str, Any]]:
        doc = discovery.api_resource_list("", "v1", CORE)
        assert doc is not None
        assert list(doc)[:2] == ["kind", "groupVersion"]
        assert (doc["kind"], doc["groupVersion"]) == ("APIResourceList", "v1")
        assert "apiVersion" not in doc
        names = [r["name"] for r in doc["resources"]]
        assert names == sorted(names)
        return by_name(doc)

    def test_pods(self, resources: dict[str, dict[str, Any]]) -> None:
        assert resources["pods"] == {
            "name": "pods",
            "singularName": "pod",
            "namespaced": True,
            "kind": "Pod",
            "verbs": ALL_VERBS,
            "shortNames": ["po"],
            "categories": ["all"],
            "storageVersionHash": "xPOwRZ+Yhw8=",
        }

    @pytest.mark.parametrize(
        ("name", "kind", "verbs", "group"),
        [
            ("pods/attach", "PodAttachOptions", ["create", "get"], None),
            ("pods/binding", "Binding", ["create"], None),
            ("pods/ephemeralcontainers", "Pod", STATUS_VERBS, None),
            ("pods/eviction", "Eviction", ["create"], ("policy", "v1")),
            ("pods/exec", "PodExecOptions", ["create", "get"], None),
            ("pods/log", "Pod", ["get"], None),
            ("pods/portforward", "PodPortForwardOptions", ["create", "get"], None),
            ("pods/proxy", "PodProxyOptions", ["create", "delete", "get", "patch", "update"], None),
            ("pods/status", "Pod", STATUS_VERBS, None),
            (
                "nodes/proxy",
                "NodeProxyOptions",
                ["create", "delete", "get", "patch", "update"],
                None,
            ),
            ("nodes/status", "Node", STATUS_VERBS, None),
            ("namespaces/finalize", "Namespace", ["update"], None),
            ("namespaces/status", "Namespace", STATUS_VERBS, None),
            ("resourcequotas/status", "ResourceQuota", STATUS_VERBS, None),
        ],
    )
    def test_subresources(
        self,
        resources: dict[str, dict[str, Any]],
        name: str,
        kind: str,
        verbs: list[str],
        group: tuple[str, str] | None,
    ) -> None:
        expected: dict[str, Any] = {
            "name": name,
            "singularName": "",
            "namespaced": not name.startswith(("nodes", "namespaces")),
        }
        if group:
            expected |= {"group": group[0], "version": group[1]}
        assert resources[name] == expected | {"kind": kind, "verbs": verbs}

    def test_bindings_are_create_only_and_not_stored(
        self, resources: dict[str, dict[str, Any]]
    ) -> None:
        assert resources["bindings"] == {
            "name": "bindings",
            "singularName": "binding",
            "namespaced": True,
            "kind": "Binding",
            "verbs": ["create"],
        }

    @pytest.mark.parametrize(
        ("name", "short", "hash_"),
        [
            ("configmaps", "cm", "qFsyl6wFWjQ="),
            ("events", "ev", "r2yiGXH7wu8="),
            ("limitranges", "limits", "EBKMFVe6cwo="),
            ("nodes", "no", "XwShjMxG9Fs="),
            ("resourcequotas", "quota", "8uhSgffRX6w="),
        ],
    )
    def test_plain_resources(
        self, resources: dict[str, dict[str, Any]], name: str, short: str, hash_: str
    ) -> None:
        entry = resources[name]
        assert entry["verbs"] == ALL_VERBS
        assert entry["shortNames"] == [short]
        assert entry["storageVersionHash"] == hash_
        assert "categories" not in entry

    def test_namespaces_have_no_deletecollection(
        self, resources: dict[str, dict[str, Any]]
    ) -> None:
        assert resources["namespaces"]["verbs"] == [
            "create",
            "delete",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
        assert resources["namespaces"]["storageVersionHash"] == "Q3oi5N2YM8M="


def test_group_resource_list_has_api_version() -> None:
    doc = discovery.api_resource_list("coordination.k8s.io", "v1", [*CORE, LEASE])
    assert doc == {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "coordination.k8s.io/v1",
        "resources": [
            {
                "name": "leases",
                "singularName": "lease",
                "namespaced": True,
                "kind": "Lease",
                "verbs": ALL_VERBS,
                "storageVersionHash": discovery.storage_version_hash(
                    "coordination.k8s.io", "v1", "Lease"
                ),
            }
        ],
    }
    assert discovery.api_resource_list("coordination.k8s.io", "v2", [LEASE]) is None
    assert discovery.api_resource_list("apps", "v1", CORE) is None


def test_storage_version_hash_matches_kube_apiserver() -> None:
    assert discovery.storage_version_hash("", "v1", "Pod") == "xPOwRZ+Yhw8="
    assert discovery.storage_version_hash("policy", "v1", "PodDisruptionBudget") == "EVWiDmWqyJw="
    assert (
        discovery.storage_version_hash("autoscaling", "v2", "HorizontalPodAutoscaler")
        == "qwQve8ut294="
    )


def test_api_versions() -> None:
    assert discovery.api_versions("127.0.0.1:6443") == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}
        ],
    }


def test_group_documents_for_explicit_kinds() -> None:
    kinds = [*CORE, LEASE, PRIORITY_CLASS]
    assert discovery.api_group_list(kinds) == {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "scheduling.k8s.io",
                "versions": [{"groupVersion": "scheduling.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "scheduling.k8s.io/v1", "version": "v1"},
            },
            {
                "name": "coordination.k8s.io",
                "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"},
            },
        ],
    }
    assert discovery.api_group("coordination.k8s.io", kinds) == {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": "coordination.k8s.io",
        "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"},
    }
    assert discovery.api_group("apps", kinds) is None
    assert discovery.api_group("", kinds) is None


class TestAggregated:
    def test_core_document(self) -> None:
        doc = discovery.aggregated_discovery(True, CORE)
        assert list(doc) == ["kind", "apiVersion", "metadata", "items"]
        assert doc["kind"] == "APIGroupDiscoveryList"
        assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
        (core,) = doc["items"]
        assert core["metadata"] == {"creationTimestamp": None}
        (v1,) = core["versions"]
        assert (v1["version"], v1["freshness"]) == ("v1", "Current")
        resources = {r["resource"]: r for r in v1["resources"]}
        assert list(resources) == sorted(resources)
        pods = resources["pods"]
        assert list(pods) == [
            "resource",
            "responseKind",
            "scope",
            "singularResource",
            "verbs",
            "shortNames",
            "categories",
            "subresources",
        ]
        assert pods["responseKind"] == {"group": "", "version": "", "kind": "Pod"}
        assert pods["scope"] == "Namespaced"
        subresources = {s["subresource"]: s for s in pods["subresources"]}
        assert subresources["eviction"] == {
            "subresource": "eviction",
            "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "verbs": ["create"],
        }
        assert subresources["status"]["responseKind"] == {
            "group": "",
            "version": "",
            "kind": "Pod",
        }
        assert resources["nodes"]["scope"] == "Cluster"
        assert "subresources" not in resources["configmaps"]
        assert "shortNames" not in resources["bindings"]

    def test_named_groups_exclude_core_and_v2beta1_shares_the_layout(self) -> None:
        kinds = [*CORE, LEASE]
        v2 = discovery.aggregated_discovery(False, kinds)
        beta = discovery.aggregated_discovery(False, kinds, version="v2beta1")
        assert [item["metadata"] for item in v2["items"]] == [
            {"name": "coordination.k8s.io", "creationTimestamp": None}
        ]
        assert beta["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
        assert beta["items"] == v2["items"]
        with pytest.raises(ValueError):
            discovery.aggregated_discovery(False, kinds, version="v3")

    def test_serialises_like_go(self) -> None:
        text = json.dumps(discovery.aggregated_discovery(True, CORE), separators=(",", ":"))
        assert text.startswith(
            '{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",'
            '"metadata":{},"items":[{"metadata":{"creationTimestamp":null},"versions":'
            '[{"version":"v1","resources":[{"resource":"bindings","responseKind":'
            '{"group":"","version":"","kind":"Binding"},"scope":"Namespaced",'
            '"singularResource":"binding","verbs":["create"]}'
        )


def test_version_info() -> None:
    info = discovery.version_info(git_commit="abc123", build_date="2025-01-01T00:00:00Z")
    assert list(info) == [
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ]
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", "32", "v1.32.0+pinnace")
    assert (info["gitCommit"], info["gitTreeState"]) == ("abc123", "clean")


# --- the whole catalog (needs every kind module) --------------------------------------------


def test_every_served_group_in_kube_apiserver_order() -> None:
    groups = [g["name"] for g in discovery.api_group_list()["groups"]]
    assert groups == [
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "apiextensions.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "autoscaling.k8s.io",  # a CRD's group in Kubernetes: after every built-in one
    ]
    autoscaling = discovery.api_group("autoscaling")
    assert autoscaling is not None
    assert autoscaling["preferredVersion"] == {"groupVersion": "autoscaling/v2", "version": "v2"}


def test_apps_resources_and_scale_subresources() -> None:
    doc = discovery.api_resource_list("apps", "v1")
    assert doc is not None
    resources = by_name(doc)
    assert list(resources) == [
        "controllerrevisions",
        "daemonsets",
        "daemonsets/status",
        "deployments",
        "deployments/scale",
        "deployments/status",
        "replicasets",
        "replicasets/scale",
        "replicasets/status",
        "statefulsets",
        "statefulsets/scale",
        "statefulsets/status",
    ]
    assert resources["deployments/scale"] == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": STATUS_VERBS,
    }
    assert resources["deployments"]["shortNames"] == ["deploy"]
    assert resources["deployments"]["categories"] == ["all"]


def test_networking_resources_as_v1_32_lists_them() -> None:
    doc = discovery.api_resource_list("networking.k8s.io", "v1")
    assert doc is not None
    resources = by_name(doc)
    assert list(resources) == [
        "ingressclasses",
        "ingresses",
        "ingresses/status",
        "networkpolicies",
    ]
    assert resources["ingresses"]["shortNames"] == ["ing"]
    assert resources["networkpolicies"]["shortNames"] == ["netpol"]
    assert resources["ingressclasses"]["namespaced"] is False
    assert resources["ingresses/status"]["verbs"] == STATUS_VERBS


def test_certificates_resources_as_v1_32_lists_them() -> None:
    doc = discovery.api_resource_list("certificates.k8s.io", "v1")
    assert doc is not None
    resources = by_name(doc)
    assert list(resources) == [
        "certificatesigningrequests",
        "certificatesigningrequests/approval",
        "certificatesigningrequests/status",
    ]
    csrs = resources["certificatesigningrequests"]
    assert (csrs["shortNames"], csrs["namespaced"]) == (["csr"], False)
    assert resources["certificatesigningrequests/approval"]["verbs"] == STATUS_VERBS
    assert resources["certificatesigningrequests/status"]["verbs"] == STATUS_VERBS


def test_aggregated_apis_lists_every_named_group() -> None:
    doc = discovery.aggregated_discovery(False)
    names = [item["metadata"]["name"] for item in doc["items"]]
    assert names == [g["name"] for g in discovery.api_group_list()["groups"]]
    kinds = {
        (item["metadata"]["name"], version["version"], r["resource"])
        for item in doc["items"]
        for version in item["versions"]
        for r in version["resources"]
    }
    assert kinds == {(k.group, k.version, k.plural) for k in catalog.kinds() if k.group}
