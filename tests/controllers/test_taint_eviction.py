"""Taint-based eviction: pods leave a node with NoExecute taints as their tolerations allow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.lifecycle_cluster import MODE_IDS, MODES, NODES, PODS, LifecycleCluster, pod

from pinnace.api.status import StatusError
from pinnace.clock import parse_time

UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture(params=MODES, ids=MODE_IDS)
def cluster(request: pytest.FixtureRequest) -> Iterator[LifecycleCluster]:
    c = LifecycleCluster({"a": 3}, simulated=request.param)
    yield c
    c.close()


def deleted(cluster: LifecycleCluster, name: str) -> bool:
    """Terminating, or gone already (a live kubelet finishes the deletion)."""
    try:
        return bool(cluster.get_pod(name)["metadata"].get("deletionTimestamp"))
    except StatusError as e:
        assert e.code == 404
        return True


def test_pods_of_an_unreachable_node_go_as_their_tolerations_allow(
    cluster: LifecycleCluster,
) -> None:
    at_once = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    forever = dict(at_once)
    at_once["tolerationSeconds"] = 0
    for body in (
        pod("default-300", "a-0"),
        pod("at-once", "a-0", [at_once]),
        pod("forever", "a-0", [forever]),
        pod("elsewhere", "a-1"),
    ):
        cluster.run(cluster.client.create(PODS, "default", body))
    tolerations = cluster.get_pod("default-300")["spec"]["tolerations"]
    assert {(t["key"], t["tolerationSeconds"]) for t in tolerations} == {
        ("node.kubernetes.io/not-ready", 300),
        (UNREACHABLE, 300),
    }
    cluster.wait(12)
    cluster.run(cluster.pool.fail_node("a-0"))
    last = cluster.lease_renewed("a-0")

    cluster.wait(last + 70 - cluster.server.clock.now())
    tainted = cluster.taint_time("a-0", UNREACHABLE)
    assert deleted(cluster, "at-once")
    assert not deleted(cluster, "default-300")
    condition = next(
        c
        for c in cluster.get_pod("at-once")["status"]["conditions"]
        if c["type"] == "DisruptionTarget"
    )
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )

    cluster.wait(tainted + 299 - cluster.server.clock.now())
    assert not deleted(cluster, "default-300")
    cluster.wait(2)
    assert deleted(cluster, "default-300")
    assert 350 <= tainted + 300 - last <= 366  # ~50 s + 300 s after the last heartbeat
    marked = {
        e["message"]: parse_time(e["firstTimestamp"])
        for e in cluster.events("TaintManagerEviction")
    }
    assert set(marked) == {
        "Marking for deletion Pod default/at-once",
        "Marking for deletion Pod default/default-300",
    }
    assert marked["Marking for deletion Pod default/default-300"] - tainted in (299, 300, 301)
    events = cluster.events("TaintManagerEviction")
    assert {e["source"]["component"] for e in events} == {"taint-eviction-controller"}
    # The controller names the pod by namespace and name only: no uid, so `kubectl describe
    # pod`, which looks for events by the pod's uid too, does not list them, as in v1.32.
    assert {tuple(sorted(e["involvedObject"].items())) for e in events} == {
        (("apiVersion", "v1"), ("kind", "Pod"), ("name", name), ("namespace", "default"))
        for name in ("at-once", "default-300")
    }

    cluster.wait(600)
    assert not deleted(cluster, "forever")
    assert not deleted(cluster, "elsewhere")


def test_an_untolerated_no_execute_taint_deletes_at_once_and_removal_cancels(
    cluster: LifecycleCluster,
) -> None:
    for body in (pod("plain", "a-1"), pod("plain-2", "a-2")):
        cluster.run(cluster.client.create(PODS, "default", body))
    cluster.wait(2)
    dedicated = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"taints": [dedicated]}}))
    cluster.wait(1)
    assert deleted(cluster, "plain")

    # a node that recovers before tolerationSeconds run out keeps its pods
    cluster.run(cluster.pool.fail_node("a-2"))
    last = cluster.lease_renewed("a-2")
    cluster.wait(last + 120 - cluster.server.clock.now())
    assert UNREACHABLE in {t["key"] for t in cluster.node("a-2")["spec"]["taints"]}
    cluster.run(cluster.pool.recover_node("a-2"))
    cluster.wait(20)
    assert "taints" not in cluster.node("a-2")["spec"]
    cluster.wait(400)
    assert not deleted(cluster, "plain-2")
    assert {e["message"] for e in cluster.events("TaintManagerEviction")} == {
        "Marking for deletion Pod default/plain",
        "Cancelling deletion of Pod default/plain-2",
    }
    assert not any("uid" in e["involvedObject"] for e in cluster.events("TaintManagerEviction"))


def test_the_kubelet_keeps_the_disruption_condition_to_the_end(
    cluster: LifecycleCluster,
) -> None:
    # The kubelet's status writes keep the conditions it does not own (mergePodStatus), so
    # the pod keeps the taint manager's DisruptionTarget while its containers stop.
    cluster.run(cluster.client.create(PODS, "default", pod("victim", "a-1")))
    cluster.wait(2)
    versions: list[dict[str, Any]] = []

    async def follow() -> None:
        start = (await cluster.client.list(PODS, "default"))["metadata"]["resourceVersion"]
        async for event in cluster.client.watch(PODS, "default", resource_version=start):
            versions.append(event["object"])

    watch = cluster.loop.create_task(follow())
    taint = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"taints": [taint]}}))
    cluster.wait(40)
    watch.cancel()

    last = versions[-1]
    assert last["metadata"]["deletionTimestamp"]
    assert "terminated" in last["status"]["containerStatuses"][0]["state"]
    disruption = [c for c in last["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"]) for c in disruption] == [("True", "DeletionByTaintManager")]


def test_each_taint_is_tolerated_by_the_first_toleration_that_matches(
    cluster: LifecycleCluster,
) -> None:
    """getMinTolerationTime counts, for each taint, the first toleration that tolerates it
    (GetMatchingTolerations): a later, shorter one matching the same taint is not used."""
    forever = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
    brief = {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoExecute"}
    brief["tolerationSeconds"] = 10
    for body in (
        pod("forever-first", "a-1", [forever, brief]),
        pod("brief-first", "a-1", [brief, forever]),
    ):
        cluster.run(cluster.client.create(PODS, "default", body))
    cluster.wait(2)
    taint = {"key": "dedicated", "value": "db", "effect": "NoExecute"}
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"taints": [taint]}}))
    cluster.wait(60)
    assert deleted(cluster, "brief-first")
    assert not deleted(cluster, "forever-first")


def test_a_scheduled_deletion_stands_when_a_new_taint_is_tolerated_for_no_time(
    cluster: LifecycleCluster,
) -> None:
    """processPodOnNode keeps a deletion scheduled before now while every taint is tolerated,
    whatever the new shortest toleration time: 0 s included."""
    slow = {"key": "slow", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
    now = {"key": "now", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
    cluster.run(cluster.client.create(PODS, "default", pod("both", "a-1", [slow, now])))
    cluster.run(cluster.client.create(PODS, "default", pod("only-now", "a-1", [now])))
    cluster.wait(2)
    taints = [{"key": "slow", "effect": "NoExecute"}]
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"taints": taints}}))
    cluster.wait(1)
    assert deleted(cluster, "only-now")  # the slow taint is not tolerated: at once
    cluster.wait(10)
    taints.append({"key": "now", "effect": "NoExecute"})
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"taints": taints}}))
    cluster.wait(30)
    assert not deleted(cluster, "both")
    cluster.wait(25)
    assert deleted(cluster, "both")
