"""How fast unhealthy nodes are tainted for eviction, zone by zone, as v1.32 limits it."""

from __future__ import annotations

from tests.controllers.lifecycle_cluster import LifecycleCluster, both_modes

from pinnace.controllers.node_lifecycle import NodeLifecycleConfig, ZoneState


def zone_states(cluster: LifecycleCluster) -> dict[str, str]:
    """Zone name -> state (the zone key is region ":\\x00:" zone)."""
    return {k.rpartition(":")[2]: str(v) for k, v in cluster.lifecycle.zone_states.items()}


def stop(cluster: LifecycleCluster, names: list[str]) -> None:
    for name in names:
        cluster.run(cluster.pool.fail_node(name))


@both_modes
def test_a_healthy_zone_taints_its_unreachable_nodes_at_one_every_10_seconds(
    simulated: bool,
) -> None:
    cluster = LifecycleCluster({"a": 5, "b": 1}, simulated=simulated)
    try:
        cluster.wait(5)
        stop(cluster, ["a-0", "a-1", "b-0"])  # a: 2 of 5 down (Normal); b: all down
        cluster.wait(120)
        assert zone_states(cluster) == {"a": ZoneState.NORMAL, "b": ZoneState.FULL_DISRUPTION}
        tainted = cluster.no_execute_tainted()
        assert set(tainted) == {"a-0", "a-1", "b-0"}
        first, second = sorted(tainted[n] for n in ("a-0", "a-1"))
        assert 9 <= second - first <= 11  # 0.1 nodes/s in zone a
    finally:
        cluster.close()


@both_modes
def test_a_small_zone_mostly_down_taints_nothing_until_it_recovers_enough(simulated: bool) -> None:
    cluster = LifecycleCluster({"a": 5, "b": 2}, simulated=simulated)
    try:
        cluster.wait(5)
        stop(cluster, ["a-0", "a-1", "a-2"])  # 60 % of a: partial disruption
        cluster.wait(300)
        assert zone_states(cluster) == {
            "a": ZoneState.PARTIAL_DISRUPTION,
            "b": ZoneState.NORMAL,
        }
        assert cluster.no_execute_tainted() == {}
        ready = {n: cluster.ready(n)["status"] for n in ("a-0", "a-1", "a-2", "a-3")}
        assert ready == {"a-0": "Unknown", "a-1": "Unknown", "a-2": "Unknown", "a-3": "True"}

        cluster.run(cluster.pool.recover_node("a-2"))  # 2 of 5 down: back to the normal rate
        cluster.wait(60)
        assert zone_states(cluster)["a"] == ZoneState.NORMAL
        assert set(cluster.no_execute_tainted()) == {"a-0", "a-1"}
    finally:
        cluster.close()


def test_a_large_zone_mostly_down_taints_at_the_secondary_rate() -> None:
    config = NodeLifecycleConfig(large_cluster_size_threshold=4)
    cluster = LifecycleCluster({"a": 5, "b": 1}, config)
    try:
        cluster.wait(5)
        stop(cluster, ["a-0", "a-1", "a-2", "a-3"])
        cluster.wait(250)
        assert zone_states(cluster)["a"] == ZoneState.PARTIAL_DISRUPTION
        times = sorted(cluster.no_execute_tainted().values())
        assert len(times) == 2  # one at once, the next 100 s later (0.01 nodes/s)...
        assert 99 <= times[1] - times[0] <= 101
        cluster.wait(100)
        assert len(cluster.no_execute_tainted()) == 3
    finally:
        cluster.close()


@both_modes
def test_when_every_zone_is_down_no_node_is_tainted_and_taints_are_lifted(simulated: bool) -> None:
    cluster = LifecycleCluster({"a": 2, "b": 1}, simulated=simulated)
    try:
        cluster.wait(5)
        stop(cluster, ["a-0"])
        cluster.wait(80)
        assert set(cluster.no_execute_tainted()) == {"a-0"}

        stop(cluster, ["a-1", "b-0"])  # the control plane is the likelier culprit
        cluster.wait(120)
        assert set(zone_states(cluster).values()) == {ZoneState.FULL_DISRUPTION}
        assert cluster.no_execute_tainted() == {}
        assert cluster.ready("b-0")["status"] == "Unknown"

        cluster.run(cluster.pool.recover_node("b-0"))
        cluster.wait(120)
        assert zone_states(cluster) == {"a": ZoneState.FULL_DISRUPTION, "b": ZoneState.NORMAL}
        assert set(cluster.no_execute_tainted()) == {"a-0", "a-1"}
    finally:
        cluster.close()
