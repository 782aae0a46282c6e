"""report.html: one self-contained page (plotly.js inline, so it opens with no network) with
the summary and the plots a capacity planner reads: utilisation over time per resource
(requested and used, over the cluster and per pool), pods pending over time, the nodes of each
pool over time (and what they cost an hour, when the pools have a cost), requested over
allocatable per node at the end, evictions and failures on the timeline, FailedScheduling
reasons per interval, and the dashboard's charts over time (`pinnace.dashboard.charts`: the
cluster's utilisation, pods running and pending, scheduling, evictions and OOM kills per
interval, fragmentation per shape), drawn from the samples with the same titles, axes and
series names.

Plotly writes the figures; every plot's element has a fixed id (PLOT_IDS, plus one
`utilisation-<n>` per resource), so the page is the same for the same report.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go  # type: ignore[import-untyped]
import plotly.io as pio  # type: ignore[import-untyped]
from plotly.offline import get_plotlyjs  # type: ignore[import-untyped]

from pinnace.dashboard import charts
from pinnace.sim.tables import CLUSTER, Table, scope_name

if TYPE_CHECKING:
    from pinnace.sim.report import Report

PLOT_IDS = ("pods", "nodes", "nodes-heatmap", "timeline", "failed-scheduling", *charts.CHART_IDS)
"""The plots besides utilisation, one per resource (`utilisation-1`, ...)."""
CONFIG = {"displaylogo": False, "responsive": True}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
th { background: #f3f3f3; }
.plot { height: 420px; margin-bottom: 1em; }
"""


def render(report: Report) -> str:
    """The page, as text."""
    summary = report.summary
    title = f"Pinnace simulation: {summary['scenario']}"
    plots = [
        *_utilisation(report),
        ("pods", _pods(report.timeseries)),
        ("nodes", _nodes(report.timeseries)),
        ("nodes-heatmap", _heatmap(report.nodes, summary)),
        ("timeline", _timeline(report.incidents)),
        ("failed-scheduling", _failed_scheduling(report.timeseries)),
        *dashboard_charts(report),
    ]
    return page(title, _summary_tables(summary), plots)


def page(title: str, body: str, plots: Sequence[tuple[str, go.Figure]]) -> str:
    """A self-contained page: `title`, the HTML `body`, then each plot in a div of its id."""
    divs = "\n".join(
        pio.to_html(
            figure,
            config=CONFIG,
            include_plotlyjs=False,
            full_html=False,
            div_id=plot_id,
            default_height="420px",
        )
        for plot_id, figure in plots
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{STYLE}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head>
<body>
<h1>{html.escape(title)}</h1>
{body}
{divs}
</body>
</html>
"""


# --- the summary -----------------------------------------------------------------------------


def table(rows: Iterable[Sequence[Any]], head: tuple[str, ...] = ()) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    out = [f"<tr>{cells}</tr>"] if head else []
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(_text(v))}</td>" for v in row) + "</tr>")
    return "<table>" + "".join(out) + "</table>"


def _text(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _percent(stats: dict[str, float] | None) -> tuple[str, str, str]:
    if stats is None:
        return ("–", "–", "–")
    return tuple(f"{100 * stats[k]:.1f} %" for k in ("mean", "p95", "max"))  # type: ignore[return-value]


def _summary_tables(s: dict[str, Any]) -> str:
    pods, latency, running = s["pods"], s["schedulingLatencySeconds"], s["timeToRunningSeconds"]
    facts = [
        ("scenario", s["scenario"]),
        ("seed", s["seed"]),
        ("simulated seconds", s["simulatedSeconds"]),
        ("wall seconds", s["wallSeconds"]),
        ("speed-up", s["speedup"]),
        ("event log SHA-256", s["eventLogSha256"]),
        ("nodes at the end (ready)", f"{s['nodes']['atEnd']} ({s['nodes']['ready']})"),
        *((f"pods {k}", v) for k, v in pods.items()),
        ("FailedScheduling events", s["failedScheduling"]["events"]),
        *((f"FailedScheduling: {why}", n) for why, n in s["failedScheduling"]["reasons"].items()),
        ("preemptions", s["preemptions"]),
        ("evictions", s["evictions"]["total"]),
        *((f"evictions: {why}", n) for why, n in s["evictions"]["byReason"].items()),
        ("arrivals refused", s["refusedArrivals"]["total"]),
        *((f"arrivals refused: {w}", n) for w, n in s["refusedArrivals"]["byWorkload"].items()),
        ("OOM kills", s["oomKills"]),
        ("restarts", s["restarts"]),
        ("scheduling latency p50 / p90 / p99 (s)", _triple(latency)),
        ("time to running p50 / p90 / p99 (s)", _triple(running)),
        *_cost_facts(s.get("cost")),
    ]
    utilisation = []
    scopes = [(CLUSTER, s["utilisation"][CLUSTER])]
    scopes += [(scope_name(p), u) for p, u in s["utilisation"]["pools"].items()]
    for scope, resources in scopes:
        for resource, figures in resources.items():
            requested, used = _percent(figures["requested"]), _percent(figures["used"])
            utilisation.append((scope, resource, *requested, *used))
    head = ("scope", "resource", "requested mean", "p95", "max", "used mean", "p95", "max")
    return (
        "<h2>Summary</h2>"
        + table(facts)
        + "<h2>Utilisation (of allocatable)</h2>"
        + table(utilisation, head)
    )


def _cost_facts(cost: dict[str, Any] | None) -> list[tuple[str, Any]]:
    if cost is None:
        return []
    hours = [(f"node-hours: {pool}", f"{h:.2f}") for pool, h in cost["nodeHours"].items()]
    return [*hours, ("cost of the nodes", f"{cost['total']:.2f}")]


def _triple(stats: dict[str, Any]) -> str:
    return " / ".join(_text(stats[k]) for k in ("p50", "p90", "p99"))


# --- the plots -------------------------------------------------------------------------------


def layout(figure: go.Figure, title: str, y: str, x: str = "simulated seconds") -> go.Figure:
    figure.update_layout(
        title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=420
    )
    return figure


def _share(series: Table, name: str, of: str) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * series.column(name) / series.column(of)


def _utilisation(report: Report) -> list[tuple[str, go.Figure]]:
    series = report.timeseries
    time = series.column("time")
    pools = list(report.summary["utilisation"]["pools"])
    plots = []
    for n, resource in enumerate(report.summary["utilisation"][CLUSTER], start=1):
        figure = go.Figure()
        for scope in (CLUSTER, *map(scope_name, pools)):
            allocatable = f"{scope}.{resource}.allocatable"
            for what, dash in (("requested", "solid"), ("used", "dot")):
                name = f"{scope}.{resource}.{what}"
                if name in series.columns:
                    y = _share(series, name, allocatable)
                    width = 3 if scope == CLUSTER else 1.5
                    line = {"dash": dash, "width": width}
                    figure.add_trace(go.Scatter(x=time, y=y, name=f"{scope} {what}", line=line))
        title = f"{resource}: requested and used, % of allocatable"
        plots.append((f"utilisation-{n}", layout(figure, title, "%")))
    return plots


def _pods(series: Table) -> go.Figure:
    figure = go.Figure()
    time = series.column("time")
    for phase in ("Pending", "Unscheduled", "Running"):
        figure.add_trace(go.Scatter(x=time, y=series.column(f"pods.{phase}"), name=phase))
    return layout(figure, "Pods pending (of which not yet bound) and running", "pods")


def _nodes(series: Table) -> go.Figure:
    """Each pool's nodes over time; what they cost an hour on a second axis."""
    figure = go.Figure()
    time = series.column("time")
    for name in series.columns:
        if name.startswith("pool:") and name.endswith(".nodes"):
            pool = name.removeprefix("pool:").removesuffix(".nodes")
            figure.add_trace(go.Scatter(x=time, y=series.column(name), name=pool, line_shape="hv"))
    if "cost.perHour" in series.columns:
        figure.add_trace(
            go.Scatter(
                x=time,
                y=series.column("cost.perHour"),
                name="cost per hour",
                yaxis="y2",
                line={"dash": "dot"},
                line_shape="hv",
            )
        )
        figure.update_layout(
            yaxis2={
                "title": "cost per hour",
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
            }
        )
    figure.update_layout(yaxis={"rangemode": "tozero"})
    return layout(figure, "Nodes per pool (and their cost per hour)", "nodes")


def _heatmap(nodes: Table, summary: dict[str, Any]) -> go.Figure:
    resources = list(summary["utilisation"][CLUSTER])
    at = {name: i for i, name in enumerate(nodes.columns)}
    rows = sorted(nodes.rows, key=lambda r: (str(r[at["pool"]]), str(r[at["name"]])))
    names = [f"{r[at['name']]} ({r[at['pool']]})" if r[at["pool"]] else r[at["name"]] for r in rows]
    z, text = [], []
    for row in rows:
        ratios, labels = [], []
        for resource in resources:
            requested = row[at[f"{resource}.requested"]]
            allocatable = row[at[f"{resource}.allocatable"]]
            ok = isinstance(allocatable, int | float) and allocatable > 0
            ratios.append(100 * float(requested) / float(allocatable) if ok else None)  # type: ignore[arg-type]
            labels.append(f"{requested} of {allocatable}")
        z.append(ratios)
        text.append(labels)
    figure = go.Figure(
        go.Heatmap(
            z=z,
            x=resources,
            y=names,
            text=text,
            zmin=0,
            zmax=100,
            colorscale="Viridis",
            colorbar={"title": "%"},
            hovertemplate="%{y}<br>%{x}: %{text} (%{z:.1f} %)<extra></extra>",
        )
    )
    return layout(figure, "Requested, % of allocatable, per node at the end", "node", "resource")


def _timeline(incidents: Table) -> go.Figure:
    figure = go.Figure()
    by_kind: dict[str, tuple[list[float], list[str]]] = {}
    for time, kind, subject in incidents.rows:
        times, subjects = by_kind.setdefault(str(kind), ([], []))
        times.append(float(time))  # type: ignore[arg-type]
        subjects.append(str(subject))
    for kind, (times, subjects) in sorted(by_kind.items()):
        figure.add_trace(
            go.Scatter(
                x=times,
                y=[kind] * len(times),
                text=subjects,
                mode="markers",
                name=kind,
                hovertemplate="%{text} at %{x} s<extra>%{y}</extra>",
            )
        )
    return layout(figure, "Evictions, OOM kills, failures and node changes", "")


def _failed_scheduling(series: Table) -> go.Figure:
    figure = go.Figure()
    time = series.column("time")
    prefix = "failedScheduling."
    for name in series.columns:
        if name.startswith(prefix):
            figure.add_trace(go.Bar(x=time, y=series.column(name), name=name[len(prefix) :]))
    figure.update_layout(barmode="stack")
    return layout(figure, "FailedScheduling reasons per interval", "events")


def dashboard_charts(report: Report) -> list[tuple[str, go.Figure]]:
    """The dashboard's charts over time, of the samples: the counts are of what happened in
    the interval each sample ends (pods bound; disruptions; containers OOM-killed)."""
    series = report.timeseries
    time = series.column("time")
    found: dict[str, Any] = {"time": time}
    for resource in ("cpu", "memory"):
        for what in ("requested", "used", "allocatable"):
            column = f"{CLUSTER}.{resource}.{what}"
            if column in series.columns:
                found[f"{resource}_{what}"] = series.column(column)
    for name, column in (("pods_running", "pods.Running"), ("pods_pending", "pods.Pending")):
        if column in series.columns:
            found[name] = series.column(column)
    incidents = [(float(at), str(kind)) for at, kind, _ in report.incidents.rows]  # type: ignore[arg-type]
    ooms = [at for at, kind in incidents if kind == "OOMKilled"]
    disrupted = [at for at, kind in incidents if kind not in NOT_DISRUPTIONS]
    found["pods_scheduled"] = _per_interval(report.pods.column("scheduled"), time)
    found["evictions"] = _per_interval(np.array(disrupted, dtype=float), time)
    found["oom_kills"] = _per_interval(np.array(ooms, dtype=float), time)
    stranded: dict[str, dict[str, Any]] = {}
    for name in series.columns:
        if name.startswith("stranded."):
            shape, resource = name.removeprefix("stranded.").rsplit(".", 1)
            if resource in ("cpu", "memory"):
                stranded.setdefault(shape, {"time": time, "cpu": [], "memory": []})
                stranded[shape][resource] = series.column(name)
    xaxis = {"title": {"text": "simulated seconds"}}
    interval = report.summary["sampleIntervalSeconds"]
    specs = charts.over_time(_plain(found), {k: _plain(v) for k, v in stranded.items()},
                             interval, xaxis)  # fmt: skip
    return [(i, go.Figure(f).update_layout(template="plotly_white")) for i, f in specs.items()]


NOT_DISRUPTIONS = ("OOMKilled", "PodFailed", "NodeAdded", "NodeReady", "NodeNotReady",
                   "NodeDeleted")  # fmt: skip
"""The incidents that are not a pod evicted, preempted or deleted by a controller."""


def _per_interval(times: Any, samples: Any) -> Any:
    """How many of `times` (NaN: never) fall in each interval a sample ends."""
    done = np.sort(times[~np.isnan(times)])
    return np.diff(np.searchsorted(done, samples, side="right"), prepend=0).astype(float)


def _plain(columns: dict[str, Any]) -> dict[str, list[float | None]]:
    """JSON-ready: NaN becomes None."""
    return {name: [None if np.isnan(v) else float(v) for v in values]
            for name, values in columns.items()}  # fmt: skip
