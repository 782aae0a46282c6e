"""What the resource scoring strategies share (noderesources/resource_allocation.go): for each
configured resource, the node's allocatable and its requested amount with the pod added.

NodeResourcesFit scores with non-zero requests (a container without a cpu or memory request
counting as 100m / 200Mi, on the node and for the pod); NodeResourcesBalancedAllocation with
the actual requests (`use_requested`). A scalar resource the pod does not request, and any
resource the node has none of, is left out of the node's score (allocatable 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def resource_specs(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ResourceSpec, ...]:
    """`resources` from plugin arguments: [{name, weight}], weight defaulting to 1."""
    if not raw:
        return DEFAULT_RESOURCES
    return tuple(ResourceSpec(r["name"], int(r.get("weight") or 1)) for r in raw)


def allocatable_and_requested(
    table: NodeTable,
    pod: PodInfo,
    resources: Sequence[ResourceSpec],
    nodes: np.ndarray,
    use_requested: bool,
) -> list[tuple[np.ndarray, np.ndarray, int] | None]:
    """Per resource: (allocatable, requested with the pod, weight) over `nodes`, or None for a
    resource that counts on no node."""
    out: list[tuple[np.ndarray, np.ndarray, int] | None] = []
    for spec in resources:
        name = spec.name
        if name in (CPU, MEMORY) and not use_requested:
            pod_request = pod.non_zero_cpu if name == CPU else pod.non_zero_memory
            requested = table.non_zero_requested[nodes, 0 if name == CPU else 1]
        elif name in (CPU, MEMORY, EPHEMERAL_STORAGE) or (
            is_scalar_resource(name) and pod.requests.get(name, 0) != 0
        ):
            pod_request = pod.requests.get(name, 0)
            column = table.columns.get(name)
            if column is None:
                out.append(None)
                continue
            requested = table.requested[nodes, column]
        else:
            out.append(None)
            continue
        allocatable = table.allocatable[nodes, table.columns[name]]
        out.append((allocatable, requested + pod_request, spec.weight))
    return out
