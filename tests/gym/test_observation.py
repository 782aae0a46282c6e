"""The observation: kept up to date row by row, it is the one made afresh from the table."""

from __future__ import annotations

import numpy as np
from tests.gym.test_rewards import pod

from pinnace.gym.observation import BOTH, Observer
from pinnace.scheduler.nodetable import NodeTable, every_row
from pinnace.scheduler.plugins.policy import node_feature_row, node_features


def node(name: str, zone: str, cpu: int = 8, tainted: bool = False) -> dict[str, object]:
    taints = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}] if tainted else []
    return {
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
    }


def test_an_observer_following_the_table_sees_what_a_new_one_sees() -> None:
    rng = np.random.default_rng(3)
    table = NodeTable()
    for i in range(30):
        table.add_node(node(f"n{i}", f"z{i % 3}", tainted=i % 7 == 0))
    table.track_usage(900.0, 30.0, lambda: 0.0)
    following = Observer(BOTH, 40)
    placed: list[tuple[str, str]] = []
    for step in range(150):
        shape = pod(f"p{step}", f"{rng.integers(1, 20) * 100}m", f"{rng.integers(1, 5)}Gi")
        if placed and rng.random() < 0.3:
            table.remove_pod(*placed.pop(int(rng.integers(len(placed)))))
        else:
            # Mostly one pod between observations (rows made one by one), at times a dozen
            # on as many nodes (made together).
            for k in range(12 if step % 25 == 7 else 1):
                name = f"n{(rng.integers(len(table)) + k) % 30}"
                placing = pod(f"p{step}-{k}", "100m", "1Gi") if k else shape
                table.add_pod(placing, name)
                placed.append((placing.key, name))
        if step % 20 == 10:  # a usage sample: every row's usage changes
            table.record_usage(
                step, {n: (rng.random() * 4000, rng.random() * 2**34) for n in table.names}
            )
        if step % 40 == 39:  # a node resized and tainted, a node added
            table.update_node(node(f"n{step % 30}", "z1", cpu=16, tainted=True))
            table.add_node(node(f"m{step}", "z2"))
        if step == 100:  # a node replaced: its row goes to the last node, a node added
            table.remove_node("n5")
            table.add_node(node("r", "z0"))
        seen = following.observe(table, shape, (250.0, 2.0**28))
        fresh = Observer(BOTH, 40).observe(table, shape, (250.0, 2.0**28))
        for key in ("nodes", "present", "pod"):
            assert np.array_equal(seen[key], fresh[key]), (step, key)
        assert following.row_names == tuple(table.names)


def test_a_node_feature_row_is_that_row_of_the_matrix() -> None:
    table = NodeTable()
    for i in range(5):
        table.add_node(node(f"n{i}", "z0", cpu=4 + i))
    table.track_usage(900.0, 30.0, lambda: 0.0)
    table.add_pod(pod("p", "1500m", "3Gi"), "n2")
    table.record_usage(30.0, {"n2": (1234.5, 2.0**31 + 7), "n3": (10.0, 2.0**20)})
    matrix = node_features(table, every_row(len(table)))
    for i in range(len(table)):
        assert node_feature_row(table, i) == matrix[i].tolist()
