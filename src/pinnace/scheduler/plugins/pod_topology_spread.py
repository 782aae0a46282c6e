"""PodTopologySpread (pkg/scheduler/framework/plugins/podtopologyspread), as v1.32.

Filter (DoNotSchedule constraints): placing the pod on a node must keep, for each constraint,
`matching pods in the node's domain + 1 if the pod matches itself - global minimum <= maxSkew`,
the minimum taken over the eligible domains (0 while there are fewer than minDomains). Eligible
nodes carry every constraint's topology key and, per nodeAffinityPolicy (Honor by default) and
nodeTaintsPolicy (Ignore by default), match the pod's required node affinity and tolerate its
NoSchedule/NoExecute taints. A node without a topology key is unresolvable.

Score (ScheduleAnyway constraints): a node scores, per constraint, `count * log(domains + 2) +
maxSkew - 1` where count is the matching pods in its domain (on the node itself for
kubernetes.io/hostname); the sum is rounded half away from zero, then normalised so the fewest
matching pods scores 100. Nodes missing a key score 0.

A pod without constraints gets the default ones (the system defaults: hostname maxSkew 3 and
zone maxSkew 5, both ScheduleAnyway) with the selector of its workload (`WorkloadSelectors`);
a pod no Service or controller selects gets none.

Per-node counts of matching pods and per-node domain codes are incremental vectors
(`label_index`); domains are summed with `np.bincount`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.api.labels import LabelSelector, SelectorError, selector_from_dict, selector_from_set
from pinnace.scheduler.events import (
    ADD,
    ASSIGNED_POD,
    DELETE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    ClusterEvent,
)
from pinnace.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    SUCCESS,
    CycleState,
    Status,
    error,
    unresolvable,
    unschedulable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.label_index import label_index
from pinnace.scheduler.plugins.node_selector import cached_affinity_mask
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.nodeaffinity import required_node_affinity
from pinnace.scheduling.taints import first_untolerated

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
SYSTEM_DEFAULTING = "System"
SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
_MAX_INT32 = 2**31 - 1
_PARSED_LIMIT = 1024
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

WorkloadSelector = Callable[[PodInfo], LabelSelector]


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


def spread_constraints(
    specs: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[SpreadConstraint]:
    """The constraints with `whenUnsatisfiable == action`, their selectors parsed and extended
    by matchLabelKeys (filterTopologySpreadConstraints); raises SelectorError."""
    result = []
    for c in specs:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = selector_from_dict(c.get("labelSelector"))
        match_labels = {k: pod_labels[k] for k in c.get("matchLabelKeys") or () if k in pod_labels}
        if match_labels:
            merged = selector_from_set(match_labels).requirements + selector.requirements
            selector = LabelSelector(merged)
        result.append(
            SpreadConstraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=c.get("topologyKey") or "",
                selector=selector,
                min_domains=int(c.get("minDomains") or 1),
                honor_node_affinity=(c.get("nodeAffinityPolicy") or HONOR) == HONOR,
                honor_node_taints=c.get("nodeTaintsPolicy") == HONOR,
            )
        )
    return result


class _Domains:
    """One DoNotSchedule constraint's matching pods per domain code (a last slot, always 0,
    for nodes without the key), which domains exist, and kube-scheduler's two "critical
    paths": the domain with the fewest matching pods and one with at most the next fewest,
    as a map iterated in code order would give them."""

    def __init__(
        self,
        constraint: SpreadConstraint,
        codes: np.ndarray,
        counts: np.ndarray,
        present: np.ndarray,
        self_match: int,
    ) -> None:
        self.constraint, self.codes, self.self_match = constraint, codes, self_match
        self.counts, self.present = counts, present
        self.paths = [[-1, _MAX_INT32], [-1, _MAX_INT32]]
        candidates = np.where(present, counts, _MAX_INT32)
        for path in self.paths:
            code = int(np.argmin(candidates))
            if candidates[code] == _MAX_INT32:
                break
            path[:] = [code, int(candidates[code])]
            candidates[code] = _MAX_INT32

    def clone(self) -> _Domains:
        copy = _Domains.__new__(_Domains)
        copy.constraint, copy.codes, copy.self_match = self.constraint, self.codes, self.self_match
        copy.counts, copy.present = self.counts.copy(), self.present.copy()
        copy.paths = [list(path) for path in self.paths]
        return copy

    @property
    def min_match(self) -> int:
        """The global minimum, 0 while there are fewer domains than minDomains."""
        if int(self.present.sum()) < self.constraint.min_domains:
            return 0
        return self.paths[0][1]

    def skew_ok(self, rows: np.ndarray | slice) -> np.ndarray:
        codes = self.codes[rows]
        skew = self.counts[codes] + self.self_match - self.min_match
        return (codes >= 0) & (skew <= self.constraint.max_skew)

    def add(self, code: int, delta: int) -> None:
        """criticalPaths.update after a pod is added to (1) or removed from (-1) a domain."""
        self.counts[code] += delta
        self.present[code] = True
        num = int(self.counts[code])
        first, second = self.paths
        if code in (first[0], second[0]):
            (first if code == first[0] else second)[1] = num
            if first[1] > second[1]:
                self.paths.reverse()
        elif num < first[1]:
            self.paths = [[code, num], first]
        elif num < second[1]:
            second[:] = [code, num]


@dataclass(frozen=True)
class _PreFilterState:
    domains: tuple[_Domains, ...]
    eligibility: _Eligibility

    def clone(self) -> _PreFilterState:
        return _PreFilterState(tuple(d.clone() for d in self.domains), self.eligibility)


@dataclass(frozen=True)
class _ScoreState:
    ignored: np.ndarray  # per scored node


class PodTopologySpread:
    name = NAME

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        workload_selector: WorkloadSelector | None = None,
    ) -> None:
        args = args or {}
        defaulting = args.get("defaultingType") or SYSTEM_DEFAULTING
        defaults = list(args.get("defaultConstraints") or ())
        if defaulting == SYSTEM_DEFAULTING and defaults:
            raise ValueError(
                'defaultConstraints: Invalid value: "": when .defaultingType is "System", '
                ".defaultConstraints must be empty"
            )
        self.system_defaulted = defaulting == SYSTEM_DEFAULTING
        if self.system_defaulted:
            defaults = list(SYSTEM_DEFAULT_CONSTRAINTS)
        # Their selector is the pod's workload's, so they parse the same for every pod.
        self._defaults = {
            action: spread_constraints(defaults, {}, action)
            for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
        }
        self.workload_selector = workload_selector
        self._parsed: dict[str, list[SpreadConstraint]] = {}

    def _constraints(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        specs = (pod.pod.get("spec") or {}).get("topologySpreadConstraints")
        if specs:
            return self._parse(specs, pod.labels, action)
        constraints = self._defaults[action]
        if not constraints or self.workload_selector is None:
            return []
        selector = self.workload_selector(pod)
        if selector.empty:
            return []
        return [
            SpreadConstraint(c.max_skew, c.topology_key, selector, c.min_domains)
            for c in constraints
        ]

    def _parse(
        self, specs: Sequence[Mapping[str, Any]], labels: Mapping[str, str], action: str
    ) -> list[SpreadConstraint]:
        """spread_constraints, once per distinct spec (and labels, with matchLabelKeys)."""
        uses_labels = any(c.get("matchLabelKeys") for c in specs)
        key = repr((specs, action, labels if uses_labels else None))
        parsed = self._parsed.get(key)
        if parsed is None:
            if len(self._parsed) >= _PARSED_LIMIT:
                self._parsed.clear()
            parsed = self._parsed[key] = spread_constraints(specs, labels, action)
        return parsed

    # Filtering.
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as e:
            return error(f"get constraints from pod: {e}")
        if not constraints:
            return SKIP
        index = label_index(table)
        codes = [index.codes(c.topology_key) for c in constraints]
        eligible = _Eligibility(pod, table, _all_present(codes, len(table)))
        domains = []
        for c, node_codes in zip(constraints, codes, strict=True):
            rows = eligible.nodes(c)
            size = len(index.vocabulary(c.topology_key))
            eligible_codes = node_codes[rows]
            present = np.bincount(eligible_codes, minlength=size) > 0
            matching = index.matching_pods(pod.namespace, c.selector)
            counts = np.bincount(eligible_codes, weights=matching[rows], minlength=size)
            domains.append(
                _Domains(
                    c,
                    node_codes,
                    np.append(counts.astype(np.int64), 0),
                    np.append(present, False),
                    int(c.selector.matches(pod.labels)),
                )
            )
        state.write(_PRE_FILTER_KEY, _PreFilterState(tuple(domains), eligible))
        return SUCCESS

    def _pre_filter_state(
        self, state: CycleState, pod: PodInfo, table: NodeTable
    ) -> tuple[_Domains, ...]:
        if _PRE_FILTER_KEY not in state.data:  # PreFilter disabled: compute it here
            self.pre_filter(state, pod, table)
        s: _PreFilterState | None = state.data.get(_PRE_FILTER_KEY)
        return s.domains if s is not None else ()

    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, i: int
    ) -> Status:
        return self._update_with_pod(state, pod, added, i, 1)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, i: int
    ) -> Status:
        return self._update_with_pod(state, pod, removed, i, -1)

    def _update_with_pod(
        self, state: CycleState, pod: PodInfo, other: PodInfo, i: int, delta: int
    ) -> Status:
        """updateWithPod: `other`, in the pod's namespace, counts in node `i`'s domains of
        the constraints whose selector matches it, where the node is eligible."""
        s: _PreFilterState | None = state.data.get(_PRE_FILTER_KEY)
        if s is None or other.namespace != pod.namespace:
            return SUCCESS
        if any(d.codes[i] < 0 for d in s.domains):
            return SUCCESS
        for d in s.domains:
            if d.constraint.selector.matches(other.labels) and s.eligibility.nodes(d.constraint)[i]:
                d.add(int(d.codes[i]), delta)
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        result = feasible.copy()
        for domains in self._pre_filter_state(state, pod, table):
            result &= domains.skew_ok(slice(None))
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        for domains in self._pre_filter_state(state, pod, table):
            if domains.codes[i] < 0:
                return unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
            if not domains.skew_ok(np.array([i]))[0]:
                return unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return SUCCESS

    # Scoring.
    def pre_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> Status:
        if len(table) == 0:
            return SKIP
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as e:
            return error(f"calculating preScoreState: {e}")
        if not constraints:
            return SKIP
        state.write(_PRE_SCORE_KEY, constraints)
        return SUCCESS

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        if _PRE_SCORE_KEY not in state.data:  # PreScore disabled
            self.pre_score(state, pod, table, nodes)
        constraints: list[SpreadConstraint] = state.data.get(_PRE_SCORE_KEY) or []
        index = label_index(table)
        codes = [index.codes(c.topology_key) for c in constraints]
        # Only the pod's own constraints need every key on a node: with the system defaults,
        # nodes without a zone are still spread by hostname.
        own = bool((pod.pod.get("spec") or {}).get("topologySpreadConstraints"))
        require_all = own or not self.system_defaulted
        present = _all_present(codes, len(table)) if require_all else np.ones(len(table), bool)
        ignored = ~present[nodes]
        kept = nodes[~ignored]
        eligible = _Eligibility(pod, table, present)
        total = np.zeros(len(nodes), np.float64)
        for c, node_codes in zip(constraints, codes, strict=True):
            matching = index.matching_pods(pod.namespace, c.selector)
            if c.topology_key == LABEL_HOSTNAME:
                weight = math.log(len(kept) + 2)
                count = matching[nodes]
            else:
                domain = _domain_codes(node_codes, index.vocabulary(c.topology_key))
                size = int(domain.max(initial=0)) + 1
                candidates = np.count_nonzero(np.bincount(domain[kept], minlength=size))
                weight = math.log(candidates + 2)
                rows = eligible.nodes(c)
                per_domain = np.bincount(domain[rows], weights=matching[rows], minlength=size)
                count = per_domain[domain[nodes]]
            term = count.astype(np.float64) * weight + float(c.max_skew - 1)
            total += np.where(node_codes[nodes] >= 0, term, 0.0)
        state.write(_PRE_SCORE_KEY + "/ignored", _ScoreState(ignored))
        scores = _round_half_away_from_zero(total)
        scores[ignored] = 0
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        ignored = state.read(_PRE_SCORE_KEY + "/ignored").ignored
        result = np.zeros_like(scores)
        valid = ~ignored
        if not valid.any():
            return result
        lowest, highest = int(scores[valid].min()), max(int(scores[valid].max()), 0)
        if highest == 0:
            result[valid] = MAX_NODE_SCORE
        else:
            result[valid] = MAX_NODE_SCORE * (highest + lowest - scores[valid]) // highest
        return result

    def events_to_register(self) -> list[ClusterEvent]:
        return [
            ClusterEvent(ASSIGNED_POD, ADD),
            ClusterEvent(ASSIGNED_POD, UPDATE),
            ClusterEvent(ASSIGNED_POD, DELETE),
            ClusterEvent(POD, UPDATE),
            ClusterEvent(NODE, ADD),
            ClusterEvent(NODE, DELETE),
            ClusterEvent(NODE, UPDATE_NODE_LABEL),
            ClusterEvent(NODE, UPDATE_NODE_TAINT),
        ]


class _Eligibility:
    """Which nodes count towards a constraint's domains: `base` (nodes with the keys), and per
    the constraint's policies the pod's required node affinity and NoSchedule/NoExecute
    tolerations (computed once per pod, if some constraint needs them)."""

    def __init__(self, pod: PodInfo, table: NodeTable, base: np.ndarray) -> None:
        self._pod, self._table, self._base = pod, table, base
        self._affinity: np.ndarray | None = None
        self._tolerated: np.ndarray | None = None

    def nodes(self, c: SpreadConstraint) -> np.ndarray:
        mask = self._base
        if c.honor_node_affinity:
            mask = mask & self._affinity_mask()
        if c.honor_node_taints:
            mask = mask & self._tolerated_mask()
        return mask

    def _affinity_mask(self) -> np.ndarray:
        if self._affinity is None:
            required = required_node_affinity(self._pod.pod.get("spec") or {})
            self._affinity = cached_affinity_mask(self._table, required)
        return self._affinity

    def _tolerated_mask(self) -> np.ndarray:
        if self._tolerated is None:
            groups = self._table.taint_groups
            tolerated = np.array(
                [first_untolerated(taints, self._pod.tolerations) is None for taints in groups]
            )
            self._tolerated = tolerated[self._table.hard_taint_group]
        return self._tolerated


def _all_present(codes: list[np.ndarray], n: int) -> np.ndarray:
    present = np.ones(n, bool)
    for node_codes in codes:
        present &= node_codes >= 0
    return present


def _domain_codes(codes: np.ndarray, vocabulary: Mapping[str, int]) -> np.ndarray:
    """Codes with a missing key read as the value "" (as a Go map lookup does)."""
    empty = vocabulary.get("", len(vocabulary))
    return np.where(codes < 0, empty, codes)


def _round_half_away_from_zero(values: np.ndarray) -> np.ndarray:
    """Go's math.Round for non-negative values."""
    floor = np.floor(values)
    return (floor + (values - floor >= 0.5)).astype(np.int64)
