"""`pinnace simulate SCENARIO`: run a scenario on the virtual clock and write its report.

The whole cluster runs in this process, with no sockets and no threads, far faster than real
time; the same scenario and seed give the same event log and report on any machine (the report
names the log's SHA-256). While it runs, a progress bar on standard error shows simulated and
wall time, the speed-up and the pods; `--json` prints the summary as one JSON object instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from pinnace.cli import compare
from pinnace.cli.arguments import positive_duration, whole
from pinnace.sim.actions import ActionError
from pinnace.sim.scenario import ScenarioError, load_scenario
from pinnace.sim.simulation import Simulation
from pinnace.sim.summary import duration, render_text

EVENT_LOG = "events.jsonl"
PROGRESS_STEPS = 200
"""The run is advanced in this many slices, the bar redrawn after each."""


def configure(simulate: argparse.ArgumentParser) -> None:
    simulate.description = (
        "Run the scenario's cluster (docs/simulation.md) on the virtual clock, in this "
        "process, and write report.json, its tables and report.html."
    )
    simulate.add_argument("scenario", metavar="SCENARIO", help="a Scenario file (YAML)")
    simulate.add_argument(
        "--seed",
        type=whole(0),
        metavar="N",
        help="the seed of every random choice (the scenario's)",
    )
    simulate.add_argument(
        "--until",
        type=positive_duration("6h"),
        metavar="DURATION",
        help="how much simulated time to run, a Go duration such as 6h (the scenario's until)",
    )
    simulate.add_argument(
        "--out", metavar="DIR", help="where to write the report (./pinnace-sim-<scenario name>)"
    )
    simulate.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object, no bar"
    )
    compare.add_arguments(simulate)
    simulate.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.compare is not None:
        return compare.run(args)
    if any(v is not None for v in (args.seeds, args.seed_list, args.jobs, args.ray)):
        print(
            "pinnace simulate: --seeds, --seed-list, --jobs and --ray need --compare",
            file=sys.stderr,
        )
        return 1
    try:
        scenario = load_scenario(args.scenario)
    except (ScenarioError, OSError) as e:
        print(f"pinnace simulate: {e}", file=sys.stderr)
        return 1
    until = args.until if args.until is not None else scenario.until
    if until is None:
        print("pinnace simulate: the scenario has no spec.until: give --until", file=sys.stderr)
        return 1
    out = Path(args.out or f"pinnace-sim-{scenario.name}")
    try:  # before the run, so that a bad --out does not cost one
        out.mkdir(parents=True, exist_ok=True)
        log = (out / EVENT_LOG).open("wb")
    except OSError as e:
        return _cannot_write(out, e)
    try:
        with log, Simulation(scenario, seed=args.seed, event_log=log) as sim:
            _run(sim, until, progress=not args.json)
            report = sim.finish()
    except ActionError as e:
        line = scenario.line(e.field)
        where = args.scenario if line is None else f"{args.scenario}:{line}"
        print(f"pinnace simulate: {where}: {e}", file=sys.stderr)
        return 1
    try:
        report.write(out)
    except OSError as e:
        return _cannot_write(out, e)
    if args.json:
        print(json.dumps(report.summary))
    else:
        print(render_text(report.summary))
        print(f"The report is in {out}/: report.html, report.json, {EVENT_LOG} and the tables.")
    return 0


def _cannot_write(out: Path, error: OSError) -> int:
    where = f"{error.filename}: " if error.filename else ""
    print(
        f"pinnace simulate: cannot write the report to {out}/: {where}{error.strerror or error}",
        file=sys.stderr,
    )
    return 1


def _run(sim: Simulation, until: float, progress: bool) -> None:
    with _logged_at_simulated_times(sim):
        if not progress:
            sim.advance(until)
            return
        with tqdm(
            total=round(until), unit="s", desc="simulated", file=sys.stderr, dynamic_ncols=True
        ) as bar:
            for i in range(1, PROGRESS_STEPS + 1):
                sim.advance(until * i / PROGRESS_STEPS)
                bar.update(round(sim.elapsed) - bar.n)
                bar.set_postfix_str(_postfix(sim), refresh=False)


class _AtSimulatedTime(logging.Handler):
    """Writes the components' log records (a controller's warning) on lines of their own,
    above the progress bar if there is one, each with the simulated time it was logged at."""

    def __init__(self, sim: Simulation) -> None:
        super().__init__(logging.WARNING)
        self._sim = sim

    def emit(self, record: logging.LogRecord) -> None:
        at = duration(self._sim.elapsed)
        tqdm.write(f"{at} {record.levelname} {record.getMessage()}", file=sys.stderr)


@contextmanager
def _logged_at_simulated_times(sim: Simulation) -> Iterator[None]:
    """Without a handler, Python's last resort would print a bare record in the middle of the
    bar."""
    root = logging.getLogger()
    handler = _AtSimulatedTime(sim)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _postfix(sim: Simulation) -> str:
    pods = sim.observer.pods_now()
    speedup = sim.elapsed / sim.wall_seconds if sim.wall_seconds else 0.0
    return (
        f"wall {sim.wall_seconds:.0f}s, {speedup:,.0f}x, pods {len(sim.observer.pods)} created "
        f"{pods['Running']} running {pods['Pending']} pending"
    )
