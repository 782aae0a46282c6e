"""examples/research/qlearning.py: its first episodes train and its greedy policy evaluates
beside the baselines."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
from tests.gym.scenarios import pod_template, scenario
from tests.support import run_example

from pinnace.gym.env import scenario_of
from pinnace.gym.evaluate import evaluate

EXAMPLE = Path(__file__).parents[2] / "examples" / "research" / "qlearning.py"


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qlearning_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_first_episodes_learn_and_the_policy_evaluates() -> None:
    qlearning = example()
    pool = {"name": "pool", "count": 3, "capacity": {"cpu": "2", "memory": "4Gi"}}
    workload = {
        "name": "web",
        "template": pod_template("500m", "512Mi"),
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "runTime": {"exponential": {"mean": "3m"}},
    }
    small = scenario_of(scenario([pool], [workload], until="5m"))
    table, returns = qlearning.train(small, episodes=3)
    assert len(returns) == 3
    assert np.count_nonzero(table.values) > 0  # the updates reached the table
    (result,) = evaluate(small, [("q", table.policy())], episodes=1, reward=qlearning.REWARD)
    assert result.policy == "q"
    assert result.decisions[0] > 0


def test_the_progress_line_counts_the_episodes_that_ran() -> None:
    progress = example().progress
    assert progress([-6.0] * 30) == "returns: first 5 episodes -6.00, last 5 -6.00"
    assert progress([-7.0, -6.0, -5.0]) == "returns: first 3 episodes -6.00, last 3 -6.00"
    assert progress([-4.0]) == "returns: first episode -4.00, last -4.00"


def test_a_run_of_no_episodes_is_refused() -> None:
    run = run_example(EXAMPLE, "--episodes", "0")
    assert run.returncode == 2
    assert "argument --episodes: must be at least 1, not 0" in run.stderr
