"""The ReplicaSet controller against an in-process API server, scheduler and nodes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from tests.client.own_writes import Checked, checking
from tests.controllers.workloads import DEPLOYMENTS, PODS, REPLICA_SETS, Workloads, template

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.clock.rfc3339 import format_time
from pinnace.controllers.replicaset import CLIENT_BURST, CLIENT_QPS

QUOTAS = catalog.kind("", "resourcequotas")


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


@pytest.fixture(autouse=True)
def own_writes_decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """The ReplicaSet controller's status writes are its own (`update_status_own`): each
    must be stored as decoding it would store it, through every count and condition here."""
    yield from checking(monkeypatch)


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


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
        cluster.close()


def test_scale_down_of_a_deployment_deletes_from_the_most_crowded_node_first(
    cluster: Workloads,
):
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
        },
    }
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment))
    cluster.settle()
    nodes: dict[str, int] = {}
    for p in cluster.pods(app="web"):
        nodes[p["spec"]["nodeName"]] = nodes.get(p["spec"]["nodeName"], 0) + 1
    crowded = max(nodes, key=lambda n: nodes[n])
    assert nodes[crowded] == 2
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 2))
    cluster.settle()
    left = [p for p in cluster.pods(app="web") if not p["metadata"].get("deletionTimestamp")]
    assert sorted(p["spec"]["nodeName"] for p in left) == sorted(nodes)


def test_scale_down_of_a_replica_set_of_its_own_ranks_no_node_but_readiness_age():
    """v1.32 counts pods per node only among the replica sets of one owner: a replica set
    without one deletes its most recently ready pod, even off the most crowded node."""
    cluster = Workloads(nodes=0)
    try:
        cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=3)))
        cluster.settle()
        pods = sorted(cluster.pods(app="web"), key=lambda p: p["metadata"]["name"])
        now = cluster.client.clock.now()
        placed = [
            (pods[0], "n1", now - 1000),
            (pods[1], "n1", now - 1000),
            (pods[2], "n2", now - 1),
        ]
        for p, node, ready_at in placed:
            cluster.run(cluster.client.bind(p, node))
            got = cluster.get(PODS, p["metadata"]["name"])
            ready = {"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_at)}
            got = {**got, "status": {**got["status"], "phase": "Running", "conditions": [ready]}}
            cluster.run(cluster.client.update_status(PODS, got))
        cluster.settle()
        scale(cluster, 2)
        assert cluster.events("SuccessfulDelete") == [f"Deleted pod: {pods[2]['metadata']['name']}"]
    finally:
        cluster.close()


HOG = {
    "metadata": {"name": "hog"},
    "spec": {
        "nodeName": "pinnace-node-1",
        "containers": [
            {"name": "hog", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}
        ],
    },
}


def bound_past_the_scheduler() -> Object:
    """A replica set whose pods ask pinnace-node-1 (4 CPUs) for 2 CPUs, beside HOG's 3."""
    rs = replica_set(replicas=1)
    rs["spec"]["template"]["spec"]["nodeName"] = "pinnace-node-1"
    rs["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}}
    return rs


def test_pods_the_kubelet_rejects_are_not_counted_and_are_replaced(cluster: Workloads):
    """A pod bound past the scheduler to a node without room is failed by the node agent
    (OutOfcpu); v1.32's ReplicaSet controller does not count it and creates another at once,
    leaving the failed ones to the pod garbage collector."""
    hog, rs = HOG, bound_past_the_scheduler()

    async def rejected_then_room() -> None:
        await cluster.client.create(PODS, "default", hog)
        await cluster.client.create(REPLICA_SETS, "default", rs)
        while not any(p["status"].get("reason") == "OutOfcpu" for p in await web_pods()):
            await asyncio.sleep(0)
        await cluster.client.delete(PODS, "default", "hog", DeleteOptions(grace_period_seconds=0))

    async def web_pods() -> list[Object]:
        return (await cluster.client.list(PODS, "default", label_selector="app=web"))["items"]

    cluster.run(rejected_then_room())
    cluster.settle()
    pods = cluster.pods(app="web")
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    failed = [p for p in pods if p["status"]["phase"] == "Failed"]
    assert len(running) == 1 and len(failed) == len(pods) - 1 >= 1
    assert {p["status"]["reason"] for p in failed} == {"OutOfcpu"}
    assert cluster.get(REPLICA_SETS, "web")["status"]["replicas"] == 1
    assert cluster.get(REPLICA_SETS, "web")["status"]["readyReplicas"] == 1


def test_a_pod_the_kubelet_keeps_rejecting_is_replaced_at_the_client_s_pace(cluster: Workloads):
    """No back-off for rejected pods in v1.32: what paces the replacements is the controller's
    client, 20 requests a second after a burst of 30 (each replacement is a create and a
    status write), as in kube-controller-manager."""
    cluster.run(cluster.client.create(PODS, "default", HOG))
    cluster.run(cluster.client.create(REPLICA_SETS, "default", bound_past_the_scheduler()))
    cluster.settle(10)
    pods = cluster.pods(app="web")
    rejected = [p for p in pods if p["status"].get("reason") == "OutOfcpu"]
    assert all(p["status"]["phase"] == "Failed" for p in rejected)
    assert len(pods) - len(rejected) <= 1  # the latest replacement, maybe not yet rejected
    assert 10 < len(pods) <= CLIENT_BURST + 10 * CLIENT_QPS


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


def test_an_orphan_of_another_namespace_is_neither_adopted_nor_counted(cluster: Workloads):
    namespaces = catalog.kind("", "namespaces")
    cluster.run(cluster.client.create(namespaces, "", {"metadata": {"name": "other"}}))
    cluster.settle()
    elsewhere = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "elsewhere", "namespace": "other", "labels": {"app": "web"}},
        "spec": template()["spec"],
    }
    cluster.run(cluster.client.create(PODS, "other", elsewhere))
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set()))
    cluster.settle()
    assert len(cluster.pods(app="web")) == 3
    pod = cluster.run(cluster.client.get(PODS, "other", "elsewhere"))
    assert not pod["metadata"].get("ownerReferences")


def test_status_counts_pods_missing_template_labels_and_pods_not_yet_ready_long_enough(
    cluster: Workloads,
):
    """fullyLabeledReplicas leaves out an adopted pod without every template label, and
    availableReplicas counts a ready pod only once minReadySeconds have passed."""
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "labels": {"app": "web"}},
        "spec": template()["spec"],
    }
    cluster.run(cluster.client.create(PODS, "default", orphan))
    rs = replica_set()
    rs["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
    rs["spec"]["minReadySeconds"] = 30
    cluster.run(cluster.client.create(REPLICA_SETS, "default", rs))
    cluster.settle(5)
    status = cluster.get(REPLICA_SETS, "web")["status"]
    assert (status["replicas"], status["fullyLabeledReplicas"], status["readyReplicas"]) == (
        3,
        2,
        3,
    )
    assert "availableReplicas" not in status
    cluster.settle(40)
    assert cluster.get(REPLICA_SETS, "web")["status"]["availableReplicas"] == 3
