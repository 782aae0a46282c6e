"""Alibaba's cluster-trace-v2018 (github.com/alibaba/clusterdata, cluster-trace-v2018): CSV
files without a header line, their columns in the order of the release's schema.txt. Its
trace_2018.md lists container_meta, batch_task and batch_instance in another order (the
deploy unit before the time stamp; task_type before job_name); the files follow schema.txt, as
their lines show (`c_1,m_2556,0,app_5052,started,400,400,1.56`), so this reads them so.

    machine_meta     machine_id,time_stamp,failure_domain_1,failure_domain_2,cpu_num,mem_size,
                     status
    container_meta   container_id,machine_id,time_stamp,app_du,status,cpu_request,cpu_limit,
                     mem_size
    batch_task       task_name,instance_num,job_name,task_type,status,start_time,end_time,
                     plan_cpu,plan_mem
    batch_instance   instance_name,task_name,job_name,task_type,status,start_time,end_time,
                     machine_id,seq_no,total_seq_no,cpu_avg,cpu_max,mem_avg,mem_max

Times are seconds from the trace's start; 0 means before (or, for an end, after) its eight
days. CPU is in hundredths of a core (`cpu_num` in cores); memory is normalised, 100 being
the largest machine's, whose size `machineShape.memory` says.

Every machine becomes a node (its first line's `cpu_num` and `mem_size`; `failure_domain_1`
its zone). Every container (an online service; its first line) is a pod created at its
`time_stamp` that runs on. Every batch instance is a pod created at its `start_time`,
asking what its task plans (`plan_cpu`, `plan_mem`), using its `cpu_avg` and `mem_avg`, running
until its `end_time` and exiting (1 if Failed); a Cancelled or Interrupted one is deleted then.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pinnace.api import field as fields
from pinnace.api.field import Path
from pinnace.kubelet import behaviour
from pinnace.kubelet.config import NodeConfig
from pinnace.sim import values
from pinnace.sim.traces.files import Row, csv_rows
from pinnace.sim.traces.model import Trace, TracePod
from pinnace.sim.traces.options import Format
from pinnace.sim.traces.shapes import machine, millicores, node_name, quantity_bytes

ZONE_LABEL = "topology.kubernetes.io/zone"
FAILURE_DOMAIN_2 = "sim.pinnace.dev/failure-domain-2"
DEPLOY_UNIT = "sim.pinnace.dev/deploy-unit"
MACHINE_META = (
    "machine_id",
    "time_stamp",
    "failure_domain_1",
    "failure_domain_2",
    "cpu_num",
    "mem_size",
    "status",
)
CONTAINER_META = (
    "container_id",
    "machine_id",
    "time_stamp",
    "app_du",
    "status",
    "cpu_request",
    "cpu_limit",
    "mem_size",
)
BATCH_TASK = (
    "task_name",
    "instance_num",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
)
BATCH_INSTANCE = (
    "instance_name",
    "task_name",
    "job_name",
    "task_type",
    "status",
    "start_time",
    "end_time",
    "machine_id",
    "seq_no",
    "total_seq_no",
    "cpu_avg",
    "cpu_max",
    "mem_avg",
    "mem_max",
)
TABLES = ("containers", "batch")
DELETED = ("Cancelled", "Interrupted")
FULL = 100.0
"""A normalised memory size of the largest machine; also a core in CPU columns."""


def _options(raw: Mapping[str, Any], path: Path) -> dict[str, Any]:
    at = path.child("machineShape")
    if "machineShape" not in raw:
        values.fail(fields.required(at, "the memory of the largest machine (mem_size 100)"))
    shape = values.mapping(raw["machineShape"], at, ("memory",))
    if "memory" not in shape:
        values.fail(fields.required(at.child("memory")))
    memory = values.byte_count(shape["memory"], at.child("memory"))
    if memory <= 0:
        values.fail(fields.invalid(at.child("memory"), shape["memory"], "must be above 0"))
    include = raw.get("include", list(TABLES))
    items = values.list_of(include, path.child("include"))
    for i, table in enumerate(items):
        if table not in TABLES:
            values.fail(fields.not_supported(path.child("include").index(i), table, TABLES))
    return {"memory": memory, "include": tuple(t for t in TABLES if t in items)}


def _read(trace: Trace, files: Mapping[str, str]) -> Trace:
    nodes = tuple(_machines(trace, files["machine_meta"])) if trace.nodes else ()
    pods: list[TracePod] = []
    number = 0
    if "containers" in trace.options["include"]:
        for row in _first_lines(csv_rows(files["container_meta"], CONTAINER_META)):
            number += 1
            if trace.keeps(row.cells):
                pods.append(_container(trace, row, number))
    if "batch" in trace.options["include"]:
        plans = _plans(files["batch_task"])
        for row in csv_rows(files["batch_instance"], BATCH_INSTANCE):
            number += 1
            plan = plans.get((row.text("job_name"), row.text("task_name")))
            cells = {**row.cells, "plan_cpu": plan[0], "plan_mem": plan[1]} if plan else row.cells
            if trace.keeps(cells):
                pods.append(_instance(trace, replace(row, cells=cells), number))
    pods.sort(key=lambda p: (p.created, p.number))
    return replace(trace, initial_nodes=nodes, pods=tuple(pods))


def _machines(trace: Trace, path: str) -> Iterator[NodeConfig]:
    seen: set[str] = set()
    memory = trace.options["memory"]
    for row in csv_rows(path, MACHINE_META):
        machine_id = row.text("machine_id")
        cpus, size = row.optional("cpu_num"), row.optional("mem_size")
        if machine_id in seen or not cpus or not size or not 0 < size <= FULL:
            continue  # a later line of the machine, or a line with an invalid shape
        seen.add(machine_id)
        try:
            name = node_name(machine_id)
        except ValueError as e:
            raise row.error(str(e)) from None
        labels = {
            key: value
            for key, value in (
                (ZONE_LABEL, row.text("failure_domain_1")),
                (FAILURE_DOMAIN_2, row.text("failure_domain_2")),
            )
            if value
        }
        capacity = {"cpu": millicores(cpus), "memory": quantity_bytes(memory * size / FULL)}
        yield machine(trace, name, capacity, labels)


def _first_lines(rows: Iterator[Row]) -> Iterator[Row]:
    """Each container's earliest line, in the order the containers first appear."""
    first: dict[str, Row] = {}
    for row in rows:
        known = first.get(row.text("container_id"))
        if known is None or row.number("time_stamp") < known.number("time_stamp"):
            first[row.text("container_id")] = row
    return iter(first.values())


def _container(trace: Trace, row: Row, number: int) -> TracePod:
    memory = quantity_bytes(trace.options["memory"] * row.number("mem_size", 0) / FULL)
    requests = {"cpu": millicores(row.number("cpu_request", 0) / FULL), "memory": memory}
    limit = row.number("cpu_limit", 0)
    unit = row.text("app_du")
    return TracePod(
        number=number,
        key=row.text("container_id"),
        created=row.number("time_stamp"),
        requests=requests,
        limits={"cpu": millicores(limit / FULL)} if limit > 0 else {},
        started=row.number("time_stamp"),
        labels={DEPLOY_UNIT: unit} if unit else {},
    )


def _plans(path: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(job, task) -> what the task plans for each instance: (plan_cpu, plan_mem)."""
    return {
        (row.text("job_name"), row.text("task_name")): (row.text("plan_cpu"), row.text("plan_mem"))
        for row in csv_rows(path, BATCH_TASK)
    }


def _instance(trace: Trace, row: Row, number: int) -> TracePod:
    memory = trace.options["memory"]
    requests = {}
    cpu, mem = row.optional("plan_cpu"), row.optional("plan_mem")
    if cpu:
        requests["cpu"] = millicores(cpu / FULL)
    if mem:
        requests["memory"] = quantity_bytes(memory * mem / FULL)
    usage = {}
    cpu_avg, mem_avg = row.optional("cpu_avg"), row.optional("mem_avg")
    if cpu_avg:
        usage[behaviour.CPU] = millicores(cpu_avg / FULL)
    if mem_avg:
        usage[behaviour.MEMORY] = quantity_bytes(memory * mem_avg / FULL)
    start, end = row.number("start_time", 0), row.number("end_time", 0)
    ended = end > start
    status = row.text("status")
    deleted = ended and status in DELETED
    return TracePod(
        number=number,
        key=f"{row.text('job_name')}/{row.text('task_name')}/{row.text('instance_name')}",
        created=start,
        requests=requests,
        started=start,
        run=end - start if ended and not deleted else None,
        exit_code=1 if status == "Failed" else 0,
        deleted=end if deleted else None,
        annotations=usage,
    )


FORMAT = Format(
    name="alibaba-2018",
    files={
        "machine_meta": "machine_meta.csv",
        "container_meta": "container_meta.csv",
        "batch_task": "batch_task.csv",
        "batch_instance": "batch_instance.csv",
    },
    columns=tuple(dict.fromkeys((*CONTAINER_META, *BATCH_INSTANCE, "plan_cpu", "plan_mem"))),
    options=_options,
    option_names=("machineShape", "include"),
    read=_read,
)
