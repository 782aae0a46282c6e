"""The tables `pinnace simulate --compare` prints, from comparison.json's content: each figure
per variant (mean ± the half-width of its 95 % interval), the differences from the baseline,
and the imbalance of per-node utilisation. The HTML page shows the same tables.

Fractions are shown in percent and their differences in percentage points (pp). A figure that
is 0, or missing, in every run is left out of the tables, and one no variant changed under any
seed out of the differences (they stay in comparison.json).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pinnace.sim.compare_run import SPREAD, WHAT
from pinnace.sim.summary import duration
from pinnace.sim.wording import counted

IMBALANCE = "imbalance."
WHEN = (("atEnd", "end", "at the end"), ("overTime", "avg", "averaged over the samples"))
"""The imbalance's figures: key, column label, meaning."""


def render_text(summary: Mapping[str, Any]) -> str:
    """The header, then the three tables, separated by blank lines."""
    names = [v["name"] for v in summary["variants"]]
    sections = [
        header(summary),
        grid(("figure", *names), metric_rows(summary)),
    ]
    if summary["deltas"]:
        sections.append(
            f"Difference from {summary['baseline']} (the baseline), seed by seed:\n"
            + grid(("figure", *names[1:]), delta_rows(summary))
        )
    rows = imbalance_rows(summary)
    if rows:
        sections.append(f"{imbalance_title()}:\n" + grid(imbalance_head(), rows, left=3))
    return "\n\n".join(sections)


def header(summary: Mapping[str, Any]) -> str:
    variants, seeds = summary["variants"], summary["seeds"]
    lengths = sorted({duration(v["simulatedSeconds"] or 0) for v in variants})
    runs = len(variants) * len(seeds)
    return (
        f"Scenario {summary['scenario']}: {counted(len(variants), 'variant')} x "
        f"{counted(len(seeds), 'seed')} ({', '.join(map(str, seeds))}), {' or '.join(lengths)} "
        f"simulated; {counted(runs, 'run')} in "
        f"{summary['wallSeconds']:.1f} s\n"
        "Means over the seeds ± the half-width of the 95 % Student t interval "
        f"(n − 1 degrees of freedom); fractions in %, differences in percentage points (pp)."
    )


def shown(summary: Mapping[str, Any]) -> list[str]:
    """The figures of the first table: all but the imbalance's, where some run has one not 0."""
    names = list(summary["units"])
    return [
        name
        for name in names
        if not name.startswith(IMBALANCE)
        and any(r["metrics"].get(name) not in (None, 0) for r in summary["runs"])
    ]


def metric_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    units = summary["units"]
    return [
        [name, *(with_interval(v["metrics"][name], units[name]) for v in summary["variants"])]
        for name in shown(summary)
    ]


def delta_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """The figures of the first table that some variant changed under some seed."""
    units = summary["units"]
    return [
        [name, *(delta(d["metrics"][name], units[name]) for d in summary["deltas"])]
        for name in shown(summary)
        if any(d["metrics"][name]["min"] or d["metrics"][name]["max"] for d in summary["deltas"])
    ]


def imbalance_title() -> str:
    when = "; ".join(f"{label}: {meaning}" for _, label, meaning in WHEN)
    return (
        "Imbalance: per-node utilisation (of allocatable) across the Ready nodes, its least, "
        f"greatest, standard deviation and range; means over the seeds ({when})"
    )


def imbalance_head() -> tuple[str, ...]:
    return ("variant", "resource", "of", *(f"{label} {f}" for _, label, _ in WHEN for f in SPREAD))


def imbalance_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Per variant, resource and what (requested, used): the imbalance figures' means."""
    rows = []
    for variant in summary["variants"]:
        metrics = variant["metrics"]
        resources = dict.fromkeys(
            name.split(".")[1] for name in metrics if name.startswith(IMBALANCE)
        )
        for resource in resources:
            for what in WHAT:
                scope = f"{IMBALANCE}{resource}.{what}"
                names = [f"{scope}.{when}.{f}" for when, _, _ in WHEN for f in SPREAD]
                if all(metrics.get(n, {}).get("mean") is None for n in names):
                    continue
                figures = [percent(metrics[n]["mean"]) for n in names]
                rows.append([variant["name"], resource, what, *figures])
    return rows


def with_interval(stats: Mapping[str, Any], unit: str) -> str:
    """`mean ± half-width` in the figure's unit; the mean alone for one value; – for none."""
    mean, low, high = stats["mean"], stats["low"], stats["high"]
    if mean is None:
        return "–"
    if unit == "fraction":
        if low is None:
            return percent(mean)
        return f"{100 * mean:.1f} ± {100 * (high - low) / 2:.1f} %"
    text = number(mean)
    if low is not None:
        text += f" ± {number((high - low) / 2)}"
    return text + (" s" if unit == "seconds" else "")


def delta(stats: Mapping[str, Any], unit: str) -> str:
    """`+mean ± half-width (relative %)`."""
    mean, low, high = stats["mean"], stats["low"], stats["high"]
    if mean is None:
        return "–"
    if unit == "fraction":
        figure, suffix = (lambda v: f"{100 * v:.1f}"), " pp"
    else:
        figure, suffix = number, " s" if unit == "seconds" else ""
    text = ("-" if mean < 0 else "+") + figure(abs(mean))
    if low is not None:
        text += f" ± {figure((high - low) / 2)}"
    text += suffix
    if stats.get("relative") is not None:
        text += f" ({100 * stats['relative']:+.0f} %)"
    return text


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def number(value: float) -> str:
    """Up to two decimals, none when whole: 4, 2.5, 1,234.57."""
    text = f"{value:,.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def grid(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A plain-text table: the first `left` columns left-aligned, the others right-aligned."""
    table = [list(head), *map(list, rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = []
    for row in table:
        cells = [
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
