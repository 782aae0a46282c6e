"""The Job and TTL-after-finished controllers against an in-process API server, scheduler and
nodes, on the virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import Workloads

from pinnace.api import catalog
from pinnace.apiserver.objects import Object

JOBS = catalog.by_resource("batch", "jobs")
assert JOBS is not None


def job(name: str = "pi", command: str = "sleep 5", **spec: Any) -> Object:
    restart = spec.pop("restartPolicy", "Never")
    annotations = spec.pop("annotations", None)
    template: Object = {
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "main", "image": "busybox", "command": command.split()}],
        }
    }
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


FAIL = {"sim.pinnace.dev/exit-code": "1"}


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.stop()


def create(cluster: Workloads, body: Object) -> Object:
    return cluster.run(cluster.client.create(JOBS, "default", body))


def job_pods(cluster: Workloads, name: str = "pi") -> list[Object]:
    return cluster.pods(**{"batch.kubernetes.io/job-name": name})


def conditions(job: Object) -> list[tuple[str, str, str]]:
    return [
        (c["type"], c["status"], c.get("reason", ""))
        for c in job.get("status", {}).get("conditions", [])
    ]


def test_runs_parallelism_pods_until_completions_succeed(cluster: Workloads):
    created = create(cluster, job(completions=5, parallelism=2))
    uid = created["metadata"]["uid"]
    cluster.settle(3)
    pods = job_pods(cluster)
    assert len(pods) == 2
    for p in pods:
        assert p["metadata"]["name"].startswith("pi-")
        assert p["metadata"]["labels"] == {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "pi",
            "controller-uid": uid,
            "job-name": "pi",
        }
        assert p["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert p["metadata"]["ownerReferences"][0]["kind"] == "Job"
    status = cluster.get(JOBS, "pi")["status"]
    assert status["active"] == 2 and status["ready"] == 2 and status["terminating"] == 0
    assert status["uncountedTerminatedPods"] == {}
    assert "startTime" in status

    cluster.settle(60)
    finished = cluster.get(JOBS, "pi")
    status = finished["status"]
    assert status["succeeded"] == 5 and "active" not in status and "failed" not in status
    assert conditions(finished) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]
    assert status["completionTime"] >= status["startTime"]
    pods = job_pods(cluster)
    assert len(pods) == 5
    assert all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all(not p["metadata"].get("finalizers") for p in pods)
    assert cluster.events("Completed") == ["Job completed"]
    assert len(cluster.events("SuccessfulCreate")) == 5


def test_indexed_job_gives_each_pod_its_completion_index(cluster: Workloads):
    create(cluster, job(completions=3, parallelism=3, completionMode="Indexed"))
    cluster.settle(3)
    pods = sorted(job_pods(cluster), key=lambda p: p["metadata"]["name"])
    assert len(pods) == 3
    for index, p in enumerate(pods):
        meta = p["metadata"]
        assert meta["name"].startswith(f"pi-{index}-")
        assert meta["annotations"]["batch.kubernetes.io/job-completion-index"] == str(index)
        assert meta["labels"]["batch.kubernetes.io/job-completion-index"] == str(index)
        assert p["spec"]["hostname"] == f"pi-{index}"
        assert p["spec"]["containers"][0]["env"] == [
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']",
                    }
                },
            }
        ]
    cluster.settle(30)
    status = cluster.get(JOBS, "pi")["status"]
    assert status["completedIndexes"] == "0-2" and status["succeeded"] == 3
    assert ("Complete", "True", "CompletionsReached") in conditions(cluster.get(JOBS, "pi"))


def test_failed_pods_are_replaced_after_a_backoff_until_the_backoff_limit(cluster: Workloads):
    create(cluster, job(command="sleep 1", backoffLimit=2, annotations=FAIL))
    cluster.settle(5)
    assert len(job_pods(cluster)) == 1  # the replacement waits 10 s after the failure
    cluster.settle(10)
    assert len(job_pods(cluster)) == 2
    cluster.settle(60)
    failed = cluster.get(JOBS, "pi")
    assert conditions(failed) == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]
    assert failed["status"]["failed"] == 3 and "completionTime" not in failed["status"]
    assert len(job_pods(cluster)) == 3
    assert cluster.events("BackoffLimitExceeded") == ["Job has reached the specified backoff limit"]
