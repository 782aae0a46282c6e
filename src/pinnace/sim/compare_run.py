"""One run of a comparison (pinnace.sim.compare): a variant's scenario under one seed, as
`pinnace simulate --seed` runs it, measured into figures and time series. It runs in a worker
process, so what goes in (`Task`) and out (`Run`) is plain data.

Besides the report's summary, the run looks at every node each sampling interval: the per-node
utilisation (requested and used over allocatable, per resource, over the Ready nodes) whose
minimum, maximum, standard deviation and range across the nodes measure how evenly the
scheduler spread the load (kube-scheduler-simulator #141's imbalance), and the nodes in use
(Ready nodes with a pod on them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.resources.names import PODS
from pinnace.sim.actions import ActionError
from pinnace.sim.observe import NodeState
from pinnace.sim.scenario import parse_scenario
from pinnace.sim.simulation import Simulation

WHAT = ("requested", "used")
SPREAD = ("min", "max", "std", "range")
"""The imbalance figures: across the Ready nodes, the least and greatest utilisation, their
standard deviation (of the nodes, the population) and the range, greatest − least."""
PLOTTED = ("pods.pending", "pods.unscheduled", "nodes.inUse")
"""The series a comparison keeps besides the utilisation and the imbalance's `std`."""

Value = float | None


class RunError(RuntimeError):
    """A run that could not go on (a timeline step the cluster refused)."""


@dataclass(frozen=True)
class Task:
    """Run `scenario` (a Scenario file's content, its paths relative to `base`) under `seed`
    for `until` seconds (None: the scenario's until)."""

    variant: int
    name: str
    seed: int
    scenario: dict[str, Any]
    source: str
    base: str
    until: float | None


@dataclass(frozen=True)
class Run:
    variant: int
    seed: int
    event_log_sha256: str
    simulated_seconds: float
    wall_seconds: float
    metrics: dict[str, Value]
    """Figure name -> value (None: the run has no such figure, e.g. no pod was scheduled)."""
    series: dict[str, list[Value]]
    """`time` and the series of PLOTTED, utilisation and imbalance, one value per sample."""


def run(task: Task) -> Run:
    """Run the task's simulation and measure it."""
    scenario = parse_scenario(task.scenario, task.source, task.base)
    until = task.until if task.until is not None else scenario.until
    if until is None:
        raise RunError(f'variant "{task.name}": the scenario has no spec.until')
    with Simulation(scenario, seed=task.seed) as sim:
        try:
            samples = _sampled(sim, until, scenario.metrics.interval)
        except ActionError as e:
            raise RunError(f'variant "{task.name}", seed {task.seed}: {e}') from None
        summary = sim.finish().summary
    series = _columns(samples)
    return Run(
        variant=task.variant,
        seed=task.seed,
        event_log_sha256=summary["eventLogSha256"],
        simulated_seconds=summary["simulatedSeconds"],
        wall_seconds=summary["wallSeconds"],
        metrics=metrics(summary, series),
        series={name: values for name, values in series.items() if _kept(name)},
    )


def _sampled(sim: Simulation, until: float, interval: float) -> list[dict[str, float]]:
    """Snapshots at time zero, every `interval` and at `until`."""
    samples = [snapshot(sim.elapsed, sim.observer.nodes_now(), sim.observer.pods_now())]
    taken = 1
    while taken * interval < until:
        sim.advance(taken * interval)
        samples.append(snapshot(sim.elapsed, sim.observer.nodes_now(), sim.observer.pods_now()))
        taken += 1
    sim.advance(until)
    samples.append(snapshot(sim.elapsed, sim.observer.nodes_now(), sim.observer.pods_now()))
    return samples


def snapshot(time: float, state: NodeState, pods: Mapping[str, int]) -> dict[str, float]:
    """The figures of one moment: pods pending and not yet bound, nodes in use, and per
    resource the cluster's utilisation and the imbalance across the Ready nodes."""
    ready = state.ready
    if PODS in state.resources:
        holding = state.requested[:, state.resources.index(PODS)] > 0
    else:
        holding = np.asarray(state.requested.any(axis=1))
    values: dict[str, float] = {
        "time": time,
        "pods.pending": pods["Pending"],
        "pods.unscheduled": pods["Unscheduled"],
        "nodes.inUse": int((ready & holding).sum()),
    }
    for i, resource in enumerate(state.resources):
        allocatable = state.allocatable[:, i].astype(float)
        counted = ready & (allocatable > 0)
        for what, amounts in zip(WHAT, (state.requested[:, i], state.used[:, i]), strict=True):
            if np.isnan(amounts).any():
                continue  # not measured (used, but for cpu and memory)
            total = allocatable.sum()
            values[f"utilisation.{resource}.{what}"] = amounts.sum() / total if total else math.nan
            ratios = amounts[counted] / allocatable[counted]
            known = len(ratios) > 0
            low, high = (ratios.min(), ratios.max()) if known else (math.nan, math.nan)
            figures = (low, high, ratios.std() if known else math.nan, high - low)
            for name, figure in zip(SPREAD, figures, strict=True):
                values[f"imbalance.{resource}.{what}.{name}"] = float(figure)
    return values


def _columns(samples: Sequence[Mapping[str, float]]) -> dict[str, list[Value]]:
    """The snapshots as series; NaN, or a figure missing from a snapshot (a resource no node
    had yet), is None."""
    names = list(dict.fromkeys(name for s in samples for name in s))
    return {name: [_known(s.get(name, math.nan)) for s in samples] for name in names}


def _kept(name: str) -> bool:
    return (
        name == "time"
        or name in PLOTTED
        or name.startswith("utilisation.")
        or (name.startswith("imbalance.") and name.endswith(".std"))
    )


def metrics(summary: Mapping[str, Any], series: Mapping[str, Sequence[Value]]) -> dict[str, Value]:
    """A run's figures, by name: from its report's summary, and from the snapshots' series
    (`.atEnd`: the last snapshot; `.mean`, `.max` and `.overTime`: over the snapshots)."""
    pods = summary["pods"]
    out: dict[str, Value] = {
        f"pods.{key}": pods[key]
        for key in ("created", "scheduled", "unschedulable", "pendingAtEnd", "succeeded", "failed")
    }
    out["failedScheduling.events"] = summary["failedScheduling"]["events"]
    out["preemptions"] = summary["preemptions"]
    out["evictions"] = summary["evictions"]["total"]
    out["oomKills"] = summary["oomKills"]
    out["restarts"] = summary["restarts"]
    for key in ("schedulingLatencySeconds", "timeToRunningSeconds"):
        for p in ("p50", "p90", "p99"):
            out[f"{key}.{p}"] = summary[key][p]
    for name in ("nodes.inUse", "pods.pending", "pods.unscheduled"):
        values = series[name]
        if name == "nodes.inUse":
            out[f"{name}.atEnd"] = values[-1]
        out[f"{name}.mean"] = _mean(values)
        out[f"{name}.max"] = max((v for v in values if v is not None), default=None)
    for resource, figures in summary["utilisation"]["cluster"].items():
        for what in WHAT:
            stats = figures[what]
            out[f"utilisation.{resource}.{what}.mean"] = stats["mean"] if stats else None
            out[f"utilisation.{resource}.{what}.max"] = stats["max"] if stats else None
    cost = summary.get("cost")
    if cost:
        out["cost.total"] = cost["total"]
        for pool, hours in cost["nodeHours"].items():
            out[f"nodeHours.{pool}"] = hours
    for name, values in series.items():
        if name.startswith("imbalance."):
            scope, _, figure = name.rpartition(".")
            out[f"{scope}.atEnd.{figure}"] = values[-1]
    for name, values in series.items():
        if name.startswith("imbalance."):
            scope, _, figure = name.rpartition(".")
            out[f"{scope}.overTime.{figure}"] = _mean(values)
    return out


def _mean(values: Sequence[Value]) -> Value:
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


def _known(value: float) -> Value:
    return None if math.isnan(value) else float(value)
