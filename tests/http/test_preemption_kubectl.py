"""Preemption through `pinnace up` with real kubectl: the victim keeps the scheduler's
DisruptionTarget condition, timed at the preemption, to the end, after its kubelet has written
its final status; the preemptor, once running, keeps no nominatedNodeName."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

MANIFESTS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata:
  name: victim
  finalizers: [example.com/keep]   # keeps it readable once its kubelet is done with it
spec:
  priorityClassName: low
  containers:
  - {name: app, image: nginx, resources: {requests: {cpu: 1500m}}}
"""

PREEMPTOR = """\
apiVersion: v1
kind: Pod
metadata: {name: preemptor}
spec:
  priorityClassName: high
  containers:
  - {name: app, image: nginx, resources: {requests: {cpu: "1"}}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(
        tmp_path_factory.mktemp("pinnace-preemption"), flags=("--nodes", "1", "--node-cpu", "2")
    )
    yield running
    stop(running)


def test_the_victim_keeps_its_disruption_condition_after_its_kubelet_is_done(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=MANIFESTS)
    cluster.ok("wait", "--for=condition=Ready", "pod/victim", "--timeout=30s")
    time.sleep(1.1)  # the preemption comes a second after the victim's PodScheduled
    cluster.ok("apply", "-f", "-", stdin=PREEMPTOR)
    cluster.ok("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/victim", "--timeout=30s")

    status = json.loads(cluster.ok("get", "pod", "victim", "-o", "json"))["status"]
    disruption = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["reason"], c["message"]) for c in disruption] == [
        (
            "PreemptionByScheduler",
            "default-scheduler: preempting to accommodate a higher priority pod",
        )
    ]
    # Its time is the preemption's (UpdatePodCondition of a condition the pod did not have),
    # not the time of another condition.
    scheduled = next(c for c in status["conditions"] if c["type"] == "PodScheduled")
    created = json.loads(cluster.ok("get", "pod", "preemptor", "-o", "json"))["metadata"]
    assert disruption[0]["lastTransitionTime"] >= created["creationTimestamp"]
    assert disruption[0]["lastTransitionTime"] > scheduled["lastTransitionTime"]
    # The victim's Preempted event, through events.k8s.io/v1: relates the preemptor.
    listed = json.loads(
        cluster.ok(
            "get",
            "events.v1.events.k8s.io",
            "--field-selector",
            "reason=Preempted,regarding.name=victim",
            "-o",
            "json",
        )
    )["items"]
    preemptor = json.loads(cluster.ok("get", "pod", "preemptor", "-o", "json"))["metadata"]
    assert [
        (e["action"], e["reportingController"], e["related"]["name"], e["related"]["uid"])
        for e in listed
    ] == [("Preempting", "default-scheduler", "preemptor", preemptor["uid"])]
    cluster.ok(
        "patch",
        "pod",
        "victim",
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    cluster.ok("wait", "--for=condition=Ready", "pod/preemptor", "--timeout=30s")


def test_the_preemptor_once_running_is_nominated_no_more(cluster: Cluster) -> None:
    """Its kubelet's status write drops the nomination that the binding left."""
    cluster.ok("wait", "--for=condition=Ready", "pod/preemptor", "--timeout=30s")
    status = json.loads(cluster.ok("get", "pod", "preemptor", "-o", "json"))["status"]
    assert "nominatedNodeName" not in status
    columns = cluster.ok("get", "pod", "preemptor", "-o", "wide", "--no-headers").split()
    assert columns[-2:] == ["<none>", "<none>"]  # NOMINATED NODE, READINESS GATES
