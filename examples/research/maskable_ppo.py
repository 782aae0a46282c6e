"""MaskablePPO (sb3-contrib) over pinnace.gym, evaluated beside the baselines.

    pip install 'pinnace[rl]'        # torch, stable-baselines3, sb3-contrib
    python examples/research/maskable_ppo.py --steps 20000

The policy network sees the environment's whole observation (the node feature matrix, which
rows are nodes, the pod's features) through sb3's MultiInputPolicy, and MaskablePPO samples
only among the feasible nodes: it asks the environment's `action_masks()`, the nodes the
scheduler's Filter plugins let through. The reward is qlearning.py's (`packing`, `pending`),
so the two examples compare. The trained model is saved (`--save`; PolicyPick loads it with
`policy: {model: PATH.zip, kind: maskable-ppo}`, docs/research.md), and its
greedy policy runs on the evaluation seeds beside the baselines.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from pinnace.gym.env import NodePlacementEnv, scenario_of
from pinnace.gym.evaluate import BASELINES, evaluate, render
from pinnace.gym.rewards import weights

try:
    from sb3_contrib import MaskablePPO
except ImportError:
    raise SystemExit(
        "maskable_ppo.py needs torch, stable-baselines3 and sb3-contrib: pip install 'pinnace[rl]'"
    ) from None

SCENARIO = Path(__file__).with_name("usage.yaml")
REWARD = {"packing": 1.0, "pending": 0.01}
FEATURES = "requests"


def policy_of(model: MaskablePPO) -> Any:
    """The trained model's greedy choice among the feasible nodes."""

    def act(observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        action, _ = model.predict(observation, action_masks=info["action_mask"], deterministic=True)
        return int(action)

    return act


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(SCENARIO))
    parser.add_argument("--steps", type=int, default=20_000, help="training steps (20000)")
    parser.add_argument("--evaluate", type=int, default=3, help="evaluation episodes (3)")
    parser.add_argument("--save", default="maskable_ppo_placement", help="where to save the model")
    args = parser.parse_args()
    env = NodePlacementEnv(args.scenario, reward=REWARD, features=FEATURES)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=256, batch_size=64, seed=0, verbose=0)
    began = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    print(f"trained {args.steps} steps in {time.perf_counter() - began:.0f} s")
    model.save(args.save)
    env.close()
    results = evaluate(
        scenario_of(args.scenario),
        [*BASELINES, ("maskable-ppo", policy_of(model))],
        episodes=args.evaluate,
        seed=1000,
        reward=REWARD,
        features=FEATURES,
    )
    print(render(results, weights(REWARD)))


if __name__ == "__main__":
    main()
