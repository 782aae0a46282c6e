"""`pinnace gym evaluate` and `pinnace bench gym` on small scenarios."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from tests.gym.scenarios import pod_template, scenario

from pinnace.cli.main import main
from pinnace.gym.env import scenario_of
from pinnace.gym.evaluate import evaluate

POLICY = """
import numpy as np

def last_feasible(observation, info):
    return int(np.flatnonzero(info["action_mask"])[-1])
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    pool = {"name": "pool", "count": 3, "capacity": {"cpu": "2", "memory": "4Gi"}}
    workload = {
        "name": "web",
        "template": pod_template("500m", "512Mi"),
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "runTime": {"exponential": {"mean": "3m"}},
    }
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(scenario([pool], [workload], until="3m")))
    return path


def test_evaluate_reports_every_component_per_policy_side_by_side(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mypolicies.py").write_text(POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["gym", "evaluate", str(small), "--episodes", "2", "--seed", "3"]
    argv += ["--reward", "decima=0.001,packing", "--json"]
    for policy in ("random", "default", "most-allocated", "target-load-packing"):
        argv += ["--policy", policy]
    argv += ["--policy", "mypolicies:last_feasible"]
    assert main(argv) == 0
    results = json.loads(capsys.readouterr().out)
    assert list(results) == [
        "random",
        "default",
        "most-allocated",
        "target-load-packing",
        "mypolicies:last_feasible",
    ]
    for figures in results.values():
        assert set(figures["components"]) == {
            "balance",
            "fragmentation",
            "packing",
            "pending",
            "decima",
            "evictions",
        }
        assert figures["podsPlaced"]["mean"] > 0
        decima, packing = figures["components"]["decima"], figures["components"]["packing"]
        assert figures["total"]["mean"] == pytest.approx(0.001 * decima["mean"] + packing["mean"])
    # The same episodes: every policy placed the pods the scenario made.
    placed = {f["podsPlaced"]["mean"] for f in results.values()}
    assert len(placed) == 1

    assert main(["gym", "evaluate", str(small), "--policy", "random"]) == 0
    table = capsys.readouterr().out
    assert "Scenario gym-test: 1 episode, seed 0" in table
    assert "total (1×decima)" in table


def test_evaluate_on_the_scheduler_engine_gives_the_cluster_engines_figures(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every baseline, TargetLoadPacking reading the nodes' usage too, with the same figures
    as on the cluster engine."""
    argv = ["gym", "evaluate", str(small), "--episodes", "2", "--json"]
    assert main([*argv, "--engine", "scheduler"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert list(quick) == ["random", "default", "most-allocated", "target-load-packing"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == quick


def test_evaluate_refuses_an_unknown_policy(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gym", "evaluate", str(small), "--policy", "best"]) == 1
    assert "unknown policy 'best'" in capsys.readouterr().err


def test_evaluate_refuses_a_scenario_without_a_pod_to_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = {"name": "pool", "count": 2, "capacity": {"cpu": "2", "memory": "4Gi"}}
    path = tmp_path / "empty.yaml"
    path.write_text(yaml.safe_dump(scenario([pool], [], until="3m")))
    assert main(["gym", "evaluate", str(path), "--policy", "random"]) == 1
    assert capsys.readouterr().err == (
        "pinnace gym evaluate: scenario gym-test: no pod to place before spec.until (3m00s) "
        "with seed 0: an episode needs at least one\n"
    )


def test_bench_gym_measures_steps_per_second(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "gym", "--nodes", "3", "--steps", "20", "--features", "requests", "--json"]
    assert main(argv) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["nodes"] == 3
    assert result["steps"] == 20
    assert result["steps_per_second"] > 0
    assert main([*argv, "--engine", "scheduler"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["steps"]) == ("scheduler", 20)


def test_the_default_baseline_schedules_with_the_scenarios_configuration() -> None:
    """A scenario whose profile scores MostAllocated: kube-scheduler's baseline packs its pods
    as the scenario's scheduler would (two nodes of four in use), not as the default profile
    spreads them."""
    pool = {"name": "pool", "count": 4, "capacity": {"cpu": "4", "memory": "8Gi"}}
    workload = {
        "name": "web",
        "template": pod_template("500m", "512Mi"),
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "runTime": {"exponential": {"mean": "30m"}},
    }
    raw = scenario([pool], [workload], until="3m")
    strategy = {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }
    packing = {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}
    raw["spec"]["cluster"]["schedulerConfig"] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [packing]}],
    }
    spreading = scenario([pool], [workload], until="3m")
    (packed,) = evaluate(scenario_of(raw), ["default"], reward="packing")
    (spread,) = evaluate(scenario_of(spreading), ["default"], reward="packing")
    assert packed.decisions == spread.decisions == [16]
    assert packed.components["packing"] == [-2.0]  # 16 pods of 500m: two nodes of 4 cpu
    assert spread.components["packing"] == [-4.0]


def test_evaluate_counts_a_policys_actions_outside_the_mask(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy naming a row past the nodes places nothing: the table says why."""
    (tmp_path / "wrongpolicies.py").write_text(
        "def past_the_end(observation, info):\n    return 99\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["gym", "evaluate", str(small), "--policy", "default"]
    assert main([*argv, "--policy", "wrongpolicies:past_the_end"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["pods"][0] == "placed" and int(rows["pods"][1]) > 0 and rows["pods"][2] == "0"
    assert rows["invalid"][0] == "actions" and rows["invalid"][1] == "0"
    assert int(rows["invalid"][2]) > 0
    assert main([*argv, "--json", "--policy", "wrongpolicies:past_the_end"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["default"]["invalidActions"]["mean"] == 0
    assert results["wrongpolicies:past_the_end"]["invalidActions"]["mean"] > 0


def test_evaluate_shows_no_invalid_actions_row_when_every_action_is_feasible(
    small: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gym", "evaluate", str(small), "--policy", "random"]) == 0
    assert "invalid actions" not in capsys.readouterr().out


def test_the_command_line_offers_the_environments_engines() -> None:
    """The commands name the engines without importing the optional extra: the same ones."""
    from pinnace.cli.gym import ENGINES
    from pinnace.gym.episode import ENGINES as EPISODE_ENGINES

    assert ENGINES == EPISODE_ENGINES
