"""TargetLoadPacking (kubernetes-sigs/scheduler-plugins, pkg/trimaran/targetloadpacking): best
fit bin packing on real CPU use, up to a target utilisation.

A node's predicted CPU utilisation, in percent of its CPU capacity (`status.capacity`), is its
measured usage (the mean over the usage window), plus the pod's predicted use, plus the
predicted use of the pods placed on it since shortly before the last sample (their usage is
not measured yet). A pod's predicted use is, per container, its CPU limit; else its request
times `defaultRequestsMultiplier`; else `defaultRequests.cpu`; plus the pod's CPU overhead. With
target T and prediction U:

    U <= T:        score = round((100 - T) * U / T + T)     from T on an idle node up to 100
    T < U <= 100:  score = round(T * (100 - U) / (100 - T)) falling to 0 when full
    U > 100:       score = 0

A node without usage samples yet scores 0 (upstream: no metrics, the minimum score). Arguments
(TargetLoadPackingArgs): `targetUtilization` (percent, 40 when unset or not positive),
`defaultRequests` (`cpu`, 1000m), `defaultRequestsMultiplier` (a string, "1.5"), and the
TrimaranSpec ones (`pinnace.scheduler.plugins.trimaran`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from pinnace.resources.lists import parse_quantity, parse_resource_list
from pinnace.resources.names import CPU
from pinnace.scheduler.framework import MIN_NODE_SCORE, CycleState
from pinnace.scheduler.nodetable import NodeTable, Placement
from pinnace.scheduler.plugins.trimaran import (
    go_number,
    go_round,
    go_string,
    pods_metric_load,
    usage_sampling,
)
from pinnace.scheduler.podinfo import PodInfo

NAME = "TargetLoadPacking"
ARGS = "TargetLoadPackingArgs"
DEFAULT_TARGET_UTILIZATION = 40
DEFAULT_REQUESTS_MILLI_CORES = 1000
DEFAULT_REQUESTS_MULTIPLIER = "1.5"
_PREDICTIONS_LIMIT = 4096


class TargetLoadPacking:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        self.usage_window, self.usage_interval = usage_sampling(args)
        self.load_metric = pods_metric_load(args)
        target = go_number(args, "targetUtilization", ARGS, "int64")
        self.target_utilization: int = (
            target if target is not None and target > 0 else DEFAULT_TARGET_UTILIZATION
        )
        requests = args.get("defaultRequests")
        cpu = parse_resource_list(requests, "defaultRequests").get(CPU) if requests else None
        self.default_requests_milli = (
            DEFAULT_REQUESTS_MILLI_CORES if requests is None else cpu.milli_value() if cpu else 0
        )
        multiplier = go_string(args, "defaultRequestsMultiplier", ARGS)
        self.requests_multiplier = parse_go_float(
            DEFAULT_REQUESTS_MULTIPLIER if multiplier is None else multiplier
        )
        self._predictions: dict[str, int] = {}
        # The placements accounted so far: the table and log read, and how far; pod key ->
        # (node name, predicted millicores); node name -> [their sum, how many].
        self._log_read: tuple[Any, Any, int] = (None, None, 0)
        self._accounted: dict[str, tuple[str, int]] = {}
        self._unmeasured_by_node: dict[str, list[int]] = {}

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        capacity = table.capacity[nodes, 0].astype(np.float64)
        used = table.usage_mean[nodes, 0] + self._unmeasured(table)[nodes]
        total = used + self.predicted_cpu(pod)
        with np.errstate(divide="ignore", invalid="ignore"):
            predicted = np.where(capacity != 0, 100 * total / capacity, 0.0)
        target = float(self.target_utilization)
        with np.errstate(divide="ignore", invalid="ignore"):
            below = go_round((100 - target) * predicted / target + target)
            above = go_round(target * (100 - predicted) / (100 - target))
        scores = np.where(
            predicted > target, np.where(predicted > 100, MIN_NODE_SCORE, above), below
        )
        scores[table.usage_count[nodes] == 0] = MIN_NODE_SCORE
        return scores

    def _unmeasured(self, table: NodeTable) -> np.ndarray:
        """Per row, the predicted CPU of the pods placed since shortly before the last
        sample (Trimaran's missingCPUUtilMillis), kept per node from the table's log of
        placements."""
        unmeasured = self._unmeasured_by_node
        log = table.placement_log
        if self._log_read[0] is not table or self._log_read[1] is not log:
            unmeasured.clear()
            self._accounted.clear()
            self._log_read = (table, log, 0)
            changes: Iterable[tuple[str, Placement | None]] = table.recent_placements.items()
        else:
            changes = log[self._log_read[2] :]
        for key, placement in changes:
            self._account(key, placement)
        self._log_read = (table, log, len(log))
        vector = np.zeros(len(table))
        index = table.index
        for node_name, (total, _) in unmeasured.items():
            vector[index[node_name]] = total
        return vector

    def _account(self, key: str, placement: Placement | None) -> None:
        unmeasured = self._unmeasured_by_node
        gone = self._accounted.pop(key, None)
        if gone is not None:
            entry = unmeasured[gone[0]]
            entry[0] -= gone[1]
            entry[1] -= 1
            if entry[1] == 0:
                del unmeasured[gone[0]]
        if placement is not None:
            value = self.predicted_cpu(placement.pod)
            self._accounted[key] = (placement.node_name, value)
            entry = unmeasured.setdefault(placement.node_name, [0, 0])
            entry[0] += value
            entry[1] += 1

    def predicted_cpu(self, pod: PodInfo) -> int:
        """The pod's predicted CPU use in millicores (PredictUtilisation over its containers,
        plus its CPU overhead)."""
        spec = pod.pod.get("spec") or {}
        shape = repr(
            ([c.get("resources") for c in spec.get("containers") or ()], spec.get("overhead"))
        )
        predicted = self._predictions.get(shape)
        if predicted is None:
            predicted = sum(
                self._container_cpu(c.get("resources") or {}) for c in spec.get("containers") or ()
            )
            overhead = (spec.get("overhead") or {}).get(CPU)
            if overhead is not None:
                predicted += parse_quantity(overhead).milli_value()
            if len(self._predictions) >= _PREDICTIONS_LIMIT:
                self._predictions.clear()
            self._predictions[shape] = predicted
        return predicted

    def _container_cpu(self, resources: Mapping[str, Any]) -> int:
        limits = resources.get("limits") or {}
        if CPU in limits:
            return parse_quantity(limits[CPU]).milli_value()
        requests = resources.get("requests") or {}
        if CPU in requests:
            milli = parse_quantity(requests[CPU]).milli_value()
            return int(go_round(np.array(milli * self.requests_multiplier)))
        return self.default_requests_milli


def parse_go_float(text: str) -> float:
    """strconv.ParseFloat(text, 64), with the plugin's error wording."""
    try:
        if text != text.strip() or "_" in text:  # Python accepts both, Go neither
            raise ValueError
        return float(text)
    except ValueError:
        raise ValueError(
            "unable to parse DefaultRequestsMultiplier: strconv.ParseFloat: parsing "
            f'"{text}": invalid syntax'
        ) from None
