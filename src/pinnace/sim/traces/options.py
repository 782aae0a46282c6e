"""The `trace` of a scenario's workload (docs/simulation.md, "Trace replay"): its options read
and checked, then its files read (`Trace`), before anything runs.

    workloads:
    - name: openb
      trace:
        format: alibaba-gpu-2023
        path: traces/openb
        filter: {qos: [LS, Burstable], num_gpu: {min: 1}}
        sample: 0.5
        timeShift: -2400h
        timeScale: 0.01

Each format is a `Format`: its files (each a name, or a glob, inside `path`), its own options
and the columns a filter may name, and the function that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api import field as fields
from pinnace.api.field import Path
from pinnace.api.names import is_dns1123_label
from pinnace.api.validation import is_int
from pinnace.sim import values
from pinnace.sim.traces.files import TraceFileError
from pinnace.sim.traces.model import Condition, Trace

COMMON_FIELDS = (
    "format",
    "path",
    "files",
    "namespace",
    "nodes",
    "filter",
    "sample",
    "timeShift",
    "timeScale",
    "limit",
)


@dataclass(frozen=True)
class Format:
    name: str
    files: Mapping[str, str]
    """Table -> its file's name (or glob) in the trace's directory; empty: `path` is the one
    file."""
    columns: tuple[str, ...]
    """What a filter may name."""
    options: Callable[[Mapping[str, Any], Path], dict[str, Any]]
    """Reads the format's own options (given only those) into `Trace.options`."""
    option_names: tuple[str, ...]
    read: Callable[[Trace, Mapping[str, str]], Trace]
    """The trace with its machines and pods (or objects) read from the files."""


def parse_trace(raw: Any, path: Path, name: str, base: str, formats: Mapping[str, Format]) -> Trace:
    """The trace `raw` (the `trace` mapping of the workload `name`) describes, its files read;
    relative paths are relative to `base`."""
    raw = values.mapping(raw, path, (*COMMON_FIELDS, *_all_options(formats)))
    format_name = values.string(raw.get("format"), path.child("format"))
    if format_name not in formats:
        values.fail(fields.not_supported(path.child("format"), format_name, sorted(formats)))
    trace_format = formats[format_name]
    for key in raw:
        if key not in COMMON_FIELDS and key not in trace_format.option_names:
            detail = f"not an option of format {format_name}"
            values.fail(fields.forbidden(path.child(key), detail))
    location = os.path.join(base, values.string(raw.get("path"), path.child("path")))
    files = _files(raw.get("files"), path, trace_format, location)
    trace = Trace(
        name=name,
        format=format_name,
        path=location,
        namespace=_namespace(raw.get("namespace", "default"), path.child("namespace")),
        nodes=_boolean(raw.get("nodes", True), path.child("nodes")),
        filter=_filter(raw.get("filter"), path.child("filter"), trace_format.columns),
        sample=_fraction(raw.get("sample", 1), path.child("sample")),
        time_shift=values.seconds(raw.get("timeShift", 0), path.child("timeShift"), signed=True),
        time_scale=_scale(raw.get("timeScale", 1), path.child("timeScale")),
        limit=_limit(raw.get("limit"), path.child("limit")),
        options=trace_format.options(
            {k: v for k, v in raw.items() if k in trace_format.option_names}, path
        ),
    )
    try:
        return trace_format.read(trace, files)
    except TraceFileError as e:
        values.fail_at(path.child("path"), str(e))


def _all_options(formats: Mapping[str, Format]) -> tuple[str, ...]:
    return tuple(sorted({o for f in formats.values() for o in f.option_names}))


def _files(raw: Any, trace: Path, trace_format: Format, location: str) -> dict[str, str]:
    """Table -> the path (or glob) of its file."""
    path = trace.child("files")
    if raw is not None and not trace_format.files:
        values.fail(fields.forbidden(path, "the format's path is its one file"))
    given = values.mapping(raw, path, tuple(trace_format.files))
    if not trace_format.files:
        if not os.path.isfile(location):
            values.fail_at(trace.child("path"), f"{location}: no such file")
        return {}
    if not os.path.isdir(location):
        values.fail_at(trace.child("path"), f"{location}: no such directory")
    names = {**trace_format.files}
    for table, name in given.items():
        names[table] = values.string(name, path.child(table))
    return {table: os.path.join(location, name) for table, name in names.items()}


def _namespace(raw: Any, path: Path) -> str:
    namespace = values.string(raw, path)
    for message in is_dns1123_label(namespace):
        values.fail(fields.invalid(path, namespace, message))
    return namespace


def _boolean(raw: Any, path: Path) -> bool:
    if not isinstance(raw, bool):
        values.fail(fields.type_invalid(path, raw, "must be true or false"))
    return raw


def _fraction(raw: Any, path: Path) -> float:
    value = values.number(raw, path)
    if not 0 < value <= 1:
        values.fail(fields.invalid(path, raw, "must be greater than 0 and at most 1"))
    return value


def _scale(raw: Any, path: Path) -> float:
    value = values.number(raw, path)
    if value <= 0:
        values.fail(fields.invalid(path, raw, "must be greater than 0"))
    return value


def _limit(raw: Any, path: Path) -> int | None:
    if raw is None:
        return None
    if not is_int(raw) or raw < 1:
        values.fail(fields.invalid(path, raw, "must be a whole number, at least 1"))
    return int(raw)


def _filter(raw: Any, path: Path, columns: tuple[str, ...]) -> tuple[Condition, ...]:
    conditions = []
    for column, wanted in values.mapping(raw, path, columns).items():
        at = path.child(column)
        if isinstance(wanted, dict):
            bounds = values.mapping(wanted, at, ("min", "max"))
            if not bounds:
                values.fail(fields.required(at, "min, max or both"))
            low = values.number(bounds["min"], at.child("min")) if "min" in bounds else None
            high = values.number(bounds["max"], at.child("max")) if "max" in bounds else None
            if low is not None and high is not None and low > high:
                values.fail(fields.invalid(at, wanted, "min must not be greater than max"))
            conditions.append(Condition(column, minimum=low, maximum=high))
            continue
        items = wanted if isinstance(wanted, list) else [wanted]
        if not items:
            values.fail(fields.required(at, "a value, a list of values, or {min, max}"))
        for i, item in enumerate(items):
            if not isinstance(item, str | int | float) or isinstance(item, bool):
                where = at.index(i) if isinstance(wanted, list) else at
                values.fail(fields.type_invalid(where, item, "must be a string or a number"))
        conditions.append(Condition(column, values=tuple(_text(item) for item in items)))
    return tuple(conditions)


def _text(value: str | int | float) -> str:
    return value if isinstance(value, str) else f"{value:g}"
