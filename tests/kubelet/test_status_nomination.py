"""A preemptor keeps status.nominatedNodeName through its binding (v1.32's BindingREST leaves it,
and so does the scheduler); its kubelet's first status write drops it, as v1.32's status
manager patches the pod's stored status to the one it generated, which carries no
nominatedNodeName (mergePodStatus keeps only foreign conditions of the stored status)."""

from __future__ import annotations

from tests.kubelet.conftest import PODS, Node, pod


def test_the_kubelets_status_write_clears_the_nomination_of_a_bound_pod(node: Node) -> None:
    pending = node.create_pod(pod("preemptor"))
    nominated = {**pending, "status": {**pending["status"], "nominatedNodeName": "node-1"}}
    node.run(node.client.update_status(PODS, nominated))
    node.run(node.client.bind(node.get_pod("preemptor"), "node-1"))
    assert node.get_pod("preemptor")["status"]["nominatedNodeName"] == "node-1"

    node.settle(5)
    status = node.get_pod("preemptor")["status"]
    assert status["phase"] == "Running"
    assert "nominatedNodeName" not in status
