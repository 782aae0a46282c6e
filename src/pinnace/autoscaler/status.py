"""The status ConfigMap `cluster-autoscaler-status` in kube-system, as cluster-autoscaler
writes it every loop (clusterstate/api and clusterstate/utils/status.go): its `status` key
holds YAML with the cluster-wide health, scale-up and scale-down conditions and the same per
node group, and the annotation `cluster-autoscaler.kubernetes.io/last-updated` the time.

Health is Unhealthy when more than 3 nodes and more than 45 % of them are not ready
(--ok-total-unready-count, --max-total-unready-percentage); scale-up is InProgress while nodes
asked for have not joined, else NoActivity; scale-down is CandidatesPresent while some nodes
are unneeded, else NoCandidates. Each condition keeps its lastTransitionTime until its status
changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from pinnace.clock.rfc3339 import format_nano_time, go_time_string

STATUS_CONFIG_MAP = "cluster-autoscaler-status"
LAST_UPDATED = "cluster-autoscaler.kubernetes.io/last-updated"
OK_TOTAL_UNREADY_COUNT = 3
MAX_TOTAL_UNREADY_PERCENTAGE = 45.0


@dataclass(frozen=True)
class Counts:
    total: int
    ready: int
    not_started: int = 0
    being_deleted: int = 0
    unregistered: int = 0
    """Nodes asked for that have not joined yet."""

    @property
    def healthy(self) -> bool:
        unready = self.total - self.ready
        return unready <= OK_TOTAL_UNREADY_COUNT or (
            self.total > 0 and 100 * unready / self.total <= MAX_TOTAL_UNREADY_PERCENTAGE
        )

    def as_dict(self) -> dict[str, Any]:
        """The NodeCount, as gopkg.in/yaml.v2 writes it: a zero field tagged omitempty
        (beingDeleted, and unready, registered or the whole count when all their fields are
        zero) is left out."""
        registered: dict[str, Any] = {
            "total": self.total,
            "ready": self.ready,
            "notStarted": self.not_started,
        }
        if self.being_deleted:
            registered["beingDeleted"] = self.being_deleted
        unready = self.total - self.ready - self.not_started
        if unready:
            registered["unready"] = {"total": unready, "resourceUnready": 0}
        counts: dict[str, Any] = {}
        if any(registered.values()):
            counts["registered"] = registered
        if self.unregistered:
            counts |= {"longUnregistered": 0, "unregistered": self.unregistered}
        elif counts:
            counts |= {"longUnregistered": 0, "unregistered": 0}
        return counts


@dataclass(frozen=True)
class GroupStatus:
    name: str
    counts: Counts
    target: int
    min_size: int
    max_size: int
    scaling_up: bool
    candidates: int


@dataclass
class StatusWriter:
    """Builds the status text, remembering when each condition last changed."""

    _since: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(scope, condition) -> (status, lastTransitionTime)."""

    def text(
        self, now: float, counts: Counts, scaling_up: bool, candidates: int,
        groups: Sequence[GroupStatus],
    ) -> str:  # fmt: skip
        probe = _Timestamp(format_nano_time(now))
        health = self._condition("", "health", _health(counts), probe)
        cluster_wide = {
            "health": _order(health | _node_counts(counts)),
            "scaleUp": self._condition("", "scaleUp", _scale_up(scaling_up), probe),
            "scaleDown": _order(self._scale_down("", candidates, probe)),
        }
        status = {
            "time": go_time_string(now),
            "autoscalerStatus": "Running",
            "clusterWide": cluster_wide,
            "nodeGroups": [self._group(g, probe) for g in groups],
        }
        return yaml.dump(status, Dumper=_Dumper, sort_keys=False)

    def _group(self, group: GroupStatus, probe: str) -> dict[str, Any]:
        health = self._condition(group.name, "health", _health(group.counts), probe)
        health |= _node_counts(group.counts) | {
            "cloudProviderTarget": group.target,
            "minSize": group.min_size,
            "maxSize": group.max_size,
        }
        return {
            "name": group.name,
            "health": _order(health),
            "scaleUp": self._condition(group.name, "scaleUp", _scale_up(group.scaling_up), probe),
            "scaleDown": _order(self._scale_down(group.name, group.candidates, probe)),
        }

    def _scale_down(self, scope: str, candidates: int, probe: str) -> dict[str, Any]:
        status = "CandidatesPresent" if candidates else "NoCandidates"
        condition = self._condition(scope, "scaleDown", status, probe)
        return condition | ({"candidates": candidates} if candidates else {})

    def _condition(self, scope: str, kind: str, status: str, probe: str) -> dict[str, Any]:
        before = self._since.get((scope, kind))
        if before is None or before[0] != status:
            before = (status, probe)
            self._since[(scope, kind)] = before
        return {"status": status, "lastProbeTime": probe, "lastTransitionTime": before[1]}


class _Timestamp(str):
    """A metav1.Time in the status: RFC 3339 with nanoseconds, double-quoted as yaml.v2 quotes
    a string that would otherwise read as a timestamp."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _Timestamp,
    lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"'),
)


def _node_counts(counts: Counts) -> dict[str, Any]:
    found = counts.as_dict()
    return {"nodeCounts": found} if found else {}


def _order(condition: dict[str, Any]) -> dict[str, Any]:
    """The status first and the times last, as cluster-autoscaler's structs order them."""
    times = {k: condition.pop(k) for k in ("lastProbeTime", "lastTransitionTime")}
    condition |= times
    return condition


def _health(counts: Counts) -> str:
    return "Healthy" if counts.healthy else "Unhealthy"


def _scale_up(in_progress: bool) -> str:
    return "InProgress" if in_progress else "NoActivity"
