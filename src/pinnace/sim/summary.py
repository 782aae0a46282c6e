"""The few lines `pinnace simulate` prints at the end of a run: report.json's headline figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def render_text(summary: Mapping[str, Any]) -> str:
    """The run, its pods, what disrupted them, latencies and utilisation, one fact a line."""
    pods = summary["pods"]
    evictions = summary["evictions"]
    speedup = summary.get("speedup")
    lines = [
        f"Scenario {summary['scenario']}, seed {summary['seed']}: "
        f"{duration(summary['simulatedSeconds'])} simulated in "
        f"{summary['wallSeconds']:.1f} s" + (f" ({speedup:,.0f}x real time)" if speedup else ""),
        f"Event log SHA-256: {summary['eventLogSha256']}",
        f"Pods: {pods['created']} created, {pods['scheduled']} scheduled, "
        f"{pods['unschedulable']} unschedulable at some point, {pods['pendingAtEnd']} pending "
        f"at the end; {pods['succeeded']} succeeded, {pods['failed']} failed",
    ]
    refused = summary.get("refusedArrivals") or {}
    if refused.get("total"):
        by_workload = ", ".join(f"{w}: {n}" for w, n in refused["byWorkload"].items())
        lines.append(
            f"Arrivals the API server refused: {refused['total']} ({by_workload}); "
            "no pod was made of them"
        )
    reasons = summary["failedScheduling"]["reasons"]
    if reasons:
        lines.append(
            "FailedScheduling: " + ", ".join(f"{n} x {r}" for r, n in list(reasons.items())[:5])
        )
    by_reason = ", ".join(f"{n} {r}" for r, n in evictions["byReason"].items())
    lines.append(
        f"Evictions: {evictions['total']}"
        + (f" ({by_reason})" if by_reason else "")
        + f"; preemptions {summary['preemptions']}, OOM kills {summary['oomKills']}, "
        f"restarts {summary['restarts']}"
    )
    for name, key in (
        ("Scheduling latency", "schedulingLatencySeconds"),
        ("Time to running", "timeToRunningSeconds"),
    ):
        latency = summary[key]
        if latency.get("count"):
            lines.append(
                f"{name}: p50 {latency['p50']:.2f} s, p90 {latency['p90']:.2f} s, "
                f"p99 {latency['p99']:.2f} s"
            )
    cluster = summary["utilisation"].get("cluster") or {}
    for resource in ("cpu", "memory"):
        figures = cluster.get(resource) or {}
        requested, used = figures.get("requested"), figures.get("used")
        if requested:
            text = f"{resource.upper() if resource == 'cpu' else resource.capitalize()} "
            text += f"requested: mean {requested['mean']:.0%}, max {requested['max']:.0%}"
            if used:
                text += f"; used: mean {used['mean']:.0%}, max {used['max']:.0%}"
            lines.append(text)
    cost = summary.get("cost")
    if cost:
        hours = ", ".join(f"{pool} {h:.2f}" for pool, h in cost["nodeHours"].items())
        lines.append(f"Node-hours: {hours}; cost {cost['total']:.2f}")
    return "\n".join(lines)


def duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"
