"""Second-phase admission as the kubelet words its rejections: a pod bound by spec.nodeName
skips the scheduler, so the node agent is the one to refuse it."""

from __future__ import annotations

from typing import Any

import pytest
from tests.kubelet.conftest import NODES, Node, pod

from pinnace.api import catalog
from pinnace.client import PatchType

RUNTIME_CLASSES = catalog.kind("node.k8s.io", "runtimeclasses")


def rejected(node: Node, body: dict[str, Any]) -> tuple[str, str]:
    node.create_pod(body)
    node.settle()
    status = node.get_pod(body["metadata"]["name"])["status"]
    assert status["phase"] == "Failed"
    return status["reason"], status["message"]


def test_out_of_memory_counts_in_bytes(node: Node) -> None:
    body = pod("hungry", node="node-1")
    body["spec"]["containers"][0]["resources"] = {"requests": {"memory": "4Gi"}}
    assert rejected(node, body) == (
        "OutOfmemory",
        "Pod was rejected: Node didn't have enough resource: memory, requested: 4294967296, "
        "used: 0, capacity: 3921674240",
    )


def test_pod_overhead_counts_toward_what_the_pod_requests(node: Node) -> None:
    sandbox = {
        "metadata": {"name": "kata"},
        "handler": "kata",
        "overhead": {"podFixed": {"memory": "1Gi"}},
    }
    node.run(node.client.create(RUNTIME_CLASSES, "", sandbox))
    body = pod("sandboxed", node="node-1")
    body["spec"]["containers"][0]["resources"] = {"requests": {"memory": "3Gi"}}
    body["spec"]["runtimeClassName"] = "kata"
    assert rejected(node, body) == (
        "OutOfmemory",
        "Pod was rejected: Node didn't have enough resource: memory, requested: 4294967296, "
        "used: 0, capacity: 3921674240",
    )


def test_out_of_pods_past_the_pods_capacity(node: Node) -> None:
    for i in range(10):
        node.create_pod(pod(f"p{i}", node="node-1"))
    node.settle()
    assert rejected(node, pod("eleventh", node="node-1")) == (
        "OutOfpods",
        "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 10, "
        "capacity: 10",
    )


@pytest.mark.parametrize(
    "spec",
    [
        {"nodeSelector": {"disk": "ssd"}},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["node-2"]}
                                ]
                            }
                        ]
                    }
                }
            }
        },
    ],
)
def test_node_selector_or_affinity_that_does_not_match_is_node_affinity(
    node: Node, spec: dict[str, Any]
) -> None:
    body = pod("picky", node="node-1")
    body["spec"].update(spec)
    assert rejected(node, body) == (
        "NodeAffinity",
        "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Node selector",
    )


def test_matching_affinity_is_admitted(node: Node) -> None:
    body = pod("fits", node="node-1")
    body["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": ["node-1"],
                            }
                        ]
                    }
                ]
            }
        }
    }
    node.create_pod(body)
    node.settle()
    assert node.get_pod("fits")["status"]["phase"] == "Running"


def test_only_untolerated_no_execute_taints_reject(node: Node) -> None:
    taints = [
        {"key": "maintenance", "value": "soon", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "db", "effect": "NoExecute"},
    ]
    node.run(node.client.patch(NODES, "", "node-1", {"spec": {"taints": taints}}, PatchType.MERGE))
    node.settle()
    assert rejected(node, pod("plain", node="node-1")) == (
        "TaintToleration",
        "Pod was rejected: Predicate TaintToleration failed: node(s) had untolerated taint",
    )
    tolerant = pod("tolerant", node="node-1")
    tolerant["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    node.create_pod(tolerant)
    node.settle()
    assert node.get_pod("tolerant")["status"]["phase"] == "Running"


def test_a_host_port_in_use_is_node_ports(node: Node) -> None:
    for name in ("first", "second"):
        body = pod(name, node="node-1")
        body["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
        node.create_pod(body)
        node.settle()
    assert node.get_pod("first")["status"]["phase"] == "Running"
    second = node.get_pod("second")["status"]
    assert (second["reason"], second["message"]) == (
        "NodePorts",
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the "
        "requested pod ports",
    )
