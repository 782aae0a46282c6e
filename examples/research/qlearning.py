"""Tabular Q-learning over pinnace.gym: an MDP small enough for a table, NumPy only.

    python examples/research/qlearning.py --episodes 30      # about two minutes on 2 cores

The agent places each pod of examples/research/usage.yaml among the nodes the scheduler's
filters let through (the action mask), to use as few nodes as it can (`packing`) without
leaving pods waiting (`pending`). The environment's observation is a matrix of node features;
the table needs few states, so they are discretised:

- the state: how full the cluster is (the mean share of allocatable cpu requested, in
  `LOAD_BUCKETS`) and how big the pod is (its cpu request over the largest node's, in
  `POD_BUCKETS`);
- an action is a node, described by its bucket: 0 for an empty node, then the share of its
  cpu requested in `NODE_BUCKETS - 1` steps. The agent picks, among the feasible nodes, one of
  the bucket with the highest Q-value (ties at random), so the table is states x buckets.

Q-learning's update after each step, with the reward accrued until the next decision:

    Q(s, b) += alpha * (r + gamma * max over the next feasible buckets b' of Q(s', b') - Q(s, b))

with epsilon-greedy exploration decaying over the episodes. After training, the greedy
policy runs on the evaluation seeds beside the baselines (`pinnace gym evaluate`'s).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pinnace.gym.env import NodePlacementEnv, scenario_of
from pinnace.gym.evaluate import BASELINES, evaluate, render
from pinnace.gym.rewards import weights

SCENARIO = Path(__file__).with_name("usage.yaml")
REWARD = {"packing": 1.0, "pending": 0.01}
LOAD_BUCKETS, POD_BUCKETS, NODE_BUCKETS = 4, 3, 5
# The columns of the observation with features="requests" (pinnace.gym.observation).
ALLOCATABLE_CPU, REQUESTED_CPU, PODS = 0, 2, 5
POD_CPU = 0

Observation = dict[str, np.ndarray]


def node_buckets(observation: Observation) -> np.ndarray:
    """Each row's bucket: 0 empty, else its requested cpu share in NODE_BUCKETS - 1 steps."""
    nodes = observation["nodes"]
    share = nodes[:, REQUESTED_CPU] / np.maximum(nodes[:, ALLOCATABLE_CPU], 1e-9)
    steps = 1 + np.minimum((share * (NODE_BUCKETS - 1)).astype(int), NODE_BUCKETS - 2)
    return np.where(nodes[:, PODS] > 0, steps, 0)


def state_of(observation: Observation) -> int:
    nodes, present = observation["nodes"], observation["present"].astype(bool)
    allocatable = nodes[present, ALLOCATABLE_CPU]
    if not len(allocatable):
        return 0
    load = nodes[present, REQUESTED_CPU].sum() / max(allocatable.sum(), 1e-9)
    size = observation["pod"][POD_CPU] / max(allocatable.max(), 1e-9)
    load_bucket = min(int(load * LOAD_BUCKETS), LOAD_BUCKETS - 1)
    pod_bucket = min(int(size * POD_BUCKETS * 2), POD_BUCKETS - 1)
    return load_bucket * POD_BUCKETS + pod_bucket


@dataclass
class QTable:
    values: np.ndarray = field(
        default_factory=lambda: np.zeros((LOAD_BUCKETS * POD_BUCKETS, NODE_BUCKETS))
    )

    def best(self, observation: Observation, mask: np.ndarray, rng: np.random.Generator) -> int:
        """A feasible row of the bucket with the highest value (ties at random)."""
        feasible = np.flatnonzero(mask)
        buckets = node_buckets(observation)[feasible]
        q = self.values[state_of(observation), buckets]
        return int(rng.choice(feasible[q == q.max()]))

    def next_value(self, observation: Observation, mask: np.ndarray) -> float:
        feasible = np.flatnonzero(mask)
        if not len(feasible):
            return 0.0
        buckets = node_buckets(observation)[feasible]
        return float(self.values[state_of(observation), buckets].max())

    def policy(self, seed: int = 0) -> Callable[[Observation, dict[str, Any]], int]:
        """The greedy policy, as `pinnace gym evaluate` calls one."""
        rng = np.random.default_rng(seed)
        return lambda observation, info: self.best(observation, info["action_mask"], rng)


def train(
    scenario: Any = SCENARIO,
    episodes: int = 30,
    *,
    seed: int = 0,
    alpha: float = 0.2,
    gamma: float = 0.9,
    epsilon: float = 0.3,
) -> tuple[QTable, list[float]]:
    """Q-learning for `episodes` episodes (seeds seed, seed + 1, ...): the table and each
    episode's return."""
    env = NodePlacementEnv(scenario, reward=REWARD, features="requests")
    table = QTable()
    rng = np.random.default_rng(seed)
    returns = []
    try:
        for episode in range(episodes):
            explore = epsilon * (1 - episode / max(episodes, 1))
            observation, info = env.reset(seed=seed + episode)
            total, over = 0.0, False
            while not over:
                mask = info["action_mask"]
                if rng.random() < explore:
                    action = int(rng.choice(np.flatnonzero(mask)))
                else:
                    action = table.best(observation, mask, rng)
                state, bucket = state_of(observation), node_buckets(observation)[action]
                observation, reward, _, over, info = env.step(action)
                target = reward + (
                    0.0 if over else gamma * table.next_value(observation, info["action_mask"])
                )
                table.values[state, bucket] += alpha * (target - table.values[state, bucket])
                total += reward
            returns.append(total)
    finally:
        env.close()
    return table, returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(SCENARIO))
    parser.add_argument("--episodes", type=int, default=30, help="training episodes (30)")
    parser.add_argument("--evaluate", type=int, default=3, help="evaluation episodes (3)")
    args = parser.parse_args()
    table, returns = train(args.scenario, args.episodes)
    first, last = np.mean(returns[:5]), np.mean(returns[-5:])
    print(f"returns: first 5 episodes {first:.2f}, last 5 {last:.2f}")
    # Evaluated on seeds it never trained on.
    results = evaluate(
        scenario_of(args.scenario),
        [*BASELINES, ("q-learning", table.policy())],
        episodes=args.evaluate,
        seed=1000,
        reward=REWARD,
        features="requests",
    )
    print(render(results, weights(REWARD)))


if __name__ == "__main__":
    main()
