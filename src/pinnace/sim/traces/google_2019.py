"""Google's cluster-data 2019, the Borg traces v3 (github.com/google/cluster-data,
clusterdata_trace_format_v3.proto): the `instance_events` and `machine_events` tables as
BigQuery exports them, newline-delimited JSON (gzip-compressed or not, in as many shards as the
export wrote). BigQuery writes 64-bit integers as strings ("time": "600000000"); either form is
read, and an enum by its number or its name.

Times are microseconds from the trace's start (its window opens at 600 s; 0 means before it,
2^63 - 1 after it). CPU and memory are normalised (1.0 being the largest machine's), so they
are scaled by `machineShape` (the cores and memory of a machine of capacity 1.0).

Machines: a machine present (ADD, not REMOVEd) at simulated time zero is a node of the pool
named after the workload, `m-<machine_id>`; one added or removed later joins or leaves then. A
capacity UPDATE reaches a node only when it next joins.

Instances (tasks, and alloc instances: filter on `collection_type` to keep one of them): each
becomes a pod created at its first SUBMIT, asking the `resource_request` it was last placed
with (of its latest SUBMIT, QUEUE, ENABLE, UPDATE_PENDING or SCHEDULE). One whose last event
is FINISH or FAIL runs from its first SCHEDULE to then and exits (0, or 1 for FAIL); one KILLed,
LOST or EVICTed for good is deleted then; one still scheduled runs on. Its `priority` picks a
PriorityClass of its tier (Borg's tiers: free up to 99, best-effort batch 110–115, mid 116–119,
production 120–359, monitoring 360 and above).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pinnace.api import field as fields
from pinnace.api.field import Path
from pinnace.api.objects import Object
from pinnace.kubelet.config import NodeConfig
from pinnace.sim import values
from pinnace.sim.traces.files import TraceFileError, json_lines, matching
from pinnace.sim.traces.model import AddNode, NodeEvent, RemoveNode, Trace, TracePod
from pinnace.sim.traces.options import Format
from pinnace.sim.traces.shapes import machine, millicores, node_name, quantity_bytes

MICROSECONDS = 1e6
AFTER_THE_TRACE = (1 << 63) - 1
SCHEDULING_CLASS = "sim.pinnace.dev/scheduling-class"
INSTANCE_EVENT_TYPES = (
    "SUBMIT",
    "QUEUE",
    "ENABLE",
    "SCHEDULE",
    "EVICT",
    "FAIL",
    "FINISH",
    "KILL",
    "LOST",
    "UPDATE_PENDING",
    "UPDATE_RUNNING",
)
SUBMIT, SCHEDULE = 0, 3
EVICT, FAIL, FINISH, KILL, LOST = 4, 5, 6, 7, 8
PLACED_WITH = {0, 1, 2, 3, 9}
"""The events whose request is what the instance asks when it is placed."""
ENDS = {EVICT, FAIL, FINISH, KILL, LOST}
MACHINE_EVENT_TYPES = ("EVENT_TYPE_UNKNOWN", "ADD", "REMOVE", "UPDATE")
ADD, REMOVE = 1, 2
COLUMNS = (
    "collection_id",
    "instance_index",
    "collection_type",
    "priority",
    "scheduling_class",
    "alloc_collection_id",
    "end",
)
TIERS = (
    # (name, lowest Borg priority, the PriorityClass's value and preemption policy)
    ("borg-free", 0, 0, "Never"),
    ("borg-best-effort-batch", 110, 110, "PreemptLowerPriority"),
    ("borg-mid", 116, 116, "PreemptLowerPriority"),
    ("borg-production", 120, 120, "PreemptLowerPriority"),
    ("borg-monitoring", 360, 360, "PreemptLowerPriority"),
)


def _options(raw: Mapping[str, Any], path: Path) -> dict[str, Any]:
    at = path.child("machineShape")
    if "machineShape" not in raw:
        values.fail(fields.required(at, "the cores and memory of a machine of capacity 1.0"))
    shape = values.mapping(raw["machineShape"], at, ("cpu", "memory"))
    read = {"cpu": values.cores, "memory": values.byte_count}
    result = {}
    for resource, reader in read.items():
        if resource not in shape:
            values.fail(fields.required(at.child(resource)))
        amount = reader(shape[resource], at.child(resource))
        if amount <= 0:
            values.fail(fields.invalid(at.child(resource), shape[resource], "must be above 0"))
        result[resource] = amount
    return result


def _read(trace: Trace, files: Mapping[str, str]) -> Trace:
    initial: tuple[NodeConfig, ...] = ()
    later: tuple[NodeEvent, ...] = ()
    if trace.nodes:
        initial, later = _machines(trace, matching(*_split(files["machine_events"])))
    instances: dict[tuple[str, str], _Instance] = {}
    for path in matching(*_split(files["instance_events"])):
        for line, event in json_lines(path):
            _note(instances, event, f"{path}:{line}")
    pods = []
    for number, instance in enumerate(instances.values(), 1):
        if trace.keeps(instance.cells()):
            pods.append(_pod(trace, instance, number))
    pods.sort(key=lambda p: (p.created, p.number))
    return replace(
        trace,
        initial_nodes=initial,
        node_events=later,
        objects=tuple(_priority_class(*tier) for tier in TIERS),
        pods=tuple(pods),
    )


def _split(pattern: str) -> tuple[str, str]:
    """A `files` entry as the directory and the name (or glob) in it."""
    return os.path.split(pattern)


# --- machines ---------------------------------------------------------------------------------


def _machines(
    trace: Trace, paths: list[str]
) -> tuple[tuple[NodeConfig, ...], tuple[NodeEvent, ...]]:
    events: list[tuple[float, int, str, int, Mapping[str, Any] | None]] = []
    for path in paths:
        for line, event in json_lines(path):
            where = f"{path}:{line}"
            time = _integer(event, "time", where)
            if time >= AFTER_THE_TRACE:
                continue
            kind = _enum(event, "type", MACHINE_EVENT_TYPES, where)
            capacity = event.get("capacity")
            machine_id = _text(event, "machine_id", where)
            shape = capacity if isinstance(capacity, dict) else None
            events.append((time / MICROSECONDS, len(events), machine_id, kind, shape))
    events.sort()
    present: dict[str, NodeConfig] = {}
    shapes: dict[str, NodeConfig] = {}
    initial: tuple[NodeConfig, ...] | None = None
    later: list[NodeEvent] = []
    for seconds, _, machine_id, kind, capacity in events:
        at = trace.at(seconds)
        if at > 0 and initial is None:
            initial = tuple(present.values())
        if capacity is not None:
            shapes[machine_id] = _node(trace, machine_id, capacity)
        if kind == ADD and machine_id not in present and machine_id in shapes:
            present[machine_id] = shapes[machine_id]
            if at > 0:
                later.append(AddNode(at, shapes[machine_id]))
        elif kind == REMOVE and machine_id in present:
            config = present.pop(machine_id)
            if at > 0:
                later.append(RemoveNode(at, config.name))
    return (tuple(present.values()) if initial is None else initial), tuple(later)


def _node(trace: Trace, machine_id: str, capacity: Mapping[str, Any]) -> NodeConfig:
    shape = trace.options
    cpus = _fraction(capacity.get("cpus"))
    memory = _fraction(capacity.get("memory"))
    resources = {
        "cpu": millicores(cpus * shape["cpu"]),
        "memory": quantity_bytes(memory * shape["memory"]),
    }
    return machine(trace, node_name(f"m-{machine_id}"), resources, {})


# --- instances --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Instance:
    collection_id: str
    instance_index: str
    attributes: dict[str, str] = field(default_factory=dict)
    submitted: float | None = None
    first_seen: float = float("inf")
    first_scheduled: float | None = None
    last_scheduled: float | None = None
    ended: float | None = None
    end: int = -1
    placed: float = -1.0
    request: Mapping[str, Any] | None = None

    def cells(self) -> dict[str, str]:
        end = INSTANCE_EVENT_TYPES[self.end] if self.is_over() else ""
        return {
            "collection_id": self.collection_id,
            "instance_index": self.instance_index,
            **self.attributes,
            "end": end,
        }

    def is_over(self) -> bool:
        return self.ended is not None and (
            self.last_scheduled is None or self.ended >= self.last_scheduled
        )


def _note(
    instances: dict[tuple[str, str], _Instance], event: Mapping[str, Any], where: str
) -> None:
    """Fold one instance event into its instance's record (the events may come in any order)."""
    time = _integer(event, "time", where)
    if time >= AFTER_THE_TRACE:
        return
    seconds = time / MICROSECONDS
    kind = _enum(event, "type", INSTANCE_EVENT_TYPES, where)
    key = (_text(event, "collection_id", where), _text(event, "instance_index", where))
    instance = instances.get(key)
    if instance is None:
        instance = instances[key] = _Instance(*key)
        for name in ("collection_type", "priority", "scheduling_class", "alloc_collection_id"):
            if event.get(name) is not None:
                instance.attributes[name] = str(event[name])
    instance.first_seen = min(instance.first_seen, seconds)
    if kind == SUBMIT:
        instance.submitted = min(instance.submitted or seconds, seconds)
    elif kind == SCHEDULE:
        instance.first_scheduled = min(instance.first_scheduled or seconds, seconds)
        instance.last_scheduled = max(instance.last_scheduled or seconds, seconds)
    elif kind in ENDS and (instance.ended is None or seconds >= instance.ended):
        instance.ended, instance.end = seconds, kind
    request = event.get("resource_request")
    if kind in PLACED_WITH and isinstance(request, dict) and seconds >= instance.placed:
        instance.placed, instance.request = seconds, request


def _pod(trace: Trace, instance: _Instance, number: int) -> TracePod:
    request = instance.request or {}
    requests = {
        "cpu": millicores(_fraction(request.get("cpus")) * trace.options["cpu"]),
        "memory": quantity_bytes(_fraction(request.get("memory")) * trace.options["memory"]),
    }
    created = instance.submitted if instance.submitted is not None else instance.first_seen
    started = instance.first_scheduled
    run: float | None = None
    deleted: float | None = None
    if instance.is_over():
        assert instance.ended is not None
        if started is not None and instance.end in (FINISH, FAIL):
            run = instance.ended - started
        else:
            deleted = instance.ended
    scheduling_class = instance.attributes.get("scheduling_class")
    return TracePod(
        number=number,
        key=f"{instance.collection_id}/{instance.instance_index}",
        created=created,
        requests=requests,
        started=started,
        run=run,
        exit_code=1 if instance.end == FAIL else 0,
        deleted=deleted,
        labels={SCHEDULING_CLASS: scheduling_class} if scheduling_class else {},
        priority_class=_tier(instance.attributes.get("priority")),
    )


def _tier(priority: str | None) -> str | None:
    if priority is None:
        return None
    try:
        value = int(priority)
    except ValueError:
        return None
    return [name for name, lowest, _, _ in TIERS if value >= lowest][-1]


def _priority_class(name: str, lowest: int, value: int, preemption: str) -> Object:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": preemption,
        "description": f"Borg priorities from {lowest} (google-2019 trace replay)",
    }


# --- values -----------------------------------------------------------------------------------


def _integer(event: Mapping[str, Any], name: str, where: str) -> int:
    value = event.get(name)
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TraceFileError(f"{where}: {name}: {value!r} is not a whole number") from None


def _text(event: Mapping[str, Any], name: str, where: str) -> str:
    value = event.get(name)
    if value is None or isinstance(value, dict | list):
        raise TraceFileError(f"{where}: {name}: missing")
    return str(value)


def _enum(event: Mapping[str, Any], name: str, names: tuple[str, ...], where: str) -> int:
    value = event.get(name)
    if isinstance(value, str) and value in names:
        return names.index(value)
    number = _integer(event, name, where)
    if not 0 <= number < len(names):
        raise TraceFileError(f"{where}: {name}: {value!r} is not one of {', '.join(names)}")
    return number


def _fraction(value: Any) -> float:
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return 0.0


FORMAT = Format(
    name="google-2019",
    files={"instance_events": "instance_events*.json*", "machine_events": "machine_events*.json*"},
    columns=COLUMNS,
    options=_options,
    option_names=("machineShape",),
    read=_read,
)
