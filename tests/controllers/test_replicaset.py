"""The ReplicaSet controller against an in-process API server, scheduler and nodes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controllers.workloads import PODS, REPLICA_SETS, Workloads, template

from pinnace.api import catalog
from pinnace.apiserver.objects import Object

QUOTAS = catalog.by_resource("", "resourcequotas")


def replica_set(name: str = "web", replicas: int = 3, **labels: str) -> Object:
    labels = labels or {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": template(**labels),
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.stop()


def scale(cluster: Workloads, replicas: int) -> None:
    cluster.run(cluster.client.update_scale(REPLICA_SETS, "default", "web", replicas))
    cluster.settle()


def test_creates_the_replicas_owned_by_the_replica_set_and_reports_them(cluster: Workloads):
    rs = cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set()))
    cluster.settle()
    pods = cluster.pods(app="web")
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith("web-")
        assert p["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert p["status"]["phase"] == "Running"
    status = cluster.get(REPLICA_SETS, "web")["status"]
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    names = sorted(p["metadata"]["name"] for p in pods)
    assert cluster.events("SuccessfulCreate") == [f"Created pod: {n}" for n in names]


def test_a_deleted_pod_is_replaced(cluster: Workloads):
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set()))
    cluster.settle()
    victim = cluster.pods(app="web")[0]["metadata"]["name"]
    cluster.run(cluster.client.delete(PODS, "default", victim))
    cluster.settle(40)
    names = {p["metadata"]["name"] for p in cluster.pods(app="web")}
    assert len(names) == 3 and victim not in names


def test_an_orphan_is_adopted_and_a_pod_that_stops_matching_is_released(cluster: Workloads):
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "labels": {"app": "web"}},
        "spec": template()["spec"],
    }
    cluster.run(cluster.client.create(PODS, "default", orphan))
    rs = cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set()))
    cluster.settle()
    pods = cluster.pods(app="web")
    assert len(pods) == 3
    adopted = cluster.get(PODS, "orphan")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

    patch = {"metadata": {"labels": {"app": "other"}}}
    cluster.run(cluster.client.patch(PODS, "default", "orphan", patch))
    cluster.settle()
    assert not cluster.get(PODS, "orphan")["metadata"].get("ownerReferences")
    assert len(cluster.pods(app="web")) == 3


def test_scale_down_deletes_unscheduled_and_pending_pods_before_running_ones():
    cluster = Workloads(nodes=0)
    try:
        cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=4)))
        cluster.settle()
        pods = sorted(cluster.pods(app="web"), key=lambda p: p["metadata"]["name"])
        assert len(pods) == 4
        running = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        # two pods bound to one node and running, one bound and pending, one unbound
        for p, node, status in (
            (pods[0], "n1", running),
            (pods[1], "n1", running),
            (pods[2], "n1", None),
        ):
            cluster.run(cluster.client.bind(p, node))
            if status:
                got = cluster.get(PODS, p["metadata"]["name"])
                got = {**got, "status": {**got["status"], **status}}
                cluster.run(cluster.client.update_status(PODS, got))
        cluster.settle()
        unbound, pending = pods[3]["metadata"]["name"], pods[2]["metadata"]["name"]

        scale(cluster, 3)
        assert unbound not in {p["metadata"]["name"] for p in cluster.pods(app="web")}
        scale(cluster, 2)
        # bound pods are deleted gracefully: without a node agent on n1 they stay, marked
        left = {
            p["metadata"]["name"]
            for p in cluster.pods(app="web")
            if not p["metadata"].get("deletionTimestamp")
        }
        assert pending not in left
        assert left == {pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]}
        assert cluster.events("SuccessfulDelete") == sorted(
            [f"Deleted pod: {unbound}", f"Deleted pod: {pending}"]
        )
    finally:
        cluster.stop()


def test_scale_down_deletes_from_the_most_crowded_node_first(cluster: Workloads):
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=3)))
    cluster.settle()
    nodes: dict[str, int] = {}
    for p in cluster.pods(app="web"):
        nodes[p["spec"]["nodeName"]] = nodes.get(p["spec"]["nodeName"], 0) + 1
    crowded = max(nodes, key=lambda n: nodes[n])
    assert nodes[crowded] == 2
    scale(cluster, 2)
    assert sorted(p["spec"]["nodeName"] for p in cluster.pods(app="web")) == sorted(nodes)


def test_failed_pods_are_not_counted_and_are_replaced(cluster: Workloads):
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=2)))
    cluster.settle()
    victim = cluster.pods(app="web")[0]
    failed = {**victim, "status": {**victim["status"], "phase": "Failed", "reason": "OutOfcpu"}}
    cluster.run(cluster.client.update_status(PODS, failed))
    cluster.settle()
    phases = sorted(p["status"]["phase"] for p in cluster.pods(app="web"))
    assert phases == ["Failed", "Running", "Running"]
    assert cluster.get(REPLICA_SETS, "web")["status"]["replicas"] == 2


def test_creates_refused_by_a_quota_are_reported_as_replica_failure(cluster: Workloads):
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "two-pods"},
        "spec": {"hard": {"pods": "2"}},
    }
    cluster.run(cluster.client.create(QUOTAS, "default", quota))
    cluster.settle()
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=3)))
    cluster.settle(5)
    assert len(cluster.pods(app="web")) == 2
    status = cluster.get(REPLICA_SETS, "web")["status"]
    assert status["replicas"] == 2
    [failure] = status["conditions"]
    assert (failure["type"], failure["status"], failure["reason"]) == (
        "ReplicaFailure",
        "True",
        "FailedCreate",
    )
    assert "exceeded quota: two-pods" in failure["message"]
    refusals = cluster.events("FailedCreate")  # retried with backoff
    assert refusals and all(
        "Error creating: pods " in e and "exceeded quota: two-pods" in e for e in refusals
    )

    cluster.run(cluster.client.update_scale(REPLICA_SETS, "default", "web", 2))
    cluster.settle()
    assert "conditions" not in cluster.get(REPLICA_SETS, "web")["status"]
