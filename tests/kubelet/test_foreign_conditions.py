"""The kubelet owns five pod condition types (PodConditionsByKubelet); a condition of another
type that someone else set (the eviction API's DisruptionTarget, a readiness gate's) stays
through its status writes, ahead of its own, as mergePodStatus keeps it."""

from __future__ import annotations

from tests.kubelet.conftest import PODS, Node, pod

DISRUPTION = {
    "type": "DisruptionTarget",
    "status": "True",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}


def test_a_condition_set_by_another_stays_through_the_kubelets_writes(node: Node) -> None:
    node.create_pod(pod("job", node="node-1", restart_policy="Never", run_seconds="5"))
    node.settle()
    running = node.get_pod("job")
    assert running["status"]["phase"] == "Running"
    status = {**running["status"], "conditions": [*running["status"]["conditions"], DISRUPTION]}
    node.run(node.client.update_status(PODS, {**running, "status": status}))
    node.settle(10)

    status = node.get_pod("job")["status"]
    assert status["phase"] == "Succeeded"
    assert [c["type"] for c in status["conditions"]] == [
        "DisruptionTarget",
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    assert status["conditions"][0] == DISRUPTION
