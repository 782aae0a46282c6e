"""Node faults and pool changes at run time (`NodeAgentPool.fail_node`, `recover_node`,
`partition`, `slow`, `add_nodes`, `remove_node`), with the control plane's controllers
reacting as v1.32's do, on the virtual clock; and the API server's path that injects them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
from tests.controllers.lifecycle_cluster import (
    MODE_IDS,
    MODES,
    NODES,
    PODS,
    ZONE_LABEL,
    LifecycleCluster,
    both_modes,
    pod,
)
from tests.controllers.test_replicaset import replica_set
from tests.controllers.workloads import REPLICA_SETS
from tests.http.test_app import call
from tests.kubelet.conftest import LEASES

from pinnace.api.objects import Object
from pinnace.api.options import LogOptions
from pinnace.api.status import StatusError
from pinnace.api.streams import StreamOptions, Unreachable
from pinnace.apiserver.http.app import NODES_PATH
from pinnace.apiserver.logs import log_text
from pinnace.kubelet import NodeConfig
from pinnace.kubelet.pool import NotRunning

UNREACHABLE = "node.kubernetes.io/unreachable"
TOLERATE_UNREACHABLE = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}


@pytest.fixture(params=MODES, ids=MODE_IDS)
def cluster(request: pytest.FixtureRequest) -> Iterator[LifecycleCluster]:
    c = LifecycleCluster({"a": 3}, scheduler=True, simulated=request.param)
    yield c
    c.close()


def pods(cluster: LifecycleCluster) -> list[Object]:
    return cluster.run(cluster.client.list(PODS, "default"))["items"]


def live(cluster: LifecycleCluster) -> dict[str, str]:
    """Pod name -> node, for the pods not being deleted."""
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in pods(cluster)
        if not p["metadata"].get("deletionTimestamp")
    }


def ready(pod: Object) -> str:
    return next(c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready")


def test_a_failed_node_goes_unknown_its_pods_are_evicted_and_replaced_then_it_recovers(
    cluster: LifecycleCluster,
) -> None:
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=4)))
    cluster.wait(10)
    placed = live(cluster)
    victim = placed[min(placed)]
    cluster.run(
        cluster.client.create(PODS, "default", pod("stays", victim, [TOLERATE_UNREACHABLE]))
    )
    cluster.wait(5)
    stays = cluster.get_pod("stays")["status"]
    evicted = {name for name, node in placed.items() if node == victim}

    cluster.run(cluster.pool.fail_node(victim))
    assert cluster.pool.failed == {victim}
    assert victim not in cluster.pool.agents
    last = cluster.lease_renewed(victim)
    cluster.wait(last + 45 - cluster.clock.now())
    assert cluster.ready(victim)["status"] == "True"

    cluster.wait(16)
    ready_condition = cluster.ready(victim)
    assert (ready_condition["status"], ready_condition["reason"]) == (
        "Unknown",
        "NodeStatusUnknown",
    )
    cluster.wait(6)
    tainted = cluster.taint_time(victim, UNREACHABLE)
    assert cluster.lease_renewed(victim) == last  # nothing of the node reaches the API

    cluster.wait(tainted + 300 + 10 - cluster.clock.now())
    # Marked for deletion after their 300 s toleration; with no kubelet to stop them they stay
    # Terminating, and the ReplicaSet has replaced them on the other nodes.
    terminating = {
        p["metadata"]["name"] for p in pods(cluster) if p["metadata"].get("deletionTimestamp")
    }
    assert terminating == evicted
    now = live(cluster)
    replicas = {name: node for name, node in now.items() if name.startswith("web-")}
    assert len(replicas) == 4
    assert victim not in replicas.values()
    assert all(
        p["status"]["phase"] == "Running"
        for p in pods(cluster)
        if p["metadata"]["name"] in replicas
    )

    cluster.run(cluster.pool.recover_node(victim))
    assert cluster.pool.failed == frozenset()
    cluster.wait(20)
    assert cluster.ready(victim)["status"] == "True"
    assert cluster.taints(victim) == set()
    assert cluster.lease_renewed(victim) > last
    # The restarted kubelet stopped the pods deleted meanwhile, and runs on the one still bound.
    assert {p["metadata"]["name"] for p in pods(cluster)} == {*replicas, "stays"}
    back = cluster.get_pod("stays")["status"]
    assert (back["phase"], ready(cluster.get_pod("stays"))) == ("Running", "True")
    assert (back["startTime"], back["podIP"]) == (stays["startTime"], stays["podIP"])


@both_modes
def test_a_partitioned_node_runs_on_unheard_and_reconciles_when_reconnected(
    simulated: bool,
) -> None:
    cluster = LifecycleCluster({"a": 2}, simulated=simulated)
    try:
        for name in ("web", "deleted"):
            body = pod(name, "a-0", [TOLERATE_UNREACHABLE])
            cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(5)
        cluster.run(cluster.pool.partition("a-0"))
        assert cluster.pool.partitioned == {"a-0"}
        last = cluster.lease_renewed("a-0")
        cluster.run(cluster.client.delete(PODS, "default", "deleted"))
        cluster.wait(70)
        assert cluster.ready("a-0")["status"] == "Unknown"
        assert UNREACHABLE in {t.split(":")[0] for t in cluster.taints("a-0")}
        assert cluster.lease_renewed("a-0") == last
        # The agent never heard of the deletion; the API server cannot reach it for logs.
        assert cluster.get_pod("deleted")["metadata"]["deletionTimestamp"]
        with pytest.raises(StatusError) as refused:
            cluster.run(log_text(cluster.server, "default", "web", LogOptions()))
        assert refused.value.code == 500
        assert refused.value.message.endswith("dial tcp 10.0.0.1:10250: i/o timeout")
        with pytest.raises(Unreachable) as unreachable:
            cluster.pool.exec(cluster.get_pod("web"), StreamOptions("app", ("true",)))
        assert str(unreachable.value) == "dial tcp 10.0.0.1:10250: i/o timeout"
        assert "a-0" in cluster.pool.agents  # it runs on

        cluster.run(cluster.pool.recover_node("a-0"))
        assert cluster.pool.partitioned == frozenset()
        cluster.wait(20)
        assert cluster.ready("a-0")["status"] == "True"
        assert cluster.taints("a-0") == set()
        assert live(cluster) == {"web": "a-0"}
        assert {p["metadata"]["name"] for p in pods(cluster)} == {"web"}
        assert ready(cluster.get_pod("web")) == "True"
    finally:
        cluster.close()


@both_modes
def test_a_slowed_node_renews_its_lease_less_often_and_goes_unknown_when_too_slow(
    simulated: bool,
) -> None:
    cluster = LifecycleCluster({"a": 2}, simulated=simulated)
    try:
        cluster.wait(5)
        cluster.run(cluster.pool.slow("a-0", 3))
        assert cluster.pool.slowness("a-0") == 3
        renewals = []
        for _ in range(12):
            cluster.wait(10)
            renewals.append(cluster.lease_renewed("a-0"))
        steps = {round(b - a) for a, b in pairwise(renewals) if b != a}
        assert steps == {30}
        assert cluster.ready("a-0")["status"] == "True"

        # 70 s between heartbeats, past the 50 s grace: Unknown until each heartbeat.
        cluster.run(cluster.pool.slow("a-0", 7))
        seen = []
        for _ in range(30):
            cluster.wait(5)
            seen.append(cluster.ready("a-0")["status"])
        assert seen[-14:].count("Unknown") >= 2
        assert "True" in seen[-14:]
        cluster.run(cluster.pool.recover_node("a-0"))
        cluster.wait(15)
        assert cluster.ready("a-0")["status"] == "True"
        assert cluster.pool.slowness("a-0") == 1
    finally:
        cluster.close()


def test_added_nodes_register_and_take_pods(cluster: LifecycleCluster) -> None:
    pool = cluster.pool
    index = pool.next_index
    assert index == 4
    selector = {"nodeSelector": {ZONE_LABEL: "b"}}
    body = pod("for-b", "")
    body["spec"] = {**{k: v for k, v in body["spec"].items() if k != "nodeName"}, **selector}
    cluster.run(cluster.client.create(PODS, "default", body))
    cluster.wait(2)
    assert cluster.get_pod("for-b")["status"]["phase"] == "Pending"

    added = [NodeConfig(name=f"b-{i}", index=index + i, labels={ZONE_LABEL: "b"}) for i in (0, 1)]
    cluster.run(pool.add_nodes(added))
    assert pool.next_index == index + 2
    cluster.wait(5)
    assert cluster.ready("b-1")["status"] == "True"
    assert cluster.node("b-1")["status"]["addresses"][0]["address"] == "10.0.0.5"
    placed = cluster.get_pod("for-b")
    assert placed["spec"]["nodeName"] in ("b-0", "b-1")
    assert placed["status"]["phase"] == "Running"
    first = cluster.heartbeat("b-0")
    cluster.wait(20)
    assert cluster.heartbeat("b-0") - first == 20
    with pytest.raises(ValueError, match="b-0"):
        cluster.run(pool.add_nodes([NodeConfig(name="b-0", index=9)]))


def test_a_removed_node_is_deleted_and_its_pods_go_to_other_nodes(
    cluster: LifecycleCluster,
) -> None:
    cluster.run(cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=3)))
    cluster.wait(10)
    placed = live(cluster)
    gone = placed[min(placed)]

    cluster.run(cluster.pool.remove_node(gone))
    cluster.wait(1)
    with pytest.raises(StatusError) as missing:
        cluster.run(cluster.client.get(NODES, "", gone))
    assert missing.value.code == 404
    assert cluster.pool.agent(gone) is None
    # The pod garbage collector deletes the pods of a node gone for its 40 s quarantine.
    cluster.wait(60)
    now = live(cluster)
    assert len(now) == 3
    assert gone not in now.values()
    assert all(p["status"]["phase"] == "Running" for p in pods(cluster))
    assert cluster.pool.agent(gone) is None  # the Node is not adopted back


def test_a_deleted_lease_is_created_again_at_the_next_renewal(cluster: LifecycleCluster) -> None:
    """The garbage collector deletes a node's Lease when the Node it is owned by is gone, as
    when a node comes back under its name while the kubelet still renews the old Lease: the
    kubelet's next renewal, NotFound, creates it again (controller.go's sync: the update
    fails, ensureLease creates), owned by the Node that is there now."""
    uid = cluster.node("a-0")["metadata"]["uid"]
    cluster.wait(5)
    cluster.run(cluster.client.delete(LEASES, "kube-node-lease", "a-0"))
    cluster.wait(15)
    lease = cluster.run(cluster.client.get(LEASES, "kube-node-lease", "a-0"))
    assert [o["uid"] for o in lease["metadata"]["ownerReferences"]] == [uid]
    assert cluster.lease_renewed("a-0") >= cluster.clock.now() - 10


def test_faults_name_a_running_node(cluster: LifecycleCluster) -> None:
    with pytest.raises(NotRunning, match="not a simulated node"):
        cluster.run(cluster.pool.fail_node("z-9"))
    cluster.run(cluster.pool.fail_node("a-1"))
    cluster.run(cluster.pool.fail_node("a-1"))  # already stopped: nothing more to do
    with pytest.raises(NotRunning, match="stopped"):
        cluster.run(cluster.pool.partition("a-1"))
    with pytest.raises(ValueError, match="at least 1"):
        cluster.run(cluster.pool.slow("a-0", 0.5))


def test_the_api_servers_node_path_injects_faults_and_refuses_bad_requests(
    cluster: LifecycleCluster,
) -> None:
    app = cluster.plane.http_app()

    def post(path: str, query: bytes = b"", method: str = "POST") -> tuple[int, Any]:
        code, body = cluster.run(call(app, method, f"/pinnace/nodes/{path}", query))
        return code, json.loads(body)

    assert NODES_PATH in app.paths()
    assert post("a-0/slow", b"factor=3") == (
        200,
        {"node": "a-0", "state": "Running", "slowness": 3.0},
    )
    assert post("a-0/partition")[1]["state"] == "Partitioned"
    assert post("a-0/stop")[1] == {"node": "a-0", "state": "Stopped", "slowness": 3.0}
    assert cluster.pool.failed == {"a-0"}
    code, refused = post("a-0/partition")
    assert (code, refused["reason"], refused["message"]) == (
        409,
        "Conflict",
        'Operation cannot be fulfilled on nodes "a-0": its kubelet is stopped: start it first',
    )
    assert post("a-0/start")[1] == {"node": "a-0", "state": "Running", "slowness": 1.0}
    assert post("a-1/slow", b"factor=0.5")[0] == 400
    assert post("a-1/slow")[0] == 400
    assert post("a-1/crash")[0] == 404
    assert post("b-7/stop")[1]["message"] == 'node "b-7" is not a simulated node of this cluster'
    assert post("a-1/stop", method="GET")[0] == 405
    assert post("a-1")[0] == 404
