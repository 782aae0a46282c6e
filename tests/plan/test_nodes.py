"""`pinnace plan nodes`: the least count, against trying every count."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.plan.manifests import (
    cluster_file,
    container,
    deployment,
    job,
    pod,
    pool,
    priority_class,
    snapshot,
)

from pinnace.cli.main import main
from pinnace.plan import PlanError, Snapshot, fit
from pinnace.plan.cluster import new_node
from pinnace.plan.nodes import nodes_needed


def test_a_full_cluster_needs_four_nodes_for_eight_pods_of_1500m(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3), objects=[deployment("old", 6, "1500m")])
    plan = nodes_needed(cluster, [deployment("web", 8, "1500m")], "general").document
    # 12 CPUs asked, 3 free (1 on each node, of no use to a 1.5 CPU pod): at least 9 / 4 -> 3
    assert plan["lowerBound"] == 3
    # shape by shape: none fits on the nodes there are, a new node holds two: 8 / 2 -> 4
    assert plan["shapeBound"] == 4
    assert plan["nodesToAdd"] == 4
    assert [(t["nodes"], t["fits"]) for t in plan["tried"]] == [(4, True)]
    new = [n for n in plan["nodes"] if n["name"].startswith("general-plan-")]
    assert [n["requested"]["cpu"] for n in new] == ["3", "3", "3", "3"]


def test_pods_left_pending_and_new_pods_as_large_bound_the_count_together(
    tmp_path: Path,
) -> None:
    # Two nodes of 4 CPUs hold four of the six old 1.5 CPU pods; two stay pending. Four new
    # ones of another workload, and two of 1.6 CPUs: eight pods of at least 1.5 CPUs, two a
    # new node: no fewer than 4 nodes, whichever workload each pod is of.
    cluster = snapshot(tmp_path, pool("general", 2), objects=[deployment("old", 6, "1500m")])
    assert len(cluster.pending_pods()) == 2
    workloads = [deployment("web", 4, "1500m"), deployment("big", 2, "1600m")]
    plan = nodes_needed(cluster, workloads, "general").document
    assert plan["shapeBound"] == 4
    assert plan["nodesToAdd"] == 4
    assert [(t["nodes"], t["fits"]) for t in plan["tried"]] == [(4, True)]


@pytest.mark.parametrize(
    "workloads",
    [
        [deployment("web", 11, "1500m")],
        [deployment("web", 4, "1500m"), deployment("big", 2, "1600m")],
        [deployment("web", 5, "2500m"), job("batch", 6, "700m"), pod("one", "3")],
        [
            deployment(
                "spread",
                7,
                "100m",
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "spread"}},
                                "topologyKey": "kubernetes.io/hostname",
                            }
                        ]
                    }
                },
            )
        ],
    ],
)
def test_the_count_is_the_smallest_that_fits_trying_every_count(
    tmp_path: Path, workloads: list[Any]
) -> None:
    cluster = snapshot(tmp_path, pool("general", 2), objects=[deployment("old", 2, "2")])
    found = nodes_needed(cluster, workloads, "general").document["nodesToAdd"]
    every = next(k for k in range(20) if fit(_with_nodes(cluster, k), workloads).document["fits"])
    assert found == every


def test_room_that_preempting_bare_pods_frees_counts_against_the_bounds(tmp_path: Path) -> None:
    # Two nodes full of bare pods of priority 0: the new workload's pods (priority 1000)
    # preempt them, and nothing brings them back, so its eight 1 CPU pods need no node added
    # (four to a node once its bare pod has gone).
    running = [pod(f"bare-{i}", "4") for i in range(2)]
    cluster = snapshot(
        tmp_path, pool("general", 2), objects=[priority_class("high", 1000), *running]
    )
    workloads = [deployment("web", 8, "1", priorityClassName="high")]
    plan = nodes_needed(cluster, workloads, "general").document
    every = next(k for k in range(20) if fit(_with_nodes(cluster, k), workloads).document["fits"])
    assert every == 0
    assert plan["nodesToAdd"] == 0
    assert plan["lowerBound"] == plan["shapeBound"] == 0


def _with_nodes(cluster: Snapshot, k: int) -> Snapshot:
    """The cluster with `k` more nodes of its pool, named as `plan nodes` names them."""
    added = [new_node(cluster.template("general"), f"general-plan-{i}") for i in range(1, k + 1)]
    return replace(cluster, nodes=[*cluster.nodes, *added])


@pytest.mark.parametrize(("spare", "nodes"), [(0, 3), (1, 4), (2, 5)])
def test_spare_nodes(tmp_path: Path, spare: int, nodes: int) -> None:
    # Six pods of 1.5 CPUs: three nodes of 4 hold them. With one to spare, four (2, 2, 1, 1:
    # the pods of a lost node find a free slot each on the others); with two, five.
    empty = snapshot(tmp_path, pool("general", 0))
    plan = nodes_needed(empty, [deployment("web", 6, "1500m")], "general", spare=spare).document
    assert plan["nodesToAdd"] == 3
    assert plan["nodesToAddWithSpare"] == nodes


def test_a_pod_larger_than_any_node_of_the_pool(tmp_path: Path) -> None:
    plan = nodes_needed(snapshot(tmp_path, pool("general", 1)), [pod("huge", "6")], "general")
    assert plan.document["nodesToAdd"] is None
    assert plan.document["tried"] == []
    (failure,) = plan.document["unschedulable"]
    assert failure["message"] == (
        "asks for 6 cpu; a node of pool general has 4 once its daemon pods are placed"
    )


def test_an_unknown_pool(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match='no node pool "gpu"'):
        nodes_needed(snapshot(tmp_path, pool("general", 1)), [pod("one", "1")], "gpu")


def test_the_nodes_after_a_spare_search_are_the_answers_each_with_its_daemon_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # planning.md's example: the spare search overshoots (17 survives losing any node) and
    # halves back to 14. Losing a node added for a count must not leave it in the cluster
    # for the counts tried after (nor in the plan's nodes), without its daemon pods.
    agent = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [container("100m", "128Mi")]},
            },
        },
    }
    cluster = cluster_file(
        tmp_path,
        pool("general", 3),
        pool("large", 1, cpu="16", memory="64Gi"),
        objects=[deployment("api", 4, "1"), agent],
    )
    web = tmp_path / "web.json"
    web.write_text(json.dumps(deployment("web", 30, "1500m")))
    args = ["plan", "nodes", str(web), "--pool", "general", "--spare", "1"]
    assert main([*args, "--cluster", str(cluster), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [t["nodes"] for t in plan["tried"]] == [9, 10, 11, 13, 17, 15, 14]
    added = [n for n in plan["nodes"] if n["name"].startswith("general-plan-")]
    assert len(added) == plan["nodesToAddWithSpare"] == 14
    # each new node holds its agent pod (100m) and one or two web pods (1.5 CPUs each)
    assert {n["requested"]["cpu"] for n in added} <= {"1600m", "3100m"}
