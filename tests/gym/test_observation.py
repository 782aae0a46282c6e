"""The observation: kept up to date row by row, it is the one made afresh from the table."""

from __future__ import annotations

import numpy as np
from tests.gym.test_rewards import pod

from pinnace.gym.observation import BOTH, Observer
from pinnace.scheduler.nodetable import NodeTable


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
            name = f"n{rng.integers(len(table))}"
            table.add_pod(shape, name)
            placed.append((shape.key, name))
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
