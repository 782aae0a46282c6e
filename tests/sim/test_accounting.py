"""The simulated mode accounts for what nobody observes (healthy nodes' lease renewals, unchanged
node statuses, service account tokens nobody reads) instead of writing it: the same cluster
through the same faults gives the same conditions, taints, pod placements, evictions and
events, at the same times, as the live mode."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.controllers.lifecycle_cluster import EVENTS, NODES, PODS, LifecycleCluster, pod
from tests.controllers.test_replicaset import replica_set
from tests.controllers.workloads import REPLICA_SETS

from pinnace.api import catalog
from pinnace.controllers import node_lifecycle

UNREACHABLE = "node.kubernetes.io/unreachable"
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")


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
    """Faults of every kind on a cluster running a ReplicaSet, at their times from the start
    as a scenario's timeline takes them (some at the instant of a node lifecycle pass or a
    heartbeat); what is observed every 37 s."""
    cluster = LifecycleCluster({"a": 4, "b": 2}, scheduler=True, simulated=simulated)
    pool, client = cluster.pool, cluster.client
    tolerate = {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}
    late = pod("late", "b-1")
    late["spec"]["containers"][0]["image"] = "redis"
    robot = pod("robot", "a-0")
    robot["spec"]["serviceAccountName"] = "robot"
    account = {"metadata": {"name": "robot"}}

    async def without_its_account() -> None:
        """A pod whose first service account token cannot be had: its mount fails."""
        await client.create(SERVICE_ACCOUNTS, "default", account)
        await client.create(PODS, "default", robot)
        await client.delete(SERVICE_ACCOUNTS, "default", "robot")

    timeline: list[tuple[float, Callable[[], Awaitable[Any]]]] = [
        (0, lambda: client.create(REPLICA_SETS, "default", replica_set(replicas=8))),
        (23, lambda: client.create(PODS, "default", pod("stays", "a-1", [tolerate]))),
        (60, without_its_account),
        (250, lambda: client.create(SERVICE_ACCOUNTS, "default", account)),
        (300, lambda: pool.fail_node("a-1")),
        (430, lambda: pool.partition("b-0")),
        (447, lambda: pool.slow("a-2", 3)),
        (650, lambda: pool.slow("a-2", 7)),
        (900, lambda: pool.recover_node("b-0")),
        (990, lambda: pool.recover_node("a-1")),
        (1290, lambda: pool.recover_node("a-2")),
        (1403, lambda: client.create(PODS, "default", late)),
        (1408, lambda: pool.fail_node("b-1")),  # its node status posted with the new image
    ]
    start = cluster.clock.now()

    async def take_steps() -> None:
        for at, action in timeline:
            await asyncio.sleep(start + at - cluster.clock.now())
            await action()

    steps = cluster.loop.create_task(take_steps())
    seen = []
    try:
        while not steps.done():
            cluster.wait(37)
            seen.append(observed(cluster))
        cluster.wait(120)
        seen.append(observed(cluster))
    finally:
        cluster.close()
    return seen


@pytest.mark.parametrize("per_turn", [node_lifecycle.NODES_PER_TURN, 2])
def test_the_simulated_mode_observes_as_the_live_one(
    per_turn: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With 2, a node lifecycle pass yields to the loop after every other node (as one over
    # thousands of nodes does every NODES_PER_TURN), so that heartbeats and writes of the
    # same instant come in between; the simulated mode's pass, which looks only at the nodes
    # not parked, yields as often, at the same places.
    monkeypatch.setattr(node_lifecycle, "NODES_PER_TURN", per_turn)
    live, simulated = run(False), run(True)
    for step, (want, got) in enumerate(zip(live, simulated, strict=True)):
        assert got == want, f"at the {step + 1}. look"
    # the faults did make nodes unknown and evict pods, and a pod's mount fail for its token
    assert any(
        e[0] == "FailedMount" and "failed to fetch token" in e[2] for e in live[-1]["events"]
    )
    assert live[-1]["pods"]["robot"][1] == "Running"  # once its ServiceAccount was back
    assert any(c[1] == "Unknown" for seen in live for cs, _ in seen["nodes"].values() for c in cs)
    assert any(deleted for seen in live for _, _, deleted, _ in seen["pods"].values())
