"""`pinnace gym evaluate SCENARIO`: scheduling policies side by side on the same episodes of
the research environment (`pinnace.gym`, docs/research.md): the baselines and policies of
your own, each reward component's sum per episode, mean and spread over the episodes."""

from __future__ import annotations

import argparse
import sys

from pinnace.cli.arguments import whole
from pinnace.sim.scenario import ScenarioError, load_scenario
from pinnace.sim.wording import counted

ENGINES = ("cluster", "scheduler")
"""`pinnace.gym.episode.ENGINES`, named here without importing the optional extra."""


def configure(gym: argparse.ArgumentParser) -> None:
    commands = gym.add_subparsers(dest="gym_command", metavar="COMMAND", required=True)
    evaluate = commands.add_parser(
        "evaluate",
        help="run policies on the same episodes of a scenario and compare their rewards",
        description=(
            "Run each policy on the same episodes of the scenario (seeds S, S+1, ...) and "
            "print each reward component summed per episode, mean ± standard deviation."
        ),
    )
    evaluate.add_argument("scenario", metavar="SCENARIO", help="a Scenario file (YAML)")
    evaluate.add_argument("--episodes", type=whole(1), default=1, metavar="N", help="(1)")
    evaluate.add_argument("--seed", type=whole(0), default=0, metavar="S", help="first seed (0)")
    evaluate.add_argument(
        "--policy",
        action="append",
        metavar="POLICY",
        help=(
            "a baseline (random, default, most-allocated, target-load-packing) or "
            "module:function called as function(observation, info) -> node row; repeat for "
            "several (default: every baseline the engine runs)"
        ),
    )
    evaluate.add_argument(
        "--reward",
        default="decima",
        metavar="NAME[=W],...",
        help="the reward's components with their weights, e.g. decima=0.001,packing=1 (decima)",
    )
    evaluate.add_argument(
        "--features",
        choices=("requests", "usage", "both"),
        default="both",
        help="what the observation holds of each node (both)",
    )
    evaluate.add_argument(
        "--engine",
        choices=ENGINES,
        default="cluster",
        help=(
            "run the episodes on every component of pinnace up, or on the scheduler alone "
            "(quicker; no timeline, controllers or memory use above requests) (cluster)"
        ),
    )
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    evaluate.set_defaults(run=run_evaluate)


def parse_reward(text: str) -> dict[str, float]:
    """`name=weight,name,...` (a weight of 1 when left out)."""
    weights = {}
    for part in text.split(","):
        name, _, weight = part.strip().partition("=")
        try:
            weights[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"--reward: {weight!r} is not a number") from None
    return weights


def run_evaluate(args: argparse.Namespace) -> int:
    try:
        from pinnace.gym import evaluate, rewards
    except ImportError as e:
        print(f"pinnace gym: {e}", file=sys.stderr)
        return 1
    try:
        scenario = load_scenario(args.scenario)
        weights = rewards.weights(parse_reward(args.reward))
        results = evaluate.evaluate(
            scenario,
            args.policy or evaluate.BASELINES,
            episodes=args.episodes,
            seed=args.seed,
            reward=weights,
            features=args.features,
            engine=args.engine,
        )
    except (OSError, ScenarioError, ValueError) as e:
        print(f"pinnace gym evaluate: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(evaluate.as_json(results))
    else:
        seeds = (
            f"seed {args.seed}"
            if args.episodes == 1
            else (f"seeds {args.seed}..{args.seed + args.episodes - 1}")
        )
        print(f"Scenario {scenario.name}: {counted(args.episodes, 'episode')}, {seeds}\n")
        print(evaluate.render(results, weights))
    return 0
