"""The node lifecycle controller: heartbeats, Unknown conditions, taints and zone rates."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controllers.lifecycle_cluster import MODE_IDS, MODES, NODES, PODS, LifecycleCluster, pod

from pinnace.clock import parse_time

UNREACHABLE_NO_EXECUTE = "node.kubernetes.io/unreachable:NoExecute"
UNREACHABLE_NO_SCHEDULE = "node.kubernetes.io/unreachable:NoSchedule"


@pytest.fixture(params=MODES, ids=MODE_IDS)
def cluster(request: pytest.FixtureRequest) -> Iterator[LifecycleCluster]:
    c = LifecycleCluster({"a": 3}, simulated=request.param)
    yield c
    c.close()


def test_a_node_whose_kubelet_stops_turns_unknown_after_the_grace_period_and_is_tainted(
    cluster: LifecycleCluster,
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("web", "a-0")))
    cluster.wait(12)
    assert cluster.get_pod("web")["status"]["phase"] == "Running"
    cluster.run(cluster.pool.fail_node("a-0"))
    last = cluster.lease_renewed("a-0")

    cluster.wait(last + 45 - cluster.server.clock.now())
    assert cluster.ready("a-0")["status"] == "True"
    assert cluster.taints("a-0") == set()

    cluster.wait(16)  # 61 s after the last heartbeat
    ready = cluster.ready("a-0")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusUnknown",
        "Kubelet stopped posting node status.",
    )
    unknown_at = parse_time(ready["lastTransitionTime"])
    # the grace period counts from when a 5 s monitor pass saw the last renewal
    assert 50 < unknown_at - last <= 60
    conditions = {c["type"]: c["status"] for c in cluster.node("a-0")["status"]["conditions"]}
    assert conditions == {
        "NetworkUnavailable": "False",  # the network plugin's, not the kubelet's
        "MemoryPressure": "Unknown",
        "DiskPressure": "Unknown",
        "PIDPressure": "Unknown",
        "Ready": "Unknown",
    }
    assert cluster.taints("a-0") == {UNREACHABLE_NO_SCHEDULE}
    cluster.wait(5)  # the next monitor pass queues it for the NoExecute taint
    assert cluster.taints("a-0") == {UNREACHABLE_NO_EXECUTE, UNREACHABLE_NO_SCHEDULE}
    assert cluster.taint_time("a-0", "node.kubernetes.io/unreachable") - unknown_at <= 6
    assert cluster.taints("a-1") == set()
    web = cluster.get_pod("web")["status"]["conditions"]
    assert next(c for c in web if c["type"] == "Ready")["status"] == "False"
    assert [e["message"] for e in cluster.events("NodeNotReady") if e["type"] == "Normal"] == [
        "Node a-0 status is now: NodeNotReady"
    ]

    cluster.run(cluster.pool.recover_node("a-0"))
    cluster.wait(20)
    assert cluster.ready("a-0")["status"] == "True"
    assert cluster.taints("a-0") == set()


def test_cordon_adds_the_unschedulable_taint_and_uncordon_removes_it(
    cluster: LifecycleCluster,
) -> None:
    cordon = {"spec": {"unschedulable": True}}
    cluster.run(cluster.client.patch(NODES, "", "a-1", cordon))
    cluster.wait(1)
    taints = cluster.node("a-1")["spec"]["taints"]
    assert [(t["key"], t["effect"]) for t in taints] == [
        ("node.kubernetes.io/unschedulable", "NoSchedule")
    ]
    assert "timeAdded" in taints[0]
    cluster.run(cluster.client.patch(NODES, "", "a-1", {"spec": {"unschedulable": None}}))
    cluster.wait(1)
    assert "taints" not in cluster.node("a-1")["spec"]


def test_a_pressure_condition_gets_its_no_schedule_taint_while_it_lasts(
    cluster: LifecycleCluster,
) -> None:
    cluster.run(cluster.pool.fail_node("a-2"))  # so it does not put its own status back
    node = cluster.node("a-2")
    conditions = [
        {**c, "status": "True"} if c["type"] == "MemoryPressure" else c
        for c in node["status"]["conditions"]
    ]
    patch = {"status": {"conditions": conditions}}
    cluster.run(cluster.client.patch(NODES, "", "a-2", patch, subresource="status"))
    cluster.wait(1)
    assert cluster.taints("a-2") == {"node.kubernetes.io/memory-pressure:NoSchedule"}


def test_network_unavailable_taints_a_running_node_and_its_kubelet_leaves_it_so(
    cluster: LifecycleCluster,
) -> None:
    node = cluster.node("a-1")
    conditions = [
        {**c, "status": "True", "reason": "NoRouteCreated"}
        if c["type"] == "NetworkUnavailable"
        else c
        for c in node["status"]["conditions"]
    ]
    patch = {"status": {"conditions": conditions}}
    cluster.run(cluster.client.patch(NODES, "", "a-1", patch, subresource="status"))
    cluster.wait(320)  # past the kubelet's periodic status post
    assert cluster.taints("a-1") == {"node.kubernetes.io/network-unavailable:NoSchedule"}


def test_a_node_that_never_posted_status_gets_the_startup_grace_period(
    cluster: LifecycleCluster,
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}
    created = parse_time(
        cluster.run(cluster.client.create(NODES, "", node))["metadata"]["creationTimestamp"]
    )
    cluster.wait(55)
    assert "conditions" not in cluster.node("bare").get("status", {})
    cluster.wait(15)
    ready = cluster.ready("bare")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown",
        "NodeStatusNeverUpdated",
        "Kubelet never posted node status.",
    )
    assert 60 < parse_time(ready["lastTransitionTime"]) - created <= 65


def test_a_node_reporting_not_ready_gets_the_not_ready_taints(cluster: LifecycleCluster) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "sick"}}
    cluster.run(cluster.client.create(NODES, "", node))
    now = cluster.server.clock.now_rfc3339()
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "container runtime network not ready",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    patch = {"status": {"conditions": [ready]}}
    cluster.run(cluster.client.patch(NODES, "", "sick", patch, subresource="status"))
    cluster.wait(11)
    assert cluster.taints("sick") == {
        "node.kubernetes.io/not-ready:NoExecute",
        "node.kubernetes.io/not-ready:NoSchedule",
    }
    assert cluster.ready("sick")["reason"] == "KubeletNotReady"
