"""Policies side by side on the same episodes: `pinnace gym evaluate`.

Each policy runs `episodes` episodes of the scenario, seeds `seed`, `seed + 1`, ...; every
reward component is summed per episode (`pinnace.gym.rewards`) and reported as its mean (and
standard deviation) over the episodes, with the weighted total of the chosen reward.

The baselines:

- `random`: uniformly among the feasible nodes (seeded by the episode's seed);
- `default`: kube-scheduler's own choice with the scenario's scheduler configuration
  (kube-scheduler's default profile when it has none);
- `most-allocated`: bin packing, NodeResourcesFit's `MostAllocated` scoring strategy over cpu
  and memory (kube-scheduler's documented bin-packing configuration);
- `target-load-packing`: scheduler-plugins' Trimaran TargetLoadPacking (its defaults: 40 %
  of CPU) in place of the resource Score plugins, on the nodes' measured usage.

The last two replace the scenario's configuration (kube-scheduler's default Filter plugins).
A policy of your own is `module:function`, called at each step as `function(observation,
info) -> node row` (`info["action_mask"]` marks the feasible rows), through the environment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from pinnace.gym import rewards
from pinnace.gym.env import NodePlacementEnv
from pinnace.gym.episode import CLUSTER, Episode
from pinnace.scheduler.config import SchedulerConfiguration, from_mapping
from pinnace.scheduler.plugins.policy import load_policy
from pinnace.sim.scenario import Scenario

RANDOM, DEFAULT, MOST_ALLOCATED, TARGET_LOAD_PACKING = (
    "random",
    "default",
    "most-allocated",
    "target-load-packing",
)
BASELINES = (RANDOM, DEFAULT, MOST_ALLOCATED, TARGET_LOAD_PACKING)
AgentPolicy = Callable[[dict[str, np.ndarray], dict[str, Any]], Any]


def _configuration(plugins: Mapping[str, Any], plugin_config: list[Any]) -> SchedulerConfiguration:
    return from_mapping(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": dict(plugins), "pluginConfig": plugin_config}],
        }
    )


def most_allocated() -> SchedulerConfiguration:
    strategy = {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }
    return _configuration({}, [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}])


def target_load_packing() -> SchedulerConfiguration:
    score = {
        "disabled": [{"name": "NodeResourcesBalancedAllocation"}, {"name": "NodeResourcesFit"}],
        "enabled": [{"name": "TargetLoadPacking"}],
    }
    return _configuration({"score": score}, [])


@dataclass(frozen=True)
class Result:
    """A policy's episodes: each component's sum per episode, the weighted totals, the pods
    each episode placed and the actions outside the mask each episode took."""

    policy: str
    components: dict[str, list[float]]
    totals: list[float]
    decisions: list[int]
    invalid: list[int]


def evaluate(
    scenario: Scenario,
    policies: Sequence[str | tuple[str, AgentPolicy]],
    *,
    episodes: int = 1,
    seed: int = 0,
    reward: str | Iterable[str] | Mapping[str, float] | None = None,
    features: str = "both",
    engine: str = CLUSTER,
) -> list[Result]:
    """Run each policy (a baseline's name, `module:function`, or a name and a function of
    the observation and info) on the same episodes, on `engine` (`pinnace.gym.episode`)."""
    weights = rewards.weights(reward)
    results = []
    for policy in policies:
        label = policy if isinstance(policy, str) else policy[0]
        sums: dict[str, list[float]] = {name: [] for name in rewards.COMPONENTS}
        totals: list[float] = []
        decisions: list[int] = []
        invalid: list[int] = []
        for episode_seed in range(seed, seed + episodes):
            components, placed, refused = _run(
                scenario, policy, episode_seed, weights, features, engine
            )
            for name in rewards.COMPONENTS:
                sums[name].append(components.get(name, 0.0))
            totals.append(rewards.total(components, weights))
            decisions.append(placed)
            invalid.append(refused)
        results.append(Result(label, sums, totals, decisions, invalid))
    return results


def _run(
    scenario: Scenario,
    policy: str | tuple[str, AgentPolicy],
    seed: int,
    weights: Mapping[str, float],
    features: str,
    engine: str,
) -> tuple[dict[str, float], int, int]:
    """The episode's component sums, the pods it placed and its actions outside the mask."""
    configuration = {
        DEFAULT: scenario.cluster.scheduler_config,
        MOST_ALLOCATED: most_allocated,
        TARGET_LOAD_PACKING: target_load_packing,
    }
    if isinstance(policy, str) and policy in configuration:
        config = configuration[policy]
        if callable(config):
            config = config()
        episode = Episode(
            scenario,
            seed,
            agent=False,
            observer=None,
            max_nodes=max(1, len(scenario.cluster.nodes)),
            scheduler_config=config,
            engine=engine,
        )
        try:
            episode.advance()
            return dict(episode.totals), episode.decisions, 0
        finally:
            episode.close()
    if isinstance(policy, tuple):
        act = policy[1]
    else:
        act = _random(seed) if policy == RANDOM else _agent(policy)
    env = NodePlacementEnv(
        scenario, reward=dict(weights), features=features, all_components=True, engine=engine
    )
    try:
        observation, info = env.reset(seed=seed)
        over, invalid = False, 0
        while not over:
            observation, _, _, over, info = env.step(act(observation, info))
            invalid += info["invalid_action"]
        assert env.episode is not None
        return dict(env.episode.totals), env.episode.decisions, invalid
    finally:
        env.close()


def _random(seed: int) -> AgentPolicy:
    rng = np.random.default_rng(seed)

    def act(observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    return act


def _agent(path: str) -> AgentPolicy:
    if ":" not in path:
        raise ValueError(
            f"unknown policy {path!r}: one of {', '.join(BASELINES)}, or module:function"
        )
    policy = cast(AgentPolicy, load_policy(path))

    def act(observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        return int(policy(observation, info))

    return act


def as_json(results: Sequence[Result]) -> str:
    return json.dumps(
        {
            r.policy: {
                "components": {name: _stats(values) for name, values in r.components.items()},
                "total": _stats(r.totals),
                "podsPlaced": _stats([float(d) for d in r.decisions]),
                "invalidActions": _stats([float(n) for n in r.invalid]),
            }
            for r in results
        }
    )


def render(results: Sequence[Result], weights: Mapping[str, float]) -> str:
    """A table: one row per component, the total, the pods placed and, when a policy chose
    nodes outside the mask, those invalid actions; one column per policy; mean ± standard
    deviation over the episodes."""
    chosen = " + ".join(f"{w:g}×{name}" for name, w in weights.items())
    header = ["", *(r.policy for r in results)]
    rows = [[name, *(_cell(r.components[name]) for r in results)] for name in rewards.COMPONENTS]
    rows.append([f"total ({chosen})", *(_cell(r.totals) for r in results)])
    rows.append(["pods placed", *(_cell([float(d) for d in r.decisions]) for r in results)])
    if any(any(r.invalid) for r in results):
        rows.append(["invalid actions", *(_cell([float(n) for n in r.invalid]) for r in results)])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _stats(values: Sequence[float]) -> dict[str, float]:
    mean = float(np.mean(values)) if values else math.nan
    return {"mean": mean, "std": float(np.std(values)) if values else math.nan}


def _cell(values: Sequence[float]) -> str:
    stats = _stats(values)
    text = f"{stats['mean']:.4g}"
    return text if len(values) < 2 else f"{text} ± {stats['std']:.2g}"
