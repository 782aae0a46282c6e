"""`pinnace simulate SCENARIO --compare VARIANTS.yaml`: run the scenario under each variant and
seed, in parallel processes, and compare (pinnace.sim.compare).

    pinnace simulate web.yaml --compare variants.yaml --seeds 5 --jobs 4

prints each figure per variant with its 95 % interval over the seeds, the differences from the
first variant and the imbalance of per-node utilisation (or comparison.json's content with
`--json`), and writes comparison.json and comparison.html. A bar on standard error counts the
runs as they end. `--ray [ADDRESS]` runs them as Ray tasks instead (pinnace.sim.compare_ray).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pinnace.cli.arguments import whole
from pinnace.sim.compare import design
from pinnace.sim.compare_ray import LOCAL, RayUnavailableError
from pinnace.sim.compare_run import RunError
from pinnace.sim.compare_text import render_text
from pinnace.sim.scenario import ScenarioError, load_scenario

DEFAULT_SEEDS = 5


def add_arguments(simulate: argparse.ArgumentParser) -> None:
    simulate.add_argument(
        "--compare",
        metavar="VARIANTS",
        help="compare variants of the scenario: a YAML list of {name, override} (the first "
        "is the baseline); writes comparison.json and comparison.html",
    )
    simulate.add_argument(
        "--seeds",
        type=whole(1),
        metavar="N",
        help=f"with --compare: run each variant under N seeds, from --seed or the scenario's "
        f"seed on ({DEFAULT_SEEDS})",
    )
    simulate.add_argument(
        "--seed-list", type=_seed_list, metavar="S1,S2,...", help="with --compare: these seeds"
    )
    simulate.add_argument(
        "--jobs",
        type=whole(1),
        metavar="N",
        help="with --compare: runs at a time, each in a process of its own (the cores); with "
        "--ray and no address, the local Ray's CPUs",
    )
    simulate.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        metavar="ADDRESS",
        help="with --compare: run the runs as Ray tasks on the Ray cluster at ADDRESS, or on a "
        "new local one (pip install 'pinnace[ray]')",
    )


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (ScenarioError, RunError, RayUnavailableError, OSError, ValueError) as e:
        print(f"pinnace simulate: {e}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.seed_list is not None and (args.seeds is not None or args.seed is not None):
        raise ValueError("--seed-list names every seed: leave out --seeds and --seed")
    if args.ray not in (None, LOCAL) and args.jobs is not None:
        raise ValueError("--jobs sizes a local Ray: a Ray cluster's own CPUs run the runs")
    scenario = load_scenario(args.scenario)
    if args.seed_list is not None:
        seeds = args.seed_list
    else:
        first = scenario.seed if args.seed is None else args.seed
        seeds = list(range(first, first + (args.seeds or DEFAULT_SEEDS)))
    runs = design(args.scenario, args.compare, seeds, until=args.until)
    out = Path(args.out or f"pinnace-compare-{scenario.name}")
    with tqdm(
        total=len(runs.tasks),
        unit="run",
        desc="runs",
        file=sys.stderr,
        disable=args.json,
        dynamic_ncols=True,
    ) as bar:
        result = runs.run(args.jobs, progress=lambda: _one_more(bar), ray=args.ray)
    result.write(out)
    if args.json:
        print(result.to_json(), end="")
    else:
        print(render_text(result.summary))
        print(f"\nThe comparison is in {out}/: comparison.json and comparison.html.")
    return 0


def _one_more(bar: tqdm[Any]) -> None:
    bar.update(1)


def _seed_list(text: str) -> list[int]:
    seeds = [part.strip() for part in text.split(",")]
    if not all(s.isdigit() for s in seeds):
        raise argparse.ArgumentTypeError(
            f"must be whole numbers separated by commas, such as 1,2,3, not {text!r}"
        )
    return [int(s) for s in seeds]
