"""An extended resource advertised by patching a node's status.capacity (the Kubernetes task
"Advertise Extended Resources for a Node") is kept by the node agent and made allocatable at
its next status update, as the kubelet's MachineInfo setter does; pods requesting it are
admitted against it."""

from __future__ import annotations

from typing import Any

from tests.kubelet.conftest import NODES, Node, pod

from pinnace.client import PatchType

DONGLE = "example.com/dongle"


def patch_capacity(node: Node, op: str, value: str = "") -> None:
    step: dict[str, Any] = {"op": op, "path": "/status/capacity/example.com~1dongle"}
    if value:
        step["value"] = value
    node.run(node.client.patch(NODES, "", "node-1", [step], PatchType.JSON, subresource="status"))


def node_status(node: Node) -> dict[str, Any]:
    return node.run(node.client.get(NODES, "", "node-1"))["status"]


def dongle_pod(name: str, count: str) -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0]["resources"] = {
        "requests": {DONGLE: count},
        "limits": {DONGLE: count},
    }
    return body


def test_an_advertised_extended_resource_becomes_allocatable_and_pods_get_it(node: Node) -> None:
    patch_capacity(node, "add", "4")
    node.settle(10)  # the next node status update
    status = node_status(node)
    assert status["capacity"][DONGLE] == "4"
    assert status["allocatable"][DONGLE] == "4"
    assert status["allocatable"]["cpu"] == "2"  # the node's own resources as they were

    node.create_pod(dongle_pod("three", "3"))
    node.settle()
    assert node.get_pod("three")["status"]["phase"] == "Running"
    node.create_pod(dongle_pod("two", "2"))
    node.settle()
    rejected = node.get_pod("two")["status"]
    assert (rejected["phase"], rejected["reason"]) == ("Failed", f"OutOf{DONGLE}")


def test_an_extended_resource_removed_from_capacity_leaves_allocatable(node: Node) -> None:
    patch_capacity(node, "add", "4")
    node.settle(10)
    patch_capacity(node, "remove")
    node.settle(10)
    status = node_status(node)
    assert DONGLE not in status["capacity"]
    assert DONGLE not in status["allocatable"]
