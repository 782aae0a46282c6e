"""Benchmarks behind `pinnace bench …`, measured on real time (`time.perf_counter`).

Each benchmark returns its figures as a flat dict of named numbers per configuration (e.g. per
store backend); `render_table` shows them to a person, `json.dumps` to a program. A `Figure`
names one measurement and how it is labelled in the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Figures = dict[str, float | None]
"""One configuration's measurements, by figure key; None where a figure does not apply."""


@dataclass(frozen=True, slots=True)
class Figure:
    key: str
    label: str


def percentile(samples: Sequence[float], q: float) -> float:
    """The nearest-rank `q`-th percentile (0 < q <= 100) of `samples`, which must not be
    empty."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def per_second(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else math.inf


def render_table(
    title: str, figures: Sequence[Figure], columns: Mapping[str, Mapping[str, float | None]]
) -> str:
    """A plain-text table: one row per figure, one column per configuration ("-" where a
    figure does not apply)."""
    header = ["", *columns]
    rows = [
        [figure.label, *(_number(values[figure.key]) for values in columns.values())]
        for figure in figures
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [title, ""]
    for row in [header, *rows]:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _number(value: float | None) -> str:
    """Enough digits to compare, no more: 123,456 / 12.3 / 0.0123."""
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"
