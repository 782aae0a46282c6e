"""The Job and TTL-after-finished controllers against an in-process API server, scheduler and
nodes, on the virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.own_writes import Checked, checking
from tests.controllers.workloads import PODS, Workloads

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.client import PatchType
from pinnace.controllers.job_indexes import Intervals
from pinnace.controllers.workloads import WorkloadControllers

JOBS = catalog.kind("batch", "jobs")


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


@pytest.fixture(autouse=True)
def own_writes_decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """The Job controller's status writes are its own (`update_status_own`): each must be
    stored as decoding it would store it, through every condition, count and index here."""
    yield from checking(monkeypatch)


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


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


def test_a_job_past_its_active_deadline_fails_and_its_pods_are_deleted(cluster: Workloads):
    create(cluster, job(command="sleep 3600", parallelism=2, activeDeadlineSeconds=20))
    cluster.settle(10)
    assert cluster.get(JOBS, "pi")["status"]["active"] == 2
    # Deleted at 20 s, the pods' sleep ignores SIGTERM: they are gone when their 30 s grace
    # period ends, and the Job fails then.
    cluster.settle(30)
    assert conditions(cluster.get(JOBS, "pi")) == [("FailureTarget", "True", "DeadlineExceeded")]
    cluster.settle(30)
    failed = cluster.get(JOBS, "pi")
    assert conditions(failed) == [
        ("FailureTarget", "True", "DeadlineExceeded"),
        ("Failed", "True", "DeadlineExceeded"),
    ]
    status = failed["status"]
    assert status["failed"] == 2 and "active" not in status and status["terminating"] == 0
    assert job_pods(cluster) == []  # deleted, their finalizers removed once counted
    assert cluster.events("DeadlineExceeded") == ["Job was active longer than specified deadline"]


def test_restarts_of_on_failure_pods_count_toward_the_backoff_limit(cluster: Workloads):
    create(
        cluster,
        job(command="sleep 1", restartPolicy="OnFailure", backoffLimit=2, annotations=FAIL),
    )
    cluster.settle(120)
    failed = cluster.get(JOBS, "pi")
    assert ("Failed", "True", "BackoffLimitExceeded") in conditions(failed)
    assert failed["status"]["failed"] == 1  # the one pod, deleted once its restarts ran out
    assert job_pods(cluster) == []


def test_a_suspended_job_deletes_its_pods_and_resumes_later(cluster: Workloads):
    create(cluster, job(command="sleep 3600", parallelism=2, completions=2))
    cluster.settle(3)
    assert len(job_pods(cluster)) == 2
    cluster.run(cluster.client.patch(JOBS, "default", "pi", {"spec": {"suspend": True}}))
    cluster.settle(40)
    suspended = cluster.get(JOBS, "pi")
    assert conditions(suspended) == [("Suspended", "True", "JobSuspended")]
    assert job_pods(cluster) == []
    assert "active" not in suspended["status"] and "failed" not in suspended["status"]
    assert cluster.events("Suspended") == ["Job suspended"]
    cluster.run(cluster.client.patch(JOBS, "default", "pi", {"spec": {"suspend": False}}))
    cluster.settle(3)
    resumed = cluster.get(JOBS, "pi")
    assert conditions(resumed) == [("Suspended", "False", "JobResumed")]
    assert resumed["status"]["active"] == 2 and len(job_pods(cluster)) == 2


def test_a_finished_job_is_deleted_with_its_pods_after_its_ttl(cluster: Workloads):
    create(cluster, job(command="sleep 1", ttlSecondsAfterFinished=30))
    cluster.settle(10)
    assert ("Complete", "True", "CompletionsReached") in conditions(cluster.get(JOBS, "pi"))
    assert len(job_pods(cluster)) == 1
    cluster.settle(15)
    assert cluster.run(cluster.client.list(JOBS, "default"))["items"] != []
    cluster.settle(20)
    assert cluster.run(cluster.client.list(JOBS, "default"))["items"] == []
    assert job_pods(cluster) == []  # the garbage collector followed


def failure_policy(action: str, code: int) -> Object:
    return {"rules": [{"action": action, "onExitCodes": {"operator": "In", "values": [code]}}]}


def test_a_fail_job_rule_of_the_pod_failure_policy_fails_the_job_at_once(cluster: Workloads):
    create(
        cluster,
        job(
            command="sleep 1",
            backoffLimit=6,
            podFailurePolicy=failure_policy("FailJob", 42),
            annotations={"sim.pinnace.dev/exit-code": "42"},
        ),
    )
    cluster.settle(10)
    failed = cluster.get(JOBS, "pi")
    [pod] = job_pods(cluster)
    message = (
        f"Container main for pod default/{pod['metadata']['name']} failed with exit code 42"
        " matching FailJob rule at index 0"
    )
    assert failed["status"]["conditions"][-1]["message"] == message
    assert conditions(failed) == [
        ("FailureTarget", "True", "PodFailurePolicy"),
        ("Failed", "True", "PodFailurePolicy"),
    ]
    assert failed["status"]["failed"] == 1


def test_failures_an_ignore_rule_matches_do_not_count(cluster: Workloads):
    create(
        cluster,
        job(
            command="sleep 1",
            backoffLimit=0,
            podFailurePolicy=failure_policy("Ignore", 3),
            annotations={"sim.pinnace.dev/exit-code": "3"},
        ),
    )
    cluster.settle(40)
    running = cluster.get(JOBS, "pi")
    assert conditions(running) == []
    assert "failed" not in running["status"]
    assert len(job_pods(cluster)) >= 3  # each failure replaced, after the back-off


def test_without_completions_the_job_completes_once_a_pod_succeeded_and_none_runs(
    cluster: Workloads,
):
    created = create(cluster, job(command="sleep 5", parallelism=3))
    assert "completions" not in created["spec"]
    cluster.settle(3)
    assert len(job_pods(cluster)) == 3
    cluster.settle(10)
    done = cluster.get(JOBS, "pi")
    assert ("Complete", "True", "CompletionsReached") in conditions(done)
    assert done["status"]["succeeded"] == 3 and len(job_pods(cluster)) == 3


def test_a_deleted_pod_counts_as_failed_and_is_replaced(cluster: Workloads):
    create(cluster, job(command="sleep 3600"))
    cluster.settle(3)
    [first] = job_pods(cluster)
    cluster.run(cluster.client.delete(PODS, "default", first["metadata"]["name"]))
    cluster.settle(35)  # its sleep ignores SIGTERM: gone when its 30 s grace period ends
    status = cluster.get(JOBS, "pi")["status"]
    assert status["failed"] == 1 and status["active"] == 1
    names = [p["metadata"]["name"] for p in job_pods(cluster)]
    assert len(names) == 1 and names[0] != first["metadata"]["name"]


def test_a_restarted_controller_counts_every_pod_once(cluster: Workloads):
    create(cluster, job(command="sleep 5", completions=4, parallelism=2))
    cluster.settle(3)
    cluster.run(cluster.controllers.stop())
    cluster.settle(10)  # both pods finish while no controller runs
    pods = job_pods(cluster)
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
    assert all(p["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"] for p in pods)
    cluster.controllers = WorkloadControllers(cluster.client)
    cluster.run(cluster.controllers.start())
    cluster.settle(30)
    done = cluster.get(JOBS, "pi")
    assert done["status"]["succeeded"] == 4
    assert ("Complete", "True", "CompletionsReached") in conditions(done)
    assert len(job_pods(cluster)) == 4


def test_each_index_retries_up_to_its_own_backoff_limit(cluster: Workloads):
    create(
        cluster,
        job(
            command="sleep 1",
            completions=2,
            parallelism=2,
            completionMode="Indexed",
            backoffLimitPerIndex=1,
            annotations=FAIL,
        ),
    )
    cluster.settle(5)
    status = cluster.get(JOBS, "pi")["status"]
    assert status["failedIndexes"] == "" and "failed" not in status  # kept until replaced
    cluster.settle(40)
    failed = cluster.get(JOBS, "pi")
    assert conditions(failed) == [
        ("FailureTarget", "True", "FailedIndexes"),
        ("Failed", "True", "FailedIndexes"),
    ]
    assert failed["status"]["failedIndexes"] == "0,1" and failed["status"]["failed"] == 4
    counts = sorted(
        (
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
            p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"],
        )
        for p in job_pods(cluster)
    )
    assert counts == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]


def test_a_success_policy_completes_an_indexed_job_early(cluster: Workloads):
    create(
        cluster,
        job(
            command="sleep 2",
            completions=3,
            parallelism=1,
            completionMode="Indexed",
            successPolicy={"rules": [{"succeededCount": 2}]},
        ),
    )
    cluster.settle(30)
    done = cluster.get(JOBS, "pi")
    assert conditions(done) == [
        ("SuccessCriteriaMet", "True", "SuccessPolicy"),
        ("Complete", "True", "SuccessPolicy"),
    ]
    assert done["status"]["conditions"][1]["message"] == "Matched rules at index 0"
    assert done["status"]["completedIndexes"] == "0,1" and done["status"]["succeeded"] == 2
    assert len(job_pods(cluster)) == 2


def test_an_orphaned_pod_the_selector_matches_is_adopted_again(cluster: Workloads):
    created = create(cluster, job(command="sleep 3600"))
    cluster.settle(3)
    [pod] = job_pods(cluster)
    name = pod["metadata"]["name"]
    orphaning = {"metadata": {"ownerReferences": None, "finalizers": None}}
    cluster.run(cluster.client.patch(PODS, "default", name, orphaning, PatchType.MERGE))
    cluster.settle(5)
    [again] = job_pods(cluster)
    assert again["metadata"]["name"] == name
    assert again["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    assert again["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert cluster.get(JOBS, "pi")["status"]["active"] == 1


def test_completed_indexes_are_compressed_as_kubernetes_writes_them():
    written = Intervals.parse("", 10).with_indexes([0, 1, 2, 4, 6, 7, 9])
    assert str(written) == "0-2,4,6,7,9"
    assert written.total() == 7
    assert str(Intervals.parse("0-2,4,6,7,9", 7)) == "0-2,4,6"
