"""`pinnace bench scheduler` as a user runs it: tiny sizes, the figures it names (never
timings)."""

import json

import pytest

from pinnace.bench.scheduler import WORKLOADS
from pinnace.cli.main import main


def test_json_is_one_object_per_workload(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "scheduler", "--workload", "SchedulingBasic", "--nodes", "20", "--pods", "50"]
    assert main([*args, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    assert set(result) == {"workload", "nodes", "pods", "pods_per_second", "p50_ms", "p99_ms"}
    assert (result["workload"], result["nodes"], result["pods"]) == ("SchedulingBasic", 20, 50)
    assert result["pods_per_second"] > 0 and 0 < result["p50_ms"] <= result["p99_ms"]


def test_the_table_names_each_figure(capsys: pytest.CaptureFixture[str]) -> None:
    # as many nodes as pods: required anti-affinity per hostname puts one pod on a node
    assert main(["bench", "scheduler", "--nodes", "10", "--pods", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == list(WORKLOADS)
    assert [line.split("  ")[0] for line in lines[3:]] == [
        "nodes",
        "pods",
        "pods/s",
        "per-pod latency p50 (ms)",
        "per-pod latency p99 (ms)",
    ]


def test_more_pods_than_the_nodes_hold_is_a_clear_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a node of 4 CPU holds 40 pods of 100m
    assert main(["bench", "scheduler", "--nodes", "1", "--pods", "41"]) == 1
    assert capsys.readouterr().err == (
        "pinnace bench scheduler: SchedulingBasic: 40 of 41 pods were scheduled on 1 nodes\n"
    )


@pytest.mark.parametrize(
    ("workload", "nodes", "pods"),
    [
        # init pods of every affinity kind first, one required anti-affinity pod per hostname
        ("MixedSchedulingBasePod", 10, 20),
        # 250 cycles create two pods asking 9 CPU of 4-CPU nodes: they never bind, and the
        # measured pods all do
        ("Unschedulable", 10, 250),
    ],
)
def test_workloads_with_init_pods_bind_every_measured_pod(
    capsys: pytest.CaptureFixture[str], workload: str, nodes: int, pods: int
) -> None:
    args = [
        "bench",
        "scheduler",
        "--workload",
        workload,
        "--nodes",
        str(nodes),
        "--pods",
        str(pods),
    ]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["workload"], result["nodes"], result["pods"]) == (workload, nodes, pods)


def test_through_the_api_the_same_workload_gives_the_same_figures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["bench", "scheduler", "--workload", "SchedulingBasic", "--nodes", "20", "--pods", "50"]
    assert main([*args, "--through-api", "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    assert set(result) == {
        "workload",
        "nodes",
        "pods",
        "pods_per_second",
        "p50_ms",
        "p99_ms",
        "cpu_ms_per_pod",
    }
    assert (result["workload"], result["nodes"], result["pods"]) == ("SchedulingBasic", 20, 50)
    assert result["pods_per_second"] > 0 and 0 < result["p50_ms"] <= result["p99_ms"]
    assert result["cpu_ms_per_pod"] > 0


def test_through_the_api_preemptors_evict_their_victims_and_land(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 4 low-priority init pods a node; at 114 pods, a 3-CPU pod at priority 10 (a
    # PriorityClass through the API) preempts 3 of some node's, which go at once
    args = ["bench", "scheduler", "--workload", "PreemptionAsync", "--nodes", "40", "--pods", "120"]
    assert main([*args, "--through-api", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"] == 120


def test_through_the_api_more_pods_than_the_nodes_hold_is_a_clear_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["bench", "scheduler", "--workload", "SchedulingBasic", "--nodes", "1", "--pods", "41"]
    assert main([*args, "--through-api"]) == 1
    assert capsys.readouterr().err == (
        "pinnace bench scheduler: SchedulingBasic: 40 of 41 pods were scheduled on 1 nodes\n"
    )


@pytest.mark.parametrize("through_api", [False, True])
def test_csi_volumes_fill_a_node_to_its_csinode_limit(
    capsys: pytest.CaptureFixture[str], through_api: bool
) -> None:
    # SchedulingCSIPVs: each pod has a CSI volume of its own and a node attaches 39 of them;
    # with its init pod, one node takes 38 measured pods and not a 39th
    args = ["bench", "scheduler", "--workload", "SchedulingCSIPVs", "--nodes", "1"]
    args += ["--through-api"] if through_api else []
    assert main([*args, "--pods", "38", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"] == 38
    assert main([*args, "--pods", "39"]) == 1
    assert capsys.readouterr().err == (
        "pinnace bench scheduler: SchedulingCSIPVs: 38 of 39 pods were scheduled on 1 nodes\n"
    )
