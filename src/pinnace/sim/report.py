"""The report of a simulation: a summary (report.json, `reportVersion` 1), its tables as CSV
(`pinnace.sim.tables`) and one self-contained page of plots (`pinnace.sim.html`).

    report = Report.from_run(observer, scenario="zone-loss", seed=0, simulated_seconds=3600,
                             wall_seconds=2.5, event_log_sha256=log.sha256())
    report.summary["pods"]["created"], report.to_json()
    report.write(Path("pinnace-sim-zone-loss"))

Times are seconds of simulated time since the observer started; amounts are in display units
(cpu in cores, memory in bytes, other resources in their own units); utilisation and
fragmentation are fractions (0.25 is 25 %). Everything in the summary but `wallSeconds` and
`speedup` follows from the run alone, so the same scenario and seed give the same summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from pinnace.scheduler.preemption import PREEMPTION_BY_SCHEDULER
from pinnace.sim import tables
from pinnace.sim.html import render
from pinnace.sim.lifecycle import FAILED, SUCCEEDED
from pinnace.sim.observe import NodeState, Observer, Sample
from pinnace.sim.tables import CLUSTER, Table, display, number, resource_rank

REPORT_VERSION = 1
PERCENTILES = (50, 90, 99)
UNITS = {
    "time": "seconds of simulated time since the start",
    "cpu": "cores",
    "memory": "bytes",
    "pods": "pods",
    "utilisation": "fraction of allocatable",
    "fragmentation": "fraction of free capacity",
}
FILES = (
    "report.json",
    "report.html",
    "timeseries.csv",
    "pods.csv",
    "nodes.csv",
    "incidents.csv",
)


@dataclass
class Report:
    """What a run found: `summary` is report.json's content; the tables are the CSV files."""

    summary: dict[str, Any]
    timeseries: Table
    pods: Table
    nodes: Table
    incidents: Table

    @classmethod
    def from_run(
        cls,
        observer: Observer,
        *,
        scenario: str,
        seed: int,
        simulated_seconds: float,
        wall_seconds: float,
        event_log_sha256: str,
        refused: Mapping[str, int] | None = None,
    ) -> Report:
        """The report of a run `observer` recorded (stopped, or it reads as of now);
        `refused`: the arrivals the API server refused, by generator or trace workload."""
        refused = {name: n for name, n in (refused or {}).items() if n}
        records = list(observer.pods.values())
        end = observer.nodes_now()
        speedup = simulated_seconds / wall_seconds if wall_seconds > 0 else None
        evictions = Counter(r.evicted for r in records if r.evicted)
        summary: dict[str, Any] = {
            "reportVersion": REPORT_VERSION,
            "scenario": scenario,
            "seed": seed,
            "simulatedSeconds": simulated_seconds,
            "wallSeconds": wall_seconds,
            "speedup": speedup,
            "eventLogSha256": event_log_sha256,
            "sampleIntervalSeconds": observer.interval,
            "samples": len(observer.samples),
            "units": UNITS,
            "nodes": _nodes(end),
            "pods": {
                "created": len(records),
                "scheduled": sum(r.scheduled is not None for r in records),
                "unschedulable": sum(r.unschedulable for r in records),
                "pendingAtEnd": sum(
                    not r.node and r.deleted is None and r.finished is None for r in records
                ),
                "running": sum(r.running is not None for r in records),
                "succeeded": sum(r.phase == SUCCEEDED for r in records),
                "failed": sum(r.phase == FAILED for r in records),
                "deleted": sum(r.deleted is not None for r in records),
            },
            "failedScheduling": {
                "events": observer.failed_scheduling_events,
                "reasons": _by_count(observer.failed_scheduling),
            },
            "preemptions": evictions[PREEMPTION_BY_SCHEDULER],
            "evictions": {"total": evictions.total(), "byReason": _by_count(evictions)},
            "refusedArrivals": {"total": sum(refused.values()), "byWorkload": _by_count(refused)},
            "oomKills": sum(r.oom_kills for r in records),
            "restarts": sum(r.restarts for r in records),
            "schedulingLatencySeconds": _latency(
                r.scheduled - r.created for r in records if r.scheduled is not None
            ),
            "timeToRunningSeconds": _latency(
                r.running - r.created for r in records if r.running is not None
            ),
            "utilisation": _utilisation(observer.samples),
            **_cost(observer.samples, observer.costs, simulated_seconds),
            "fragmentation": _fragmentation(observer, end),
        }
        return cls(
            summary=summary,
            timeseries=tables.timeseries(observer.samples),
            pods=tables.pods(records, observer.shapes),
            nodes=tables.nodes(end),
            incidents=tables.incidents(observer.incidents),
        )

    def to_json(self) -> str:
        """report.json: keys in a fixed order, NaN written as null."""
        return orjson.dumps(self.summary, option=orjson.OPT_INDENT_2).decode() + "\n"

    def write(self, out_dir: Path | str) -> list[Path]:
        """Write every file of FILES into `out_dir` (made if missing); their paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / name for name in FILES]
        paths[0].write_text(self.to_json())
        paths[1].write_text(render(self), encoding="utf-8")
        for path, table in zip(
            paths[2:], (self.timeseries, self.pods, self.nodes, self.incidents), strict=True
        ):
            table.write_csv(path)
        return paths


def _by_count(counts: Mapping[str, int]) -> dict[str, int]:
    """Most first, then by name."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _latency(values: Iterable[float]) -> dict[str, Any]:
    found = np.fromiter(values, dtype=float)
    if not len(found):
        return {"count": 0, **{f"p{p}": None for p in PERCENTILES}, "max": None}
    quantiles = np.percentile(found, PERCENTILES)
    return {
        "count": len(found),
        **{f"p{p}": float(q) for p, q in zip(PERCENTILES, quantiles, strict=True)},
        "max": float(found.max()),
    }


def _stats(series: npt.NDArray[np.float64]) -> dict[str, float] | None:
    """mean, p95 and max of a series, leaving out NaN (none: None)."""
    known = series[~np.isnan(series)]
    if not len(known):
        return None
    return {
        "mean": float(known.mean()),
        "p95": float(np.percentile(known, 95)),
        "max": float(known.max()),
    }


def _scopes(samples: Sequence[Sample]) -> tuple[list[str], list[str]]:
    """Every pool and resource of the samples, pools by name, resources as ranked."""
    pools = sorted({p for s in samples for p in s.pools})
    resources = sorted({r for s in samples for r in s.resources}, key=resource_rank)
    return pools, resources


def _ratio(samples: Sequence[Sample], pool: str | None, resource: str, what: str) -> Any:
    """requested or used over allocatable of a scope (pool None: the cluster), per sample."""
    out = np.full(len(samples), np.nan)
    for i, s in enumerate(samples):
        if resource not in s.resources or (pool is not None and pool not in s.pools):
            continue
        row = 0 if pool is None else 1 + s.pools.index(pool)
        col = s.resources.index(resource)
        allocatable = s.allocatable[row, col]
        amount = s.requested[row, col] if what == "requested" else s.used[row, col]
        if allocatable > 0:
            out[i] = amount / allocatable
    return out


def _scope_utilisation(samples: Sequence[Sample], pool: str | None) -> dict[str, Any]:
    _, resources = _scopes(samples)
    return {
        r: {what: _stats(_ratio(samples, pool, r, what)) for what in ("requested", "used")}
        for r in resources
    }


def _utilisation(samples: Sequence[Sample]) -> dict[str, Any]:
    pools, _ = _scopes(samples)
    return {
        CLUSTER: _scope_utilisation(samples, None),
        "pools": {p: _scope_utilisation(samples, p) for p in pools},
    }


def _cost(samples: Sequence[Sample], costs: Mapping[str, float], until: float) -> dict[str, Any]:
    """Node-hours per pool (each sample's count held until the next sample, the last until
    the end) and what they cost, when pools have a cost; nothing otherwise."""
    if not costs or not samples:
        return {}
    hours: dict[str, float] = {}
    ends = [*(s.time for s in samples[1:]), max(until, samples[-1].time)]
    for sample, end in zip(samples, ends, strict=True):
        for pool, count in sample.pool_nodes.items():
            hours[pool] = hours.get(pool, 0.0) + count * (end - sample.time) / 3600
    per_hour = np.array([s.cost_per_hour or 0.0 for s in samples])
    return {
        "cost": {
            "nodeHours": {p: round(h, 6) for p, h in sorted(hours.items())},
            "total": round(sum(costs.get(p, 0.0) * h for p, h in hours.items()), 6),
            "perHour": _stats(per_hour),
        }
    }


def _nodes(end: NodeState) -> dict[str, Any]:
    return {
        "atEnd": len(end.names),
        "ready": int(end.ready.sum()),
        "notReady": int((~end.ready).sum()),
        "pools": dict(sorted(Counter(p for p in end.pools if p).items())),
    }


def _amounts(resources: Sequence[str], values: Iterable[float]) -> dict[str, float | int]:
    return {r: number(display(r, float(v))) for r, v in zip(resources, values, strict=True)}


def _fragmentation(observer: Observer, end: NodeState) -> dict[str, Any]:
    resources = end.resources
    frag = end.fragmentation
    names = end.shapes
    free = np.maximum(end.allocatable - end.requested, 0)
    usable = end.ready & end.schedulable
    over_time = {
        name: {r: _stats(_shape_share(observer.samples, name, r)) for r in resources}
        for name in names
    }
    return {
        "shapes": [
            {
                "name": shape.name,
                "workloads": list(shape.workloads),
                "requests": _amounts(list(shape.requests), shape.requests.values()),
            }
            for shape in observer.shapes
        ],
        "atEnd": {
            "strandedShare": {
                name: {r: _finite(frag.share[k, i]) for i, r in enumerate(resources)}
                for k, name in enumerate(names)
            },
            "largestFree": _amounts(resources, frag.largest_free),
            "largestMultiple": {n: int(frag.largest_multiple[k]) for k, n in enumerate(names)},
            "nodes": [
                {
                    "name": node,
                    "pool": end.pools[n],
                    "usable": bool(usable[n]),
                    "free": _amounts(resources, free[n]),
                    "fits": {name: int(frag.fits[n, k]) for k, name in enumerate(names)},
                }
                for n, node in enumerate(end.names)
            ],
        },
        "overTime": {"strandedShare": over_time},
    }


def _shape_share(samples: Sequence[Sample], shape: str, resource: str) -> Any:
    out = np.full(len(samples), np.nan)
    for i, s in enumerate(samples):
        if shape in s.shapes and resource in s.resources:
            out[i] = s.fragmentation.share[s.shapes.index(shape), s.resources.index(resource)]
    return out


def _finite(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
