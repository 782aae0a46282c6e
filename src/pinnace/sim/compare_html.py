"""comparison.html: one self-contained page (plotly.js inline, as report.html) with the
comparison's tables (pinnace.sim.compare_text) and the variants overlaid on each plot: per
resource, requested and used over allocatable over time; pods pending; nodes in use; per
resource, the standard deviation of per-node utilisation over time (the imbalance); and the
distribution over the seeds of a few headline figures, one box per variant and figure.

A line is the mean over the seeds; the band around a requested or pending line spans the
least and greatest seed. Every plot's element has a fixed id, so the page is the same for the
same comparison.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go  # type: ignore[import-untyped]
from plotly.colors import qualitative  # type: ignore[import-untyped]
from plotly.subplots import make_subplots  # type: ignore[import-untyped]

from pinnace.sim import compare_text
from pinnace.sim.compare_run import WHAT
from pinnace.sim.html import layout, page, table

DISTRIBUTIONS = (
    "nodes.inUse.atEnd",
    "nodes.inUse.mean",
    "pods.pending.mean",
    "schedulingLatencySeconds.p99",
    "utilisation.cpu.requested.mean",
    "imbalance.cpu.requested.atEnd.std",
    "imbalance.memory.requested.atEnd.std",
)
"""The figures whose spread over the seeds is drawn, those the comparison has."""
DASH = {"requested": "solid", "used": "dot"}


def render(summary: Mapping[str, Any]) -> str:
    title = f"Pinnace comparison: {summary['scenario']}"
    names = [v["name"] for v in summary["variants"]]
    series = summary["timeseries"]
    plots = [
        *_per_resource(series, names, "utilisation", "requested and used, % of allocatable"),
        ("pending", _lines(series, names, "pods.pending", "Pods pending", "pods")),
        ("nodes-in-use", _lines(series, names, "nodes.inUse", "Nodes in use", "nodes")),
        *_per_resource(series, names, "imbalance", "standard deviation of per-node utilisation, %"),
        *_distributions(summary),
    ]
    return page(title, _tables(summary), plots)


def _tables(summary: Mapping[str, Any]) -> str:
    names = [v["name"] for v in summary["variants"]]
    parts = [
        *(f"<p>{html.escape(line)}</p>" for line in compare_text.header(summary).splitlines()),
        "<h2>Figures per variant</h2>",
        table(compare_text.metric_rows(summary), ("figure", *names)),
    ]
    if summary["deltas"]:
        parts += [
            f"<h2>Difference from {html.escape(summary['baseline'])}, seed by seed</h2>",
            table(compare_text.delta_rows(summary), ("figure", *names[1:])),
        ]
    rows = compare_text.imbalance_rows(summary)
    if rows:
        title, _, detail = compare_text.imbalance_title().partition(": ")
        parts += [
            f"<h2>{html.escape(title)}</h2>",
            f"<p>{html.escape(detail[0].upper() + detail[1:])}.</p>",
            table(rows, compare_text.imbalance_head()),
        ]
    parts += ["<h2>Variants</h2>", table(_overrides(summary), ("variant", "override"))]
    return "\n".join(parts)


def _overrides(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for v in summary["variants"]:
        override = v["override"]
        text = ", ".join(f"{key}: {value}" for key, value in override.items())
        rows.append((v["name"], text or "(the scenario as it is)"))
    return rows


# --- the plots -------------------------------------------------------------------------------


def _color(n: int, alpha: float = 1.0) -> str:
    hex_color = qualitative.Plotly[n % len(qualitative.Plotly)].lstrip("#")
    red, green, blue = (int(hex_color[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({red},{green},{blue},{alpha})"


def _percent(values: Sequence[float | None]) -> list[float | None]:
    return [None if v is None else 100 * v for v in values]


def _add(
    figure: go.Figure,
    n: int,
    name: str,
    time: Sequence[float],
    stats: Mapping[str, Sequence[float | None]],
    *,
    dash: str = "solid",
    band: bool = True,
    scale: bool = False,
) -> None:
    """A variant's mean line, with a band from the least to the greatest seed."""
    shown = _percent if scale else list
    if band:
        figure.add_trace(
            go.Scatter(
                x=time, y=shown(stats["min"]), mode="lines", line={"width": 0}, showlegend=False,
                legendgroup=name, hoverinfo="skip",
            )
        )  # fmt: skip
        figure.add_trace(
            go.Scatter(
                x=time, y=shown(stats["max"]), mode="lines", line={"width": 0}, fill="tonexty",
                fillcolor=_color(n, 0.15), showlegend=False, legendgroup=name, hoverinfo="skip",
            )
        )  # fmt: skip
    line = {"color": _color(n), "dash": dash}
    figure.add_trace(
        go.Scatter(x=time, y=shown(stats["mean"]), name=name, legendgroup=name, line=line)
    )


def _lines(
    series: Mapping[str, Any], names: Sequence[str], key: str, title: str, unit: str
) -> go.Figure:
    figure = go.Figure()
    for n, name in enumerate(names):
        found = series[name]["series"].get(key)
        if found is not None:
            _add(figure, n, name, series[name]["time"], found)
    return layout(figure, f"{title} (mean over the seeds; band: least to greatest)", unit)


def _per_resource(
    series: Mapping[str, Any], names: Sequence[str], prefix: str, title: str
) -> list[tuple[str, go.Figure]]:
    """One plot per resource of the `prefix` series: requested solid, used dotted."""
    resources = dict.fromkeys(
        key.split(".")[1]
        for name in names
        for key in series[name]["series"]
        if key.startswith(f"{prefix}.")
    )
    plots = []
    for r, resource in enumerate(resources, start=1):
        figure = go.Figure()
        for n, name in enumerate(names):
            for what in WHAT:
                key = f"{prefix}.{resource}.{what}" + (".std" if prefix == "imbalance" else "")
                found = series[name]["series"].get(key)
                if found is not None:
                    label = f"{name} {what}"
                    band = what == "requested"
                    _add(figure, n, label, series[name]["time"], found, dash=DASH[what],
                         band=band, scale=True)  # fmt: skip
        plots.append((f"{prefix}-{r}", layout(figure, f"{resource}: {title}", "%")))
    return plots


def _distributions(summary: Mapping[str, Any]) -> list[tuple[str, go.Figure]]:
    """One panel per figure of DISTRIBUTIONS the comparison has: a box per variant, every
    seed's value a point."""
    names = [v["name"] for v in summary["variants"]]
    units = summary["units"]
    metrics = [m for m in DISTRIBUTIONS if m in units]
    if not metrics:
        return []
    rows = (len(metrics) + 1) // 2
    figure = make_subplots(rows=rows, cols=2, subplot_titles=metrics, vertical_spacing=0.3 / rows)
    layout(figure, "Over the seeds: each seed's figure a point", "", "")
    figure.update_layout(height=320 * rows)
    for k, metric in enumerate(metrics):
        scale = 100.0 if units[metric] == "fraction" else 1.0
        for n, name in enumerate(names):
            runs = [r for r in summary["runs"] if r["variant"] == name]
            values = [r["metrics"].get(metric) for r in runs]
            box = go.Box(
                y=[None if v is None else scale * v for v in values],
                text=[f"seed {r['seed']}" for r in runs],
                name=name, legendgroup=name, showlegend=k == 0, boxpoints="all", jitter=0.3,
                pointpos=0, marker={"color": _color(n)}, line={"color": _color(n)},
            )  # fmt: skip
            figure.add_trace(box, row=k // 2 + 1, col=k % 2 + 1)
        unit = "%" if scale != 1.0 else units[metric]
        figure.update_yaxes(title_text=unit, row=k // 2 + 1, col=k % 2 + 1)
    return [("distributions", figure)]
