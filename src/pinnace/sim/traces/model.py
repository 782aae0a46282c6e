"""What a trace source is once read: its options (`Trace`), the pods it records (`TracePod`),
the objects a Pinnace recording holds (`ObjectChange`) and the nodes that come and go
(`AddNode`, `RemoveNode`).

Times in these records are the trace's own, in seconds from its start; `Trace.at` maps one to
simulated time (scaled by `timeScale`, then shifted by `timeShift`) and `Trace.span` scales a
duration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.objects import Object
from pinnace.kubelet.config import NodeConfig

TRACE_LABEL = "sim.pinnace.dev/trace"
"""The label every object a trace replays carries: the trace workload's name."""
TRACE_ID = "sim.pinnace.dev/trace-id"
"""The annotation naming what the trace calls the object (its pod name, its instance id)."""


@dataclass(frozen=True)
class Condition:
    """One column of a trace's `filter`: a record is kept when its value is one of `values`
    (compared as numbers when both are numbers), or lies between `minimum` and `maximum`."""

    column: str
    values: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None

    def matches(self, cell: str) -> bool:
        cell = cell.strip()
        if self.values:
            return any(_same(cell, value) for value in self.values)
        number = _float(cell)
        if number is None:
            return False
        return (self.minimum is None or number >= self.minimum) and (
            self.maximum is None or number <= self.maximum
        )


def _same(cell: str, value: str) -> bool:
    if cell == value:
        return True
    a, b = _float(cell), _float(value)
    return a is not None and a == b


def _float(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True, slots=True)
class TracePod:
    """A pod as the trace records it. `number` counts the trace's pods in the order its files
    list them (from 1), whether or not the filter keeps them: the pod is named
    `<workload>-<number>`."""

    number: int
    key: str
    """What the trace calls it."""
    created: float
    requests: Mapping[str, str]
    limits: Mapping[str, str] = field(default_factory=dict)
    started: float | None = None
    """When it began to run in the trace; None: it never did."""
    run: float | None = None
    """Seconds it ran; None: until it was deleted, or past the trace's end."""
    exit_code: int = 0
    """How its container exits once `run` is over."""
    deleted: float | None = None
    """When it was deleted (a pod never scheduled, cancelled or killed); None: never."""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    """More behaviour annotations (its usage)."""
    priority_class: str | None = None
    node_affinity: tuple[str, tuple[str, ...]] | None = None
    """A label key and the values one of which a node must have for it."""


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """An object of a Pinnace recording created or changed (`obj`, as it is to be applied) or
    deleted (`obj` None) at `at`. `number` counts the recording's objects from 1."""

    at: float
    api_version: str
    kind: str
    namespace: str
    name: str
    number: int
    obj: Object | None


@dataclass(frozen=True, slots=True)
class AddNode:
    """A node that joins at simulated time `at` (its index is given when it joins)."""

    at: float
    config: NodeConfig


@dataclass(frozen=True, slots=True)
class RemoveNode:
    at: float
    name: str


NodeEvent = AddNode | RemoveNode


@dataclass(frozen=True)
class Trace:
    """A trace workload of a scenario (docs/simulation.md, "Trace replay"), read."""

    name: str
    format: str
    path: str
    namespace: str = "default"
    nodes: bool = True
    """Whether the trace's machines join the cluster."""
    filter: tuple[Condition, ...] = ()
    sample: float = 1.0
    time_shift: float = 0.0
    time_scale: float = 1.0
    limit: int | None = None
    initial_nodes: tuple[NodeConfig, ...] = ()
    """The machines present at simulated time zero (their index is the scenario's to give)."""
    node_events: tuple[NodeEvent, ...] = ()
    """Machines joining and leaving later, in order of simulated time."""
    objects: tuple[Object, ...] = ()
    """Objects the trace's pods need, applied before them (PriorityClasses)."""
    pods: tuple[TracePod, ...] = ()
    """In order of creation."""
    changes: tuple[ObjectChange, ...] = ()
    """A recording's objects, in order of time."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """The format's own options, as read."""

    def at(self, trace_seconds: float) -> float:
        """The simulated time of a time of the trace."""
        return trace_seconds * self.time_scale + self.time_shift

    def span(self, seconds: float) -> float:
        """A duration of the trace in simulated seconds."""
        return seconds * self.time_scale

    def keeps(self, row: Mapping[str, str]) -> bool:
        """Whether the filter keeps a record with these columns: a condition on a column the
        record has not (a column of another table of the trace) does not apply to it."""
        return all(c.matches(row[c.column]) for c in self.filter if c.column in row)
