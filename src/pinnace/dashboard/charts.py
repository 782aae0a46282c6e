"""The charts over time that the dashboard and the simulation's report both draw, as plotly
figure specs (`{"data": [traces], "layout": {...}}`), so that a user reads both the same way:
the same titles, axes and series names. The dashboard builds them from the usage history
(`metrics.history`), the report from the simulation's samples (`sim.html`).

`series` has the usage history's cluster series, by name (`time` and the others may be
missing): `cpu_requested`, `cpu_used`, `cpu_allocatable` (and memory's), `pods_running`,
`pods_pending`, `pods_scheduled`, `evictions`, `oom_kills`; `fragmentation` maps a pod
shape to its `time`, `cpu` and `memory` shares of the free capacity stranded. Values may be
None (no sample).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Values = Sequence[float | None]
CHART_IDS = ("history-utilisation", "history-pods", "history-churn", "history-fragmentation")
MARGIN = {"t": 30, "r": 10}


def over_time(
    series: Mapping[str, Values],
    fragmentation: Mapping[str, Mapping[str, Values]],
    resolution: float,
    xaxis: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """The four charts, by the id of the element each is drawn in; `resolution`: the seconds
    between samples, `xaxis`: the x axis' layout (the time's title or type)."""
    x = series.get("time", [])
    return {
        "history-utilisation": _figure(_utilisation(x, series), "% of allocatable", xaxis),
        "history-pods": _figure(_pods(x, series), "pods", xaxis),
        "history-churn": _figure(
            _churn(x, series, f" per {resolution:g} s"),
            "scheduling, evictions and OOM kills",
            xaxis,
        ),
        "history-fragmentation": _figure(
            _stranded(fragmentation),
            "free capacity that cannot hold one more pod of each shape",
            xaxis,
            "% of free",
        ),
    }


def _figure(
    data: list[dict[str, Any]], title: str, xaxis: Mapping[str, Any], y: str = ""
) -> dict[str, Any]:
    yaxis: dict[str, Any] = {"rangemode": "tozero"} | ({"title": {"text": y}} if y else {})
    layout = {"title": {"text": title}, "margin": MARGIN, "xaxis": dict(xaxis), "yaxis": yaxis}
    return {"data": data, "layout": layout}


def _line(x: Values, y: Values, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "scatter", "x": list(x), "y": list(y), "name": name, "mode": "lines",
            "connectgaps": False, **extra}  # fmt: skip


def _share(part: Values, whole: Values) -> list[float | None]:
    return [None if p is None or not w else 100 * p / w for p, w in zip(part, whole, strict=True)]


def _utilisation(x: Values, s: Mapping[str, Values]) -> list[dict[str, Any]]:
    traces = []
    for r in ("cpu", "memory"):
        if f"{r}_allocatable" in s:
            whole = s[f"{r}_allocatable"]
            traces.append(_line(x, _share(s[f"{r}_requested"], whole), f"{r} requested"))
            used = _share(s[f"{r}_used"], whole)
            traces.append(_line(x, used, f"{r} used", line={"dash": "dot"}))
    return traces


def _pods(x: Values, s: Mapping[str, Values]) -> list[dict[str, Any]]:
    traces = [_line(x, s.get("pods_running", []), "running")]
    if "pods_pending" in s:
        traces.append(_line(x, s["pods_pending"], "pending"))
    return traces


def _churn(x: Values, s: Mapping[str, Values], per: str) -> list[dict[str, Any]]:
    traces = [_line(x, s.get("evictions", []), "evictions" + per),
              _line(x, s.get("oom_kills", []), "OOM kills" + per)]  # fmt: skip
    if "pods_scheduled" in s:
        traces.insert(0, _line(x, s["pods_scheduled"], "pods scheduled" + per))
    return traces


def _stranded(fragmentation: Mapping[str, Mapping[str, Values]]) -> list[dict[str, Any]]:
    traces = []
    for shape, f in fragmentation.items():
        for r in ("cpu", "memory"):
            if any(v is not None for v in f[r]):
                y = [None if v is None else 100 * v for v in f[r]]
                traces.append(_line(f["time"], y, f"{shape} {r}"))
    return traces
