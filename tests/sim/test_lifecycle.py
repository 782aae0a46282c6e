"""Reading a pod's story off Pod objects and FailedScheduling messages."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.sim.lifecycle import (
    controller_of,
    disruption,
    fit_error_reasons,
    oom_kills,
    requests_of,
    restarts,
    workload_of,
)


def pod(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}, "status": status}


def target(reason: str) -> dict[str, Any]:
    return {"type": "DisruptionTarget", "status": "True", "reason": reason}


@pytest.mark.parametrize(
    ("status", "why"),
    [
        ({"phase": "Failed", "reason": "Evicted", "conditions": [target("TerminationByKubelet")]},
         "Evicted"),
        ({"conditions": [target("PreemptionByScheduler")]}, "PreemptionByScheduler"),
        ({"conditions": [target("DeletionByTaintManager")]}, "DeletionByTaintManager"),
        ({"conditions": [target("EvictionByEvictionAPI")]}, "EvictionByEvictionAPI"),
        ({"conditions": [{**target("DeletionByPodGC"), "status": "False"}]}, ""),
        ({"phase": "Failed", "reason": "DeadlineExceeded"}, ""),
    ],
)
def test_why_a_pod_was_disrupted(status: dict[str, Any], why: str) -> None:
    assert disruption(pod(**status)) == why


def test_restarts_and_oom_kills_of_every_container() -> None:
    oom = {"reason": "OOMKilled", "containerID": "containerd://1", "exitCode": 137}
    p = pod(
        initContainerStatuses=[{"name": "init", "restartCount": 1}],
        containerStatuses=[
            {"name": "a", "restartCount": 2, "lastState": {"terminated": oom}},
            {"name": "b", "restartCount": 0, "state": {"terminated": {**oom, "containerID": "2"}}},
            {"name": "c", "restartCount": 0, "lastState": {"terminated": {"reason": "Error"}}},
        ],
    )
    assert restarts(p) == 3
    assert list(oom_kills(p)) == ["a/containerd://1", "b/2"]


def test_the_workload_of_a_pod() -> None:
    p = pod()
    p["metadata"]["labels"] = {"pod-template-hash": "5d9c7b8f4"}
    p["metadata"]["ownerReferences"] = [
        {"kind": "Node", "name": "n"},
        {"kind": "ReplicaSet", "name": "web-5d9c7b8f4", "controller": True},
    ]
    assert controller_of(p) == ("ReplicaSet", "web-5d9c7b8f4")
    assert workload_of(p, *controller_of(p)) == "Deployment ns/web"
    assert workload_of(p, "ReplicaSet", "other") == "ReplicaSet ns/other"
    assert workload_of(p, "Job", "batch") == "Job ns/batch"
    bare = pod()
    assert workload_of(bare, *controller_of(bare)) == "Pod ns/p"
    bare["metadata"]["generateName"] = "arrival-"
    assert workload_of(bare, "", "") == "Pod ns/arrival-"


def test_requests_as_the_scheduler_counts_them() -> None:
    p = pod()
    p["spec"] = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"example.com/gpu": "1", "cpu": "0"}}},
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        "overhead": {"memory": "64Mi"},
    }
    assert requests_of(p) == {
        "cpu": 2000,
        "example.com/gpu": 1,
        "memory": 1024**3 + 64 * 1024**2,
        "pods": 1,
    }


def test_fit_error_messages_split_into_reasons() -> None:
    message = (
        "0/5 nodes are available: 1 node(s) had untolerated taint {a: b}, 4 Insufficient cpu. "
        "preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.."
    )
    assert fit_error_reasons(message) == [
        "node(s) had untolerated taint {a: b}",
        "Insufficient cpu",
    ]
    assert fit_error_reasons("(combined from similar events): " + message)[1] == "Insufficient cpu"
    prefilter = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    assert fit_error_reasons(prefilter) == ["pod has unbound immediate PersistentVolumeClaims"]
    assert fit_error_reasons('pod "x" rejected') == ['pod "x" rejected']
