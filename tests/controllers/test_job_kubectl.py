"""A Job through `pinnace up --nodes 2` and kubectl, as a user runs one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-jobs"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_kubectl_creates_a_job_waits_for_it_and_lists_it(cluster: Cluster) -> None:
    created = cluster.ok("create", "job", "hello", "--image=busybox", "--", "sleep", "1")
    assert created.strip() == "job.batch/hello created"
    waited = cluster.ok("wait", "--for=condition=complete", "job/hello", "--timeout=60s")
    assert waited.strip() == "job.batch/hello condition met"
    header, row = cluster.ok("get", "jobs").splitlines()
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row.split()[:3] == ["hello", "Complete", "1/1"]
    pods = cluster.ok("get", "pods", "-l", "job-name=hello", "--no-headers").splitlines()
    assert len(pods) == 1 and pods[0].split()[1:3] == ["0/1", "Completed"]
    described = cluster.ok("describe", "job", "hello")
    assert "Created pod: hello-" in described and "Job completed" in described


# The documentation's Job example (controllers/job.yaml), as it is written.
PI = """
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
"""


def test_the_documentations_pi_job_completes_and_prints_pi(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=PI)
    waited = cluster.ok("wait", "--for=condition=complete", "job/pi", "--timeout=60s")
    assert waited.strip() == "job.batch/pi condition met"
    digits = cluster.ok("logs", "job/pi").strip()
    assert digits.startswith("3.14159265358979323846264338327950288419716939937510")
    assert len(digits) == 2001


BAD_SUCCESS_POLICY = """
apiVersion: batch/v1
kind: Job
metadata:
  name: leader
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  successPolicy:
    rules:
    - succeededIndexes: "0,3"
    - succeededIndexes: "0-1"
      succeededCount: 3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
"""


def test_kubectl_gets_kube_apiservers_errors_for_a_bad_success_policy(cluster: Cluster) -> None:
    refused = cluster.kubectl("create", "-f", "-", stdin=BAD_SUCCESS_POLICY)
    assert refused.returncode == 1
    rules = "spec.successPolicy.rules"
    assert refused.stderr.splitlines() == [
        'The Job "leader" is invalid: ',
        f'* {rules}[0].succeededIndexes: Invalid value: "0,3": error parsing succeededIndexes: '
        'too large index: "3"',
        f"* {rules}[1].succeededCount: Invalid value: 3: must be less than or equal to 2 (the "
        "number of indexes in the specified succeededIndexes field)",
    ]
    non_indexed = BAD_SUCCESS_POLICY.replace(
        "completionMode: Indexed", "completionMode: NonIndexed"
    )
    refused = cluster.kubectl("create", "-f", "-", stdin=non_indexed)
    assert refused.stderr.strip().endswith(": requires indexed completion mode")
    assert refused.stderr.startswith(
        'The Job "leader" is invalid: spec.successPolicy: Invalid value'
    )
    assert cluster.kubectl("get", "job", "leader").returncode == 1


def test_kubectl_gets_the_caps_of_a_huge_indexed_job_with_a_per_index_limit(
    cluster: Cluster,
) -> None:
    refused = cluster.kubectl(
        "create",
        "-f",
        "-",
        stdin=BAD_SUCCESS_POLICY.replace("completions: 3", "completions: 200000").replace(
            "  successPolicy:", "  backoffLimitPerIndex: 1\n  successPolicy:"
        ),
    )
    assert refused.returncode == 1
    assert (
        "* spec.maxFailedIndexes: Required value: must be specified when completions is above "
        "100000"
    ) in refused.stderr.splitlines()


def test_an_external_controller_writes_a_managed_jobs_status_under_v1_32s_rules(
    cluster: Cluster,
) -> None:
    """A Job managed by another controller (as Kueue's MultiKueue does), whose status that
    controller writes with the official Python client."""
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    batch = client.BatchV1Api(api_client)
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "elsewhere"},
        "spec": {
            "managedBy": "example.com/multikueue",
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            },
        },
    }
    batch.create_namespaced_job("default", body)

    def refused(status: dict[str, Any]) -> list[str]:
        with pytest.raises(client.ApiException) as e:
            batch.patch_namespaced_job_status("elsewhere", "default", {"status": status})
        assert e.value.status == 422
        return [
            f"{c['field']}: {c['message']}" for c in json.loads(e.value.body)["details"]["causes"]
        ]

    assert refused({"completedIndexes": "0", "active": 1, "ready": 2}) == [
        'status.completedIndexes: Invalid value: "0": cannot set non-empty completedIndexes '
        "when non-indexed completion mode",
        "status.ready: Invalid value: 2: cannot set more ready pods than active",
    ]
    done = {
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:01:00Z",
        "succeeded": 1,
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    assert refused(done) == [
        "status.conditions: Invalid value: cannot set Complete=True condition without the "
        "SuccessCriteriaMet=true condition"
    ]
    done["conditions"].insert(0, {"type": "SuccessCriteriaMet", "status": "True"})
    written = batch.patch_namespaced_job_status("elsewhere", "default", {"status": done})
    assert [c.type for c in written.status.conditions] == ["SuccessCriteriaMet", "Complete"]
    assert refused({"succeeded": 0}) == [
        "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter"
    ]
    row = cluster.ok("get", "job", "elsewhere", "--no-headers").split()
    assert row[:3] == ["elsewhere", "Complete", "1/1"]
    assert cluster.ok("get", "pods", "-l", "job-name=elsewhere", "-o", "name") == ""
    api_client.close()


def test_a_finished_job_past_its_ttl_goes_after_its_pods(cluster: Cluster) -> None:
    """The TTL controller deletes in the foreground: the Job is marked with the
    foregroundDeletion finalizer, its pods go, then the Job."""
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    batch, core = client.BatchV1Api(api_client), client.CoreV1Api(api_client)
    cluster.ok("create", "job", "brief", "--image=busybox", "--", "sleep", "1")
    listed = batch.list_namespaced_job("default", field_selector="metadata.name=brief")
    cluster.ok("patch", "job", "brief", "-p", '{"spec":{"ttlSecondsAfterFinished":2}}')
    marked: list[Any] = []
    pods_when_gone: list[str] = []
    stream = watch.Watch()
    for event in stream.stream(
        batch.list_namespaced_job,
        "default",
        field_selector="metadata.name=brief",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=60,
    ):
        meta = event["object"].metadata
        if event["type"] == "MODIFIED" and meta.deletion_timestamp is not None:
            marked.append(meta.finalizers)
        if event["type"] == "DELETED":
            pods = core.list_namespaced_pod("default", label_selector="job-name=brief")
            pods_when_gone = [p.metadata.name for p in pods.items]
            stream.stop()
    assert marked and marked[0] == ["foregroundDeletion"]
    assert pods_when_gone == []
    api_client.close()


def test_kubectl_is_told_a_jobs_failure_policy_is_immutable_in_kube_apiservers_words(
    cluster: Cluster,
) -> None:
    cluster.ok("create", "job", "fixed", "--image=busybox", "--", "sleep", "30")
    policy = '{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[2]}}]}'
    patch = f'{{"spec":{{"podReplacementPolicy":"Failed","podFailurePolicy":{policy}}}}}'
    refused = cluster.kubectl("patch", "job", "fixed", "--type=merge", "-p", patch)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'The Job "fixed" is invalid: spec.podFailurePolicy: Invalid value: '
        "batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule{batch.PodFailurePolicyRule{"
        'Action:"FailJob", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)'
        "(0xc000010000), OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern(nil)}}}: "
        "field is immutable"
    )
