"""Alibaba's cluster-trace-gpu-v2023, the "openb" trace (github.com/alibaba/clusterdata,
cluster-trace-gpu-v2023/README.md): two CSV files with a header line.

    openb_node_list_all_node.csv   sn,cpu_milli,memory_mib,gpu,model
    openb_pod_list_default.csv     name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
                                   pod_phase,creation_time,deletion_time,scheduled_time

Every node becomes a node of the pool named after the workload: `cpu_milli` millicores,
`memory_mib` MiB and `gpu` GPUs as the extended resource `nvidia.com/gpu`, its GPU `model` as
the label `nvidia.com/gpu.product` (as NVIDIA's GPU feature discovery names it).

Every pod asks for `cpu_milli` millicores and `memory_mib` MiB, and `num_gpu` GPUs (with `gpu:
milli`, `num_gpu` × `gpu_milli` of `alibabacloud.com/gpu-milli`, of which a node has 1000 per
GPU: a shared GPU's fraction). A `gpu_spec` (`V100M16|V100M32`) becomes a required node
affinity on the GPU model; `qos` Guaranteed sets limits equal to requests. Times are seconds:
created at `creation_time`; a pod with a `scheduled_time` runs `deletion_time - scheduled_time`
once started and exits (1 if its `pod_phase` is Failed, 0 otherwise); one never scheduled is
deleted at `deletion_time`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pinnace.api import field as fields
from pinnace.api.field import Path
from pinnace.kubelet.config import NodeConfig
from pinnace.sim import values
from pinnace.sim.traces.files import Row, csv_rows, header, require_columns
from pinnace.sim.traces.model import Trace, TracePod
from pinnace.sim.traces.options import Format
from pinnace.sim.traces.shapes import machine, node_name

GPU = "nvidia.com/gpu"
GPU_MILLI = "alibabacloud.com/gpu-milli"
GPU_PRODUCT = "nvidia.com/gpu.product"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
GPU_MODES = ("whole", "milli")


def _options(raw: Mapping[str, Any], path: Path) -> dict[str, Any]:
    mode = raw.get("gpu", "whole")
    if mode not in GPU_MODES:
        values.fail(fields.not_supported(path.child("gpu"), mode, GPU_MODES))
    return {"gpu": mode}


def _read(trace: Trace, files: Mapping[str, str]) -> Trace:
    nodes = tuple(_nodes(trace, files["nodes"])) if trace.nodes else ()
    require_columns(files["pods"], header(files["pods"]), POD_COLUMNS)
    pods = [
        _pod(trace, row, number)
        for number, row in enumerate(csv_rows(files["pods"]), 1)
        if trace.keeps(row.cells)
    ]
    pods.sort(key=lambda p: (p.created, p.number))
    return replace(trace, initial_nodes=nodes, pods=tuple(pods))


def _nodes(trace: Trace, path: str) -> Iterator[NodeConfig]:
    columns = header(path)
    # Some copies of the node list name the GPU count as the pod list does.
    gpus = "num_gpu" if "num_gpu" in columns and "gpu" not in columns else "gpu"
    require_columns(path, columns, ("sn", "cpu_milli", "memory_mib", gpus, "model"))
    for row in csv_rows(path):
        capacity = {
            "cpu": f"{_whole(row, 'cpu_milli')}m",
            "memory": f"{_whole(row, 'memory_mib')}Mi",
        }
        labels = {}
        count = _whole(row, gpus, 0)
        if count:
            if trace.options["gpu"] == "milli":
                capacity[GPU_MILLI] = str(count * 1000)
            else:
                capacity[GPU] = str(count)
            model = row.text("model")
            if model and model.lower() != "nan":
                labels[GPU_PRODUCT] = model
        try:
            name = node_name(row.text("sn"))
        except ValueError as e:
            raise row.error(str(e)) from None
        yield machine(trace, name, capacity, labels)


def _pod(trace: Trace, row: Row, number: int) -> TracePod:
    requests = {
        "cpu": f"{_whole(row, 'cpu_milli')}m",
        "memory": f"{_whole(row, 'memory_mib')}Mi",
    }
    limits: dict[str, str] = {}
    gpus = _whole(row, "num_gpu", 0)
    if gpus:
        if trace.options["gpu"] == "milli":
            share = _whole(row, "gpu_milli", 1000)
            requests[GPU_MILLI] = limits[GPU_MILLI] = str(gpus * share)
        else:
            requests[GPU] = limits[GPU] = str(gpus)
    if row.text("qos") == "Guaranteed":
        limits.update(cpu=requests["cpu"], memory=requests["memory"])
    models = tuple(m for m in row.text("gpu_spec").split("|") if m and m.lower() != "nan")
    created = row.number("creation_time")
    deleted = row.number("deletion_time")
    scheduled = row.optional("scheduled_time")
    ran = scheduled is not None
    return TracePod(
        number=number,
        key=row.text("name"),
        created=created,
        requests=requests,
        limits=limits,
        started=scheduled,
        run=max(0.0, deleted - scheduled) if scheduled is not None else None,
        exit_code=1 if row.text("pod_phase") == "Failed" else 0,
        deleted=None if ran else deleted,
        node_affinity=(GPU_PRODUCT, models) if models else None,
    )


def _whole(row: Row, column: str, default: int | None = None) -> int:
    value = row.number(column, None if default is None else float(default))
    if value < 0 or value != int(value):
        raise row.error(f'column {column}: "{row.text(column)}" is not a whole number, at least 0')
    return int(value)


FORMAT = Format(
    name="alibaba-gpu-2023",
    files={"nodes": "openb_node_list_all_node.csv", "pods": "openb_pod_list_default.csv"},
    columns=POD_COLUMNS,
    options=_options,
    option_names=("gpu",),
    read=_read,
)
