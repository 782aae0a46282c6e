"""Compare variants of one scenario (`pinnace simulate SCENARIO --compare VARIANTS.yaml`): each
variant (pinnace.sim.variants) run under each seed, in parallel processes, and each figure
reported per variant as its mean over the seeds with a 95 % Student t interval
(pinnace.sim.spread), its difference from the first variant (the baseline) paired by seed, and
the time series averaged over the seeds.

    from pinnace.sim.compare import compare
    result = compare("scenario.yaml", "variants.yaml", seeds=[1, 2, 3], jobs=2)
    result.summary["variants"][1]["metrics"]["nodes.inUse.atEnd"]["mean"]
    result.write("pinnace-compare-web")        # comparison.json and comparison.html

`design(...)` checks the files and variants and lists the runs without running them;
`Design.run(jobs, progress)` runs them (what `compare` does in one call).

Each run is a process's own Simulation (pinnace.sim.compare_run), in a worker process or a Ray
task (pinnace.sim.compare_ray), so the runs share nothing;
the results are put together in the order of the variants and seeds whichever finishes first,
and the same variants and seeds give the same comparison.json, whatever the number of jobs,
but for the wall-clock seconds.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from pinnace.sim import compare_ray, compare_run
from pinnace.sim.compare_html import render
from pinnace.sim.compare_run import Run, Task, Value
from pinnace.sim.spread import CONFIDENCE, paired, spread
from pinnace.sim.variants import (
    ScenarioFile,
    Variant,
    VariantError,
    VariantScenario,
    VariantsFile,
    load_variants,
    parse_variants,
    read_scenario,
    variant_scenarios,
)

COMPARE_VERSION = 1
FILES = ("comparison.json", "comparison.html")
INTERVAL = (
    "95 % confidence interval of the mean over the seeds, by Student's t: "
    "mean ± t(0.975, n − 1) · s / √n (none for one seed); differences from the baseline are "
    "taken seed by seed (each seed runs under every variant) and their mean given the same way"
)

ScenarioInput = str | os.PathLike[str] | Mapping[str, Any]
VariantsInput = str | os.PathLike[str] | VariantsFile | Sequence[Variant | Mapping[str, Any]]


def default_jobs() -> int:
    """The number of cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def compare(
    scenario: ScenarioInput,
    variants: VariantsInput,
    seeds: Sequence[int],
    jobs: int | None = None,
    *,
    until: float | None = None,
    progress: Callable[[], None] | None = None,
    ray: str | None = None,
) -> Comparison:
    """Run `scenario` (a file, or its content as a mapping) under every variant (a variants
    file, or its list) and seed, `jobs` runs at a time (the cores: `default_jobs()`; 1 runs
    them in this process), each for `until` seconds (the variant's spec.until otherwise).
    With `ray`, the runs are Ray tasks on the cluster at that address ("local": a new local
    one). `progress` is called as each run ends. A bad file or variant raises a
    `ScenarioError` (`VariantError`) naming the file, the line and the field, before anything
    runs."""
    return design(scenario, variants, seeds, until=until).run(jobs, progress, ray=ray)


@dataclass(frozen=True)
class Design:
    """A comparison's runs, checked and ready: every variant's scenario under every seed."""

    scenario: ScenarioFile
    variants: list[VariantScenario]
    seeds: list[int]
    tasks: list[Task]

    def run(
        self,
        jobs: int | None = None,
        progress: Callable[[], None] | None = None,
        *,
        ray: str | None = None,
    ) -> Comparison:
        """Run every task, `jobs` at a time (see `compare`), and compare. With `ray` (a Ray
        cluster's address, or "local" for a new local one of `jobs` CPUs), as Ray tasks there
        (pinnace.sim.compare_ray)."""
        began = time.perf_counter()
        if ray is not None:
            runs = compare_ray.run_on_ray(self.tasks, ray, jobs, progress)
        else:
            runs = run_all(self.tasks, default_jobs() if jobs is None else jobs, progress)
        return Comparison.of(
            self.scenario, self.variants, self.seeds, runs, time.perf_counter() - began
        )


def design(
    scenario: ScenarioInput,
    variants: VariantsInput,
    seeds: Sequence[int],
    *,
    until: float | None = None,
) -> Design:
    """The runs of a comparison (see `compare`), every file and variant checked."""
    seeds = _seeds(seeds)
    found = read_scenario(scenario)
    made = variant_scenarios(found, _variants(variants))
    for v in made:
        if until is None and v.scenario.until is None:
            raise VariantError(f'variant "{v.variant.name}": the scenario has no spec.until')
    tasks = [
        Task(i, v.variant.name, seed, v.raw, found.source, found.base, until)
        for i, v in enumerate(made)
        for seed in seeds
    ]
    return Design(found, made, seeds, tasks)


def _seeds(seeds: Sequence[int]) -> list[int]:
    found = list(seeds)
    if not found:
        raise ValueError("give at least one seed")
    for seed in found:
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"a seed is a whole number, at least 0, not {seed!r}")
    if len(set(found)) < len(found):
        raise ValueError(f"the seeds repeat: {found}")
    return found


def _variants(variants: VariantsInput) -> VariantsFile:
    if isinstance(variants, VariantsFile):
        return variants
    if isinstance(variants, str | os.PathLike):
        return load_variants(variants)
    return parse_variants(list(variants))


def run_all(
    tasks: Sequence[Task], jobs: int, progress: Callable[[], None] | None = None
) -> list[Run]:
    """Every task's run, in the order of `tasks`: in this process for one job, else in
    `jobs` worker processes (forkserver, or spawn where there is none: never fork, since
    this process may hold threads and an event loop)."""
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    done = progress or (lambda: None)
    if jobs == 1 or len(tasks) == 1:
        runs = []
        for task in tasks:
            runs.append(compare_run.run(task))
            done()
        return runs
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() == "forkserver":
        context.set_forkserver_preload([compare_run.__name__])  # import once, fork per worker
    found: list[Run | None] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        futures: dict[Future[Run], int] = {
            pool.submit(compare_run.run, task): n for n, task in enumerate(tasks)
        }
        try:
            for future in as_completed(futures):
                found[futures[future]] = future.result()
                done()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return [r for r in found if r is not None]


@dataclass
class Comparison:
    """What a comparison found: `summary` is comparison.json's content."""

    summary: dict[str, Any]

    @classmethod
    def of(
        cls,
        scenario: ScenarioFile,
        made: Sequence[VariantScenario],
        seeds: Sequence[int],
        runs: Sequence[Run],
        wall_seconds: float,
    ) -> Comparison:
        by_variant = [[r for r in runs if r.variant == i] for i in range(len(made))]
        names = list(dict.fromkeys(name for r in runs for name in r.metrics))
        baseline = by_variant[0]
        summary: dict[str, Any] = {
            "compareVersion": COMPARE_VERSION,
            "scenario": str(scenario.raw.get("metadata", {}).get("name")),
            "baseline": made[0].variant.name,
            "seeds": list(seeds),
            "confidence": CONFIDENCE,
            "interval": INTERVAL,
            "wallSeconds": wall_seconds,
            "units": {name: unit(name) for name in names},
            "variants": [
                {
                    "name": v.variant.name,
                    "override": v.variant.override,
                    "simulatedSeconds": spread(r.simulated_seconds for r in found).mean,
                    "metrics": {
                        name: spread(r.metrics.get(name) for r in found).as_dict() for name in names
                    },
                }
                for v, found in zip(made, by_variant, strict=True)
            ],
            "deltas": [
                {
                    "variant": v.variant.name,
                    "against": made[0].variant.name,
                    "metrics": {name: _delta(found, baseline, name) for name in names},
                }
                for v, found in zip(made[1:], by_variant[1:], strict=True)
            ],
            "runs": [
                {
                    "variant": made[r.variant].variant.name,
                    "seed": r.seed,
                    "eventLogSha256": r.event_log_sha256,
                    "simulatedSeconds": r.simulated_seconds,
                    "wallSeconds": r.wall_seconds,
                    "metrics": r.metrics,
                }
                for r in runs
            ],
            "timeseries": {
                v.variant.name: _timeseries(found)
                for v, found in zip(made, by_variant, strict=True)
            },
        }
        return cls(summary)

    def to_json(self) -> str:
        """comparison.json: keys in a fixed order, NaN written as null."""
        return orjson.dumps(self.summary, option=orjson.OPT_INDENT_2).decode() + "\n"

    def write(self, out_dir: Path | str) -> list[Path]:
        """Write comparison.json and comparison.html into `out_dir` (made if missing)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / name for name in FILES]
        paths[0].write_text(self.to_json())
        paths[1].write_text(render(self.summary), encoding="utf-8")
        return paths


def unit(metric: str) -> str:
    """The unit of a figure, by its name."""
    if metric.startswith(("utilisation.", "imbalance.")):
        return "fraction"
    if "Seconds." in metric:
        return "seconds"
    if metric.startswith("nodes."):
        return "nodes"
    if metric.startswith(("pods.", "preemptions", "evictions")):
        return "pods"
    if metric.startswith("nodeHours."):
        return "node-hours"
    if metric.startswith("cost."):
        return "cost"
    return "count"


def _delta(runs: Sequence[Run], baseline: Sequence[Run], name: str) -> dict[str, Value | int]:
    """The differences from the baseline, seed by seed; `relative` to the baseline's mean."""
    by_seed = {r.seed: r.metrics.get(name) for r in baseline}
    found = paired((r.metrics.get(name) for r in runs), (by_seed.get(r.seed) for r in runs))
    base = spread(by_seed.values()).mean
    relative = found.mean / base if found.mean is not None and base else None
    return {**found.as_dict(), "relative": relative}


def _timeseries(runs: Sequence[Run]) -> dict[str, Any]:
    """The variant's series over its seeds, sample by sample: mean, least and greatest (None
    where no seed has a figure). Runs of one variant share their sample times; should they
    not, the series are cut to the shortest."""
    length = min(len(r.series["time"]) for r in runs)
    names = [n for n in dict.fromkeys(n for r in runs for n in r.series) if n != "time"]
    out: dict[str, Any] = {"time": runs[0].series["time"][:length], "series": {}}
    for name in names:
        table = np.array([_column(r.series.get(name), length) for r in runs], dtype=float, ndmin=2)
        known = ~np.isnan(table)
        some = known.any(axis=0)
        with np.errstate(invalid="ignore"):
            mean = np.where(known, table, 0).sum(axis=0) / known.sum(axis=0)
        low = np.where(known, table, np.inf).min(axis=0)
        high = np.where(known, table, -np.inf).max(axis=0)
        out["series"][name] = {
            "mean": _values(mean, some),
            "min": _values(low, some),
            "max": _values(high, some),
        }
    return out


def _column(values: Sequence[Value] | None, length: int) -> list[float]:
    if values is None:
        return [math.nan] * length
    return [math.nan if v is None else v for v in values[:length]]


def _values(row: npt.NDArray[np.float64], known: npt.NDArray[np.bool_]) -> list[Value]:
    return [float(v) if k else None for v, k in zip(row, known, strict=True)]
