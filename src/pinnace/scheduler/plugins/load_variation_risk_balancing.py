"""LoadVariationRiskBalancing (kubernetes-sigs/scheduler-plugins,
pkg/trimaran/loadvariationriskbalancing): spread the risk of load variation, the risk of a
node being its mean usage plus a margin times the standard deviation of its usage.

Per resource (cpu, memory), over the node's allocatable (analysis.go's computeScore):

    mu    = clamp((mean usage + the pod's request) / allocatable, 0, 1)   (the request as
            Trimaran sums it: `trimaran.resource_requested`)
    sigma = clamp(std / allocatable, 0, 1) ** (1 / safeVarianceSensitivity)   (unless < 0)
    sigma = clamp(safeVarianceMargin * sigma, 0, 1)
    score = (1 - (mu + sigma) / 2) * 100

and the node's score is the lower of the two, rounded half away from zero. Mean and standard
deviation are the node table's, over the usage window; a node without usage samples yet scores
0, one without allocatable of a resource scores 0 on it. Arguments
(LoadVariationRiskBalancingArgs): `safeVarianceMargin` and `safeVarianceSensitivity` (1 when
unset or negative), and the TrimaranSpec ones (`pinnace.scheduler.plugins.trimaran`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pinnace.scheduler.framework import MAX_NODE_SCORE, MIN_NODE_SCORE, CycleState
from pinnace.scheduler.nodetable import CPU_COLUMN, MEMORY_COLUMN, NodeTable
from pinnace.scheduler.plugins.trimaran import (
    go_number,
    go_round,
    pods_metric_load,
    resource_requested,
    usage_sampling,
)
from pinnace.scheduler.podinfo import PodInfo

NAME = "LoadVariationRiskBalancing"
ARGS = "LoadVariationRiskBalancingArgs"
DEFAULT_SAFE_VARIANCE_MARGIN = 1.0
DEFAULT_SAFE_VARIANCE_SENSITIVITY = 1.0


class LoadVariationRiskBalancing:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.usage_window, self.usage_interval = usage_sampling(args)
        self.load_metric = pods_metric_load(args)
        margin = go_number(args, "safeVarianceMargin", ARGS, "float64")
        sensitivity = go_number(args, "safeVarianceSensitivity", ARGS, "float64")
        self.margin = margin if margin is not None and margin >= 0 else DEFAULT_SAFE_VARIANCE_MARGIN
        self.sensitivity = (
            sensitivity
            if sensitivity is not None and sensitivity >= 0
            else DEFAULT_SAFE_VARIANCE_SENSITIVITY
        )

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        requested = resource_requested(pod.pod)
        per_resource = [
            risk_score(
                table.allocatable[nodes, column].astype(np.float64),
                float(requested[k]),
                table.usage_mean[nodes, k],
                table.usage_std[nodes, k],
                self.margin,
                self.sensitivity,
            )
            for k, column in enumerate((CPU_COLUMN, MEMORY_COLUMN))
        ]
        scores = go_round(np.minimum(*per_resource))
        scores[table.usage_count[nodes] == 0] = MIN_NODE_SCORE
        return scores


def risk_score(
    capacity: np.ndarray,
    request: float,
    mean: np.ndarray,
    std: np.ndarray,
    margin: float,
    sensitivity: float,
) -> np.ndarray:
    """computeScore over many nodes: (1 - risk) * 100, unrounded; 0 without capacity."""
    valid = capacity > 0
    safe = np.where(valid, capacity, 1.0)
    mean = np.clip(mean, 0, safe)
    std = np.clip(std, 0, safe)
    mu = np.clip((mean + max(request, 0.0)) / safe, 0, 1)
    sigma = np.clip(std / safe, 0, 1)
    if sensitivity >= 0:
        with np.errstate(divide="ignore"):
            sigma = sigma ** (np.float64(1) / np.float64(sensitivity))  # 0: Go's Pow(x, +Inf)
    sigma = np.clip(sigma * margin, 0, 1)
    risk = (mu + sigma) / 2
    return np.where(valid, (1 - risk) * MAX_NODE_SCORE, 0.0)
