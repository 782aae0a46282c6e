"""A Job whose pod failure policy ignores disruptions, its node drained with kubectl, against
`pinnace up --nodes 2`: the eviction API marks the pod with the DisruptionTarget condition, the
kubelet keeps that condition (it owns only its own condition types) while it stops the pod, so
the Job controller ignores the failure and replaces the pod instead of failing the Job."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: disrupted}
spec:
  backoffLimit: 0
  podReplacementPolicy: Failed
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [{type: DisruptionTarget}]
  template:
    spec:
      restartPolicy: Never
      # busybox's sleep as PID 1 does not stop on SIGTERM: the drain waits out the grace period.
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox, command: [sleep, "300"]}]
"""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-job-disruption"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_a_drained_jobs_pod_is_replaced_under_an_ignore_rule(nodes: Cluster) -> None:
    nodes.ok("apply", "-f", "-", stdin=JOB)
    nodes.ok("wait", "--for=condition=Ready", "pod", "-l", "job-name=disrupted", "--timeout=30s")
    first = json.loads(nodes.ok("get", "pods", "-l", "job-name=disrupted", "-o", "json"))
    (pod,) = first["items"]
    drained = pod["spec"]["nodeName"]
    nodes.ok("drain", drained, "--timeout=60s")

    def replaced() -> list[str]:
        names = nodes.ok("get", "pods", "-l", "job-name=disrupted", "-o", "name").split()
        assert f"pod/{pod['metadata']['name']}" not in names
        return names

    assert len(eventually(replaced)) == 1
    nodes.ok("wait", "--for=jsonpath={.status.active}=1", "job/disrupted", "--timeout=30s")
    status = json.loads(nodes.ok("get", "job", "disrupted", "-o", "json"))["status"]
    assert "conditions" not in status
    assert "failed" not in status
