"""`pinnace plan headroom`: counts worked out by hand, and the computed count against copies
placed one by one."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from tests.plan.manifests import cluster_file, container, deployment, pod, pool, snapshot

from pinnace.cli.main import main
from pinnace.plan import PlanError
from pinnace.plan.cluster import Snapshot
from pinnace.plan.headroom import ARITHMETIC, ONE_BY_ONE, count_copies, headroom, parse_shape
from pinnace.plan.load import from_file
from pinnace.plan.placement import Placer


def test_three_nodes_of_4_cpus_hold_six_copies_of_1500m(tmp_path: Path) -> None:
    plan = headroom(snapshot(tmp_path, pool("general", 3)), [{"cpu": "1500m"}]).document
    (shape,) = plan["shapes"]
    assert shape["copies"] == 6
    assert shape["byPool"] == {"general": 6}
    assert shape["method"] == ARITHMETIC
    assert shape["stoppedBy"] == "0/3 nodes are available: 3 Insufficient cpu."


def test_each_shape_on_its_own_and_per_pool(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("small", 2), pool("large", 1, cpu="8", memory="8Gi"))
    shapes = [{"cpu": "3"}, {"cpu": "1", "memory": "3Gi"}]
    plan = headroom(cluster, shapes).document
    by_shape = {s["shape"]: (s["copies"], s["byPool"]) for s in plan["shapes"]}
    assert by_shape == {
        "cpu=3": (4, {"large": 2, "small": 2}),
        # small: 16Gi / 3Gi = 5 each, but 4 CPUs: 4; large: 8Gi / 3Gi = 2
        "cpu=1,memory=3Gi": (10, {"large": 2, "small": 8}),
    }
    stopped = {s["shape"]: s["stoppedBy"] for s in plan["shapes"]}
    assert stopped["cpu=1,memory=3Gi"] == (
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."
    )


def test_the_workloads_own_shapes_by_default(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3), objects=[deployment("web", 3, "1")])
    plan = headroom(cluster).document
    (shape,) = plan["shapes"]
    assert shape["shape"] == "Deployment default/web"
    assert shape["copies"] == 9  # 3 free CPUs on each of 3 nodes


def test_a_shape_with_anti_affinity_is_placed_one_by_one(tmp_path: Path) -> None:
    spread = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "one"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    workload = deployment("one", 1, "100m", affinity=spread)
    cluster = snapshot(tmp_path, pool("general", 3), objects=[workload])
    (shape,) = headroom(cluster).document["shapes"]
    assert (shape["copies"], shape["method"]) == (2, ONE_BY_ONE)
    assert "didn't match pod anti-affinity rules" in shape["stoppedBy"]


def test_a_malformed_shape_is_refused() -> None:
    with pytest.raises(PlanError, match="resource=quantity"):
        parse_shape("cpu")
    with pytest.raises(PlanError, match="quantities must match"):
        parse_shape("cpu=lots")


@pytest.mark.parametrize("seed", range(6))
def test_the_computed_count_is_what_placing_copies_one_by_one_finds(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    cluster = _random_cluster(tmp_path, rng)
    placer = Placer(cluster, seed=seed, preemption=False)
    placer.run()
    for _ in range(3):
        shape = _random_shape(rng)
        computed = count_copies(placer, shape, limit=1000)
        placed = count_copies(placer, shape, limit=1000, one_by_one=True)
        assert computed.method == ARITHMETIC
        assert computed.per_node.tolist() == placed.per_node.tolist()
        assert computed.message == placed.message


def _random_cluster(tmp_path: Path, rng: random.Random) -> Snapshot:
    taint = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
    pools = [
        pool(
            f"p{i}",
            rng.randint(1, 3),
            cpu=str(rng.randint(2, 8)),
            memory=f"{rng.randint(2, 16)}Gi",
            labels={"tier": rng.choice(["a", "b"])},
            taints=[taint] if rng.random() < 0.3 else None,
        )
        for i in range(3)
    ]
    objects = [
        deployment(f"w{i}", rng.randint(1, 6), f"{rng.randint(1, 15) * 100}m") for i in range(3)
    ]
    return from_file(cluster_file(tmp_path, *pools, objects=objects))


def _random_shape(rng: random.Random) -> dict[str, Any]:
    shape = pod("shape", f"{rng.randint(1, 30) * 100}m")
    shape["spec"]["containers"] = [
        container(f"{rng.randint(1, 30) * 100}m", f"{rng.randint(1, 40) * 100}Mi")
    ]
    if rng.random() < 0.5:
        shape["spec"]["nodeSelector"] = {"tier": "a"}
    if rng.random() < 0.5:
        shape["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return shape


def test_with_no_workload_and_no_shape_the_headline_says_to_give_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = str(cluster_file(tmp_path, pool("general", 2)))
    assert main(["plan", "headroom", "--cluster", cluster]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == (
        "No shape to count: the cluster runs no workload but DaemonSets; give --shape."
    )
