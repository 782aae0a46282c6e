"""How fragmented the cluster's free capacity is, for the pod shapes its workloads ask for.

A node's free capacity is its allocatable less what the pods bound to it request (as
NodeResourcesFit counts it, the pod count among the resources). For each pod shape (a
workload's requests, with one pod), each node holds `fits` more pods of that shape: the least,
over the resources the shape requests, of free // request. What is left on the node after
those pods, free - fits * request, is capacity that cannot hold one more pod of the shape
(stranded, usually because another resource ran out first). The measures:

- `share`: per shape and resource, the stranded capacity over all the free capacity of the
  resource, summed over the nodes (3 empty nodes of 4 CPUs, pods of 1.5 CPUs: 2 fit per node,
  1 CPU per node is stranded, 3 of 12 free CPUs: 25 %); NaN where the shape does not request
  the resource or nothing is free;
- `largest_free`: per resource, the most free on one node (the largest request of that
  resource alone that still fits somewhere);
- `largest_multiple`: per shape, the most pods of that shape one node still holds (the
  largest multiple of the shape that fits as one pod).

Amounts are integers in the scheduler's units (millicores, bytes, counts), so the divisions
are exact. Kubernetes has no such measure; this is the usual notion of stranded capacity in
cluster scheduling, per workload shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Amounts = npt.NDArray[np.int64]
Ratios = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Fragmentation:
    """The measures for `free` (nodes × resources) and `shapes` (shapes × resources)."""

    fits: Amounts
    """nodes × shapes: how many more pods of each shape each node holds."""
    stranded: Amounts
    """shapes × resources: free capacity, summed over the nodes, that cannot hold one more pod
    of the shape."""
    free_total: Amounts
    """resources: all the free capacity."""
    share: Ratios
    """shapes × resources: stranded / free_total (NaN: not requested, or nothing free)."""
    largest_free: Amounts
    """resources: the most free on one node (0 without nodes)."""
    largest_multiple: Amounts
    """shapes: the most pods of the shape one node holds (0 without nodes)."""


def free_capacity(allocatable: Amounts, requested: Amounts) -> Amounts:
    """allocatable - requested, per node and resource, never below zero (a node whose
    allocatable shrank under its pods has nothing free)."""
    return np.maximum(allocatable - requested, 0)


def fragmentation(free: Amounts, shapes: Amounts) -> Fragmentation:
    """The measures of `free` capacity (nodes × resources) for `shapes` (shapes × resources,
    each with a positive request of at least one resource, e.g. one pod)."""
    free = np.asarray(free, dtype=np.int64).reshape(-1, shapes.shape[1])
    shapes = np.asarray(shapes, dtype=np.int64)
    requested = shapes > 0
    if not requested.any(axis=1).all():
        raise ValueError("every shape must request something (a pod counts as one)")
    # nodes × shapes × resources: how many of the shape each resource leaves room for
    room = np.where(requested, free[:, None, :] // np.maximum(shapes, 1), np.iinfo(np.int64).max)
    fits = room.min(axis=2)
    stranded = (free[:, None, :] - fits[:, :, None] * shapes).sum(axis=0)
    free_total = free.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(requested & (free_total > 0), stranded / free_total, np.nan)
    return Fragmentation(
        fits=fits,
        stranded=np.where(requested, stranded, 0),
        free_total=free_total,
        share=share,
        largest_free=free.max(axis=0, initial=0),
        largest_multiple=fits.max(axis=0, initial=0),
    )
