"""The reward components on cases worked out by hand (docs/research.md has the formulas)."""

from __future__ import annotations

import numpy as np
import pytest

from pinnace.gym import rewards
from pinnace.metrics.fragmentation import fragmentation, free_capacity
from pinnace.scheduler.nodetable import CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN, NodeTable
from pinnace.scheduler.podinfo import PodInfo

GI = 2**30


def node(name: str, cpu: str, memory: str) -> dict[str, object]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod(name: str, cpu: str, memory: str) -> PodInfo:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    return PodInfo.from_pod(
        {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [container]}}
    )


def table(*nodes: dict[str, object]) -> NodeTable:
    t = NodeTable()
    for n in nodes:
        t.add_node(n)
    return t


def test_balance_is_the_mean_standard_deviation_of_requested_over_allocatable() -> None:
    t = table(node("a", "4", "8Gi"), node("b", "4", "8Gi"))
    shape = pod("x", "1", "2Gi")
    empty = rewards.measure(t, shape)
    t.add_pod(pod("p1", "1", "2Gi"), "a")
    one = rewards.measure(t, shape)
    # cpu 1/4 and 0: std 1/8; memory 2/8 and 0: std 1/8.
    assert (empty.balance, one.balance) == (0.0, pytest.approx(1 / 8))
    t.add_pod(pod("p2", "1", "2Gi"), "b")
    spread = rewards.measure(t, shape)
    assert spread.balance == 0.0
    assert rewards.decision_rewards(one, spread)["balance"] == pytest.approx(1 / 8)
    assert rewards.decision_rewards(empty, one)["balance"] == pytest.approx(-1 / 8)


def test_packing_counts_the_nodes_with_pods() -> None:
    t = table(node("a", "4", "8Gi"), node("b", "4", "8Gi"), node("c", "4", "8Gi"))
    shape = pod("x", "1", "1Gi")
    before = rewards.measure(t, shape)
    t.add_pod(pod("p1", "1", "1Gi"), "a")
    after_first = rewards.measure(t, shape)
    t.add_pod(pod("p2", "1", "1Gi"), "a")
    after_second = rewards.measure(t, shape)
    assert rewards.decision_rewards(before, after_first)["packing"] == -1
    assert rewards.decision_rewards(after_first, after_second)["packing"] == 0


def test_fragmentation_is_the_stranded_share_for_the_pods_shape() -> None:
    # One node of 4 CPUs and 8Gi, pods of 1500m and 1Gi: two more fit, leaving 1 CPU of 4
    # (25 %) and 6Gi of 8Gi (75 %) that no such pod can use: 50 % on average.
    t = table(node("a", "4", "8Gi"))
    shape = pod("x", "1500m", "1Gi")
    assert rewards.measure(t, shape).fragmentation == pytest.approx(0.5)
    # One placed: 2500m and 7Gi free, one more fits: 1000m of 2500m (40 %), 6Gi of 7Gi.
    t.add_pod(pod("p1", "1500m", "1Gi"), "a")
    assert rewards.measure(t, shape).fragmentation == pytest.approx((0.4 + 6 / 7) / 2)
    assert rewards.measure(NodeTable(), shape) == rewards.Measures(0.0, 0.0, 0.0)


def reference(t: NodeTable, shape: PodInfo) -> tuple[float, float, float]:
    """The measures worked out over the whole table by their definitions."""
    allocatable = t.allocatable[:, [CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN]]
    requested = t.requested[:, [CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN]]
    present = (allocatable[:, :2] > 0).all(axis=1)
    ratios = requested[present, :2] / allocatable[present, :2]
    free = free_capacity(allocatable, requested)
    share = fragmentation(free, rewards.pod_shape(shape)[None, :]).share[0, :2]
    return (
        float(ratios.std(axis=0).mean()),
        float(np.nan_to_num(share, nan=0.0).mean()),
        float(np.count_nonzero(requested[:, 2])),
    )


def test_remeasuring_after_changes_gives_the_measures_of_the_whole_table() -> None:
    rng = np.random.default_rng(7)
    t = table(
        *(node(f"n{i}", str(rng.integers(2, 9)), f"{rng.integers(4, 33)}Gi") for i in range(40))
    )
    shape = pod("x", "700m", "3Gi")
    gauge = rewards.Gauge(t, shape)
    placed: list[tuple[str, str]] = []
    for step in range(200):
        if placed and rng.random() < 0.3:  # a pod goes
            key, name = placed.pop(int(rng.integers(len(placed))))
            t.remove_pod(key, name)
        else:
            name = f"n{rng.integers(40)}"
            p = pod(f"p{step}", f"{rng.integers(1, 20) * 100}m", f"{rng.integers(1, 5)}Gi")
            t.add_pod(p, name)
            placed.append((p.key, name))
        if step % 50 == 49:  # a node resized
            t.update_node(node(f"n{step % 40}", "16", "64Gi"))
        measured = gauge.remeasure()
        assert (measured.balance, measured.fragmentation, measured.packing) == pytest.approx(
            reference(t, shape), rel=1e-12
        )


def test_time_components_charge_pods_by_the_second() -> None:
    assert rewards.time_rewards(pending=3, in_system=5, seconds=10.0, disruptions=2) == {
        "pending": -30.0,
        "decima": -50.0,
        "evictions": -2.0,
    }


def test_rewards_are_chosen_by_name_and_weighted() -> None:
    assert rewards.weights(None) == {"decima": 1.0}
    assert rewards.weights("decima+packing") == {"decima": 1.0, "packing": 1.0}
    assert rewards.weights(["balance"]) == {"balance": 1.0}
    chosen = rewards.weights({"decima": 0.001, "packing": 2})
    assert rewards.total({"decima": -1000.0, "packing": -1.0, "balance": 9.0}, chosen) == -3.0
    with pytest.raises(ValueError, match="unknown reward component 'speed'"):
        rewards.weights("speed")


def test_the_pods_on_nodes_are_counted_from_the_rows_changed() -> None:
    rng = np.random.default_rng(3)
    t = table(*(node(f"n{i}", "8", "32Gi") for i in range(20)))
    on_nodes = rewards.PodsOnNodes()
    placed: list[tuple[str, str]] = []
    for step in range(300):
        if placed and rng.random() < 0.3:  # a pod goes
            key, name = placed.pop(int(rng.integers(len(placed))))
            t.remove_pod(key, name)
        else:
            name = t.names[int(rng.integers(len(t)))]
            p = pod(f"p{step}", "100m", "1Gi")
            t.add_pod(p, name)
            placed.append((p.key, name))
        if step % 40 == 39:  # a node goes, its pods with it, and another comes
            gone = t.names[int(rng.integers(len(t)))]
            t.remove_node(gone)
            placed = [(key, name) for key, name in placed if name != gone]
            t.add_node(node(f"m{step}", "8", "32Gi"))
        assert on_nodes.count(t) == int(t.requested[:, PODS_COLUMN].sum())
