"""Readiness gates: a pod is Ready only once its containers are and every gate's condition,
set by someone else through the API, is True (v1.32's GeneratePodReadyCondition)."""

from __future__ import annotations

from tests.client.conftest import PODS
from tests.kubelet.conftest import Node, pod

from pinnace.client import PatchType


def conditions(node: Node, name: str) -> dict[str, dict]:
    return {c["type"]: c for c in node.get_pod(name)["status"]["conditions"]}


def set_gate(node: Node, status: str) -> None:
    gate = {"type": "example.com/lb", "status": status}
    node.run(
        node.client.patch(
            PODS,
            "default",
            "gated",
            {"status": {"conditions": [gate]}},
            PatchType.STRATEGIC_MERGE,
            subresource="status",
        )
    )


def test_ready_waits_for_the_readiness_gates_condition(node: Node) -> None:
    body = pod("gated", node="node-1")
    body["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}]
    node.create_pod(body)
    node.settle(3)
    seen = conditions(node, "gated")
    assert seen["ContainersReady"]["status"] == "True"
    assert (seen["Ready"]["status"], seen["Ready"]["reason"], seen["Ready"]["message"]) == (
        "False",
        "ReadinessGatesNotReady",
        'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    )

    set_gate(node, "False")
    node.settle()
    ready = conditions(node, "gated")["Ready"]
    assert ready["message"] == (
        'the status of pod readiness gate "example.com/lb" is not "True", but False'
    )

    set_gate(node, "True")
    node.settle()
    seen = conditions(node, "gated")
    assert seen["Ready"]["status"] == "True"
    assert seen["example.com/lb"]["status"] == "True"
