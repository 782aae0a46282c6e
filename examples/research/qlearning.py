"""Tabular Q-learning over pinnace.gym: an MDP small enough for a table, NumPy only.

    python examples/research/qlearning.py --episodes 30      # about two minutes on 2 cores

The agent places each pod of examples/research/usage.yaml among the nodes the scheduler's
filters let through (the action mask), to use as few nodes as it can (`packing`) without
leaving pods waiting (`pending`). The environment's observation is a matrix of node features;
the table needs few states, so they are discretised (`pinnace.gym.qtable`): the state is how
full the cluster is and how big the pod is, an action a node's bucket (empty, or how much of
its cpu is requested). The agent picks, among the feasible nodes, one of the bucket with the
highest Q-value (ties at random), so the table is states x buckets.

Q-learning's update after each step, with the reward accrued until the next decision:

    Q(s, b) += alpha * (r + gamma * max over the next feasible buckets b' of Q(s', b') - Q(s, b))

with epsilon-greedy exploration decaying over the episodes. After training, the greedy
policy runs on the evaluation seeds beside the baselines (`pinnace gym evaluate`'s), and the
table is saved (`--save`, a `.npy` file) for the scheduler to load:
`policy: {model: PATH, kind: q-table}` in PolicyPick's arguments (docs/research.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from pinnace.gym.env import NodePlacementEnv, scenario_of
from pinnace.gym.evaluate import BASELINES, evaluate, render
from pinnace.gym.qtable import FEATURES, QTable, node_buckets, state_of
from pinnace.gym.rewards import weights

SCENARIO = Path(__file__).with_name("usage.yaml")
REWARD = {"packing": 1.0, "pending": 0.01}


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
    env = NodePlacementEnv(scenario, reward=REWARD, features=FEATURES)
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


def progress(returns: list[float], count: int = 5) -> str:
    """The mean return of the first and of the last `count` episodes (fewer if fewer ran)."""
    count = min(count, len(returns))
    first, last = np.mean(returns[:count]), np.mean(returns[-count:])
    if count == 1:
        return f"returns: first episode {first:.2f}, last {last:.2f}"
    return f"returns: first {count} episodes {first:.2f}, last {count} {last:.2f}"


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(SCENARIO))
    parser.add_argument("--episodes", type=positive, default=30, help="training episodes (30)")
    parser.add_argument("--evaluate", type=positive, default=3, help="evaluation episodes (3)")
    parser.add_argument("--save", default="qlearning_placement.npy", help="where to save the table")
    args = parser.parse_args()
    table, returns = train(args.scenario, args.episodes)
    table.save(args.save)
    print(progress(returns))
    print(f"saved the table to {args.save}")
    # Evaluated on seeds it never trained on.
    results = evaluate(
        scenario_of(args.scenario),
        [*BASELINES, ("q-learning", table.policy())],
        episodes=args.evaluate,
        seed=1000,
        reward=REWARD,
        features=FEATURES,
    )
    print(render(results, weights(REWARD)))


if __name__ == "__main__":
    main()
