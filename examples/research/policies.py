"""Toy scheduling policies for PolicyScore / PolicyPick (docs/research.md).

Each gets the pod's features and the feasible nodes' feature matrix (the columns of
pinnace.scheduler.plugins.policy.NODE_FEATURES) and returns a score per node."""

import numpy as np

ALLOCATABLE_CPU, REQUESTED_CPU, USAGE_CPU = 0, 2, 6
REQUEST_CPU, FORECAST_CPU = 0, 2


def pack(pod, nodes):
    """Most requested first (MostAllocated on cpu): the fullest node by requests."""
    return nodes[:, REQUESTED_CPU] / nodes[:, ALLOCATABLE_CPU]


def pack_by_usage(pod, nodes):
    """The busiest node by measured usage whose usage, with the pod's forecast use (its
    request until its workload has history), stays under 70 % of its cpu; else the least
    used node."""
    expected = pod[FORECAST_CPU] if not np.isnan(pod[FORECAST_CPU]) else pod[REQUEST_CPU]
    after = (nodes[:, USAGE_CPU] + expected) / nodes[:, ALLOCATABLE_CPU]
    return np.where(after <= 0.7, after, -after)
