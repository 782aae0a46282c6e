"""The simulated mode accounts for what nobody observes (healthy nodes' lease renewals, unchanged
node statuses) instead of writing it: the same cluster through the same faults gives the same
conditions, taints, pod placements, evictions and events, at the same times, as the live mode."""

from __future__ import annotations

from typing import Any

from tests.controllers.lifecycle_cluster import EVENTS, NODES, PODS, LifecycleCluster, pod
from tests.controllers.test_replicaset import replica_set
from tests.controllers.workloads import REPLICA_SETS

UNREACHABLE = "node.kubernetes.io/unreachable"


def observed(cluster: LifecycleCluster) -> dict[str, Any]:
    """What a user of either mode can see of the nodes, pods and events, heartbeat times (the
    Leases of healthy nodes, the conditions' lastHeartbeatTime) aside."""
    nodes = cluster.run(cluster.client.list(NODES))["items"]
    pods = cluster.run(cluster.client.list(PODS, "default"))["items"]
    events = cluster.run(cluster.client.list(EVENTS, ""))["items"]
    unhealthy = cluster.pool.failed | cluster.pool.partitioned
    unhealthy |= {n for n in cluster.pool.agents if cluster.pool.slowness(n) > 1}
    return {
        "nodes": {
            n["metadata"]["name"]: (
                [
                    (c["type"], c["status"], c["reason"], c["lastTransitionTime"])
                    for c in n["status"]["conditions"]
                ],
                [(t["key"], t["effect"], t.get("timeAdded")) for t in n["spec"].get("taints", ())],
            )
            for n in nodes
        },
        "pods": {
            p["metadata"]["name"]: (
                p["spec"].get("nodeName"),
                p["status"].get("phase"),
                p["metadata"].get("deletionTimestamp"),
                [
                    (c["type"], c["status"], c.get("lastTransitionTime"))
                    for c in p["status"].get("conditions", ())
                ],
            )
            for p in pods
        },
        "events": sorted(
            (
                e["reason"],
                e["involvedObject"].get("name", ""),
                e["message"],
                e.get("count"),
                e.get("firstTimestamp"),
                e.get("lastTimestamp"),
            )
            for e in events
        ),
        "leases": {name: cluster.lease_renewed(name) for name in sorted(unhealthy)},
    }


def run(simulated: bool) -> list[dict[str, Any]]:
    """Faults of every kind on a cluster running a ReplicaSet; what is observed after each."""
    cluster = LifecycleCluster({"a": 4, "b": 2}, scheduler=True, simulated=simulated)
    pool = cluster.pool
    tolerate = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    steps = [
        (37, cluster.client.create(REPLICA_SETS, "default", replica_set(replicas=8))),
        (23, cluster.client.create(PODS, "default", pod("stays", "a-1", [tolerate]))),
        (41, pool.fail_node("a-1")),
        (130, pool.partition("b-0")),
        (17, pool.slow("a-2", 3)),
        (200, pool.slow("a-2", 7)),
        (260, pool.recover_node("b-0")),
        (90, pool.recover_node("a-1")),
        (300, pool.recover_node("a-2")),
        (120, pool.fail_node("b-1")),
    ]
    seen = []
    try:
        for wait, action in steps:
            cluster.run(action)
            cluster.wait(wait)
            seen.append(observed(cluster))
    finally:
        cluster.close()
    return seen


def test_the_simulated_mode_observes_as_the_live_one() -> None:
    live, simulated = run(False), run(True)
    for step, (want, got) in enumerate(zip(live, simulated, strict=True)):
        assert got == want, f"after step {step}"
    # the faults did make nodes unknown and evict pods
    assert any(c[1] == "Unknown" for seen in live for cs, _ in seen["nodes"].values() for c in cs)
    assert any(deleted for seen in live for _, _, deleted, _ in seen["pods"].values())
