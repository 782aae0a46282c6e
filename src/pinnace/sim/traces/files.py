"""Reading trace files a line at a time: CSV with a header line or with the columns a schema
gives, and newline-delimited JSON, each optionally gzip-compressed (a name ending in `.gz`).
Nothing is read whole: a row is parsed, looked at and dropped before the next is read.

A bad line is a `TraceFileError` naming the file, the line and the column:
`pods.csv:12: column cpu_milli: "x" is not a number`.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any


class TraceFileError(ValueError):
    """A trace file that cannot be read, or a line of it that does not hold."""


def open_text(path: str) -> IO[str]:
    try:
        if path.endswith(".gz"):
            return gzip.open(path, "rt", encoding="utf-8", newline="")
        return open(path, encoding="utf-8", newline="")
    except OSError as e:
        raise TraceFileError(f"{path}: {e.strerror}") from None


def matching(directory: str, pattern: str) -> list[str]:
    """The files of `directory` that `pattern` (a name, or a glob such as
    `instance_events-*.json.gz`) names, in name order; at least one."""
    found = sorted(glob.glob(os.path.join(directory, pattern)))
    if not found:
        raise TraceFileError(f"{os.path.join(directory, pattern)}: no such file")
    return found


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a table: its cells by column."""

    source: str
    line: int
    cells: Mapping[str, str]

    def error(self, message: str) -> TraceFileError:
        return TraceFileError(f"{self.source}:{self.line}: {message}")

    def text(self, column: str) -> str:
        return self.cells.get(column, "").strip()

    def number(self, column: str, default: float | None = None) -> float:
        """The cell as a number; an empty cell is `default` (or an error if there is none)."""
        text = self.text(column)
        if not text and default is not None:
            return default
        try:
            value = float(text)
        except ValueError:
            raise self.error(f'column {column}: "{text}" is not a number') from None
        if not math.isfinite(value):
            raise self.error(f'column {column}: "{text}" is not a number')
        return value

    def optional(self, column: str) -> float | None:
        """The cell as a number, or None when it is empty (or NaN, as pandas writes one)."""
        text = self.text(column)
        if not text or text.lower() == "nan":
            return None
        return self.number(column)


def csv_rows(path: str, columns: Sequence[str] | None = None) -> Iterator[Row]:
    """The rows of a CSV file: named by its header line, or by `columns` when it has none."""
    with open_text(path) as f:
        reader = csv.reader(f)
        names = list(columns) if columns is not None else _header(reader, path)
        for cells in reader:
            if not cells or cells == [""]:
                continue
            if len(cells) != len(names):
                raise TraceFileError(
                    f"{path}:{reader.line_num}: {len(cells)} columns, expected {len(names)} "
                    f"({','.join(names)})"
                )
            yield Row(path, reader.line_num, dict(zip(names, cells, strict=True)))


def header(path: str) -> list[str]:
    """The column names of a CSV file's header line."""
    with open_text(path) as f:
        return _header(csv.reader(f), path)


def _header(reader: Any, path: str) -> list[str]:
    for cells in reader:
        return [c.strip() for c in cells]
    raise TraceFileError(f"{path}: empty file, expected a header line")


def require_columns(path: str, found: Sequence[str], needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in found]
    if missing:
        raise TraceFileError(f"{path}:1: no column {', '.join(missing)} in the header line")


def json_lines(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The objects of a newline-delimited JSON file, each with its line number."""
    with open_text(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as e:
                raise TraceFileError(f"{path}:{number}: not JSON: {e}") from None
            if not isinstance(value, dict):
                raise TraceFileError(f"{path}:{number}: expected a JSON object")
            yield number, value
