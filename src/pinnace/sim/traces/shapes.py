"""What the trace formats share to turn a trace's machines into nodes and its amounts into
quantities: node names Kubernetes accepts, the pool label, millicores and bytes."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pinnace.api.names import is_dns1123_label
from pinnace.kubelet.config import DEFAULT_CAPACITY, NODE_POOL_LABEL, NodeConfig
from pinnace.sim.traces.files import TraceFileError
from pinnace.sim.traces.model import Trace

_NOT_IN_A_NAME = re.compile(r"[^a-z0-9-]+")


def node_name(trace_id: str) -> str:
    """A node name (a DNS-1123 label) for a machine the trace calls `trace_id`: lower case,
    every run of other characters a `-` (`m_1042` is `m-1042`)."""
    name = _NOT_IN_A_NAME.sub("-", trace_id.lower()).strip("-")
    errors = is_dns1123_label(name)
    if errors:
        raise TraceFileError(f"machine {trace_id!r}: no node name can be made of it: {errors[0]}")
    return name


def machine(
    trace: Trace, name: str, capacity: Mapping[str, str], labels: Mapping[str, str]
) -> NodeConfig:
    """The node of a machine of `trace`: in the pool named after the trace's workload, with the
    default capacity for what the trace does not say (pods, ephemeral storage)."""
    return NodeConfig(
        name=name,
        capacity={**DEFAULT_CAPACITY, **capacity},
        labels={NODE_POOL_LABEL: trace.name, **labels},
    )


def millicores(cores: float) -> str:
    return f"{max(0, round(cores * 1000))}m"


def quantity_bytes(count: float) -> str:
    return str(max(0, round(count)))
