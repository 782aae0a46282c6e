"""InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity of v1.32).

Filter, from counts made in PreFilter over every node's pods:
- the pod's required affinity: every term's topology label must be on the node, and pods
  matching all the terms must run in the node's topology domain of each term — unless no pod
  matches anywhere yet and the pod matches its own terms (the first pod of a group that wants
  to be together);
- the pod's required anti-affinity: no pod matching a term may run in the node's domain;
- the symmetry rule: the node must not be in a domain where a placed pod's required
  anti-affinity term matches the incoming pod.

Score: per topology domain, the weights of the pod's preferred terms matched by placed pods
(anti-affinity subtracts), plus the weights of placed pods' preferred terms matched by the pod
and `hardPodAffinityWeight` for each placed pod's required affinity term it matches; a node
scores the sum over its domains, scaled min..max onto 0..100 as NormalizeScore does (in
float64, truncated, exactly as kube-scheduler computes it).

Vectorised: each topology key's label values are numbered, so a node's domain is a small
integer; "pods matching a selector, per node" is a vector kept up to date one changed node at a
time; the terms of placed pods are indexed per node (`ExistingPodTerms`), so pods carrying
identical terms are matched against the incoming pod once.

Namespace selectors need the namespaces' labels: set `namespace_labels` (or pass it to the
constructor) to a mapping from namespace name to its labels, kept current by the adapter from a
namespace informer (the API adapter's job: find the plugin in each profile and assign it, as it
does for DefaultPreemption's callbacks). It is read on every cycle; an unknown namespace has no
labels, as in kube-scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.api.labels import SelectorError
from pinnace.scheduler.events import (
    ADD,
    ASSIGNED_POD,
    ASSIGNED_POD_DELETE,
    NODE,
    NODE_ADD,
    UPDATE,
    UPDATE_NODE_LABEL,
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
from pinnace.scheduler.nodetable import NodeTable, RowCache, Rows, gather, row_count
from pinnace.scheduler.plugins.label_index import label_index
from pinnace.scheduler.plugins.pod_affinity_terms import (
    PREFERRED,
    REQUIRED_AFFINITY,
    REQUIRED_ANTI_AFFINITY,
    AffinityTerm,
    ExistingPodTerms,
    matches_all,
    merged,
    pod_affinity_terms,
)
from pinnace.scheduler.podinfo import PodInfo

NAME = "InterPodAffinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MAX_HARD_POD_AFFINITY_WEIGHT = 100
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME

Selection = tuple[frozenset[str] | None, Any]
"""Which pods a merged term selects: (namespaces, None for all; label selector)."""


@dataclass(frozen=True, slots=True)
class _Rejections:
    """Per node row, which of the three rules rejects it (None: that rule rejects no node)."""

    affinity: np.ndarray | None
    anti_affinity: np.ndarray | None
    existing_anti_affinity: np.ndarray | None

    def rejected(self) -> np.ndarray | None:
        masks = (self.affinity, self.anti_affinity, self.existing_anti_affinity)
        present = [m for m in masks if m is not None]
        if not present:
            return None
        result = present[0].copy()
        for mask in present[1:]:
            result |= mask
        return result


class InterPodAffinity:
    name = NAME

    def __init__(
        self,
        args: Mapping[str, Any] | None = None,
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        args = args or {}
        weight = args.get("hardPodAffinityWeight")
        self.hard_pod_affinity_weight = (
            DEFAULT_HARD_POD_AFFINITY_WEIGHT if weight is None else int(weight)
        )
        if not 0 <= self.hard_pod_affinity_weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ValueError(
                f"hardPodAffinityWeight: Invalid value: {self.hard_pod_affinity_weight}: "
                f"not in valid range [0, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
            )
        self.ignore_preferred_terms_of_existing_pods = bool(
            args.get("ignorePreferredTermsOfExistingPods", False)
        )
        self.namespace_labels: Mapping[str, Mapping[str, str]] = (
            namespace_labels if namespace_labels is not None else {}
        )
        self._table: NodeTable | None = None
        self._existing = ExistingPodTerms()
        self._matching = RowCache()

    # PreFilter and Filter.
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        try:
            rejections = self._rejections(pod, table)
        except SelectorError as e:
            return unresolvable(f"parsing pod: {e}")
        if rejections is None:
            return SKIP
        state.write(_PRE_FILTER_KEY, rejections)
        return SUCCESS

    def pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, i: int
    ) -> Status:
        """PreFilterExtensions.AddPod: `added` is already on row `i` of the table; the counts
        are taken again from it (what updateWithPod's increments come to)."""
        return self._recount(state, pod, table)

    def pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, i: int
    ) -> Status:
        return self._recount(state, pod, table)

    def _recount(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        rejections = self._rejections(pod, table) or _Rejections(None, None, None)
        state.write(_PRE_FILTER_KEY, rejections)  # a new object: clones share the old one
        return SUCCESS

    def _rejections(self, pod: PodInfo, table: NodeTable) -> _Rejections | None:
        """What each rule rejects, or None when there is nothing to check (PreFilter's Skip).
        Raises SelectorError for a term that cannot be parsed."""
        terms = pod_affinity_terms(pod)
        if not terms and self._existing.none_placed(table):
            return None  # most pods, in most clusters
        self._prepare(table)
        terms = merged(terms, self.namespace_labels)
        existing = self._existing_anti_affinity(pod, table)
        if existing is None and not terms.required_affinity and not terms.required_anti_affinity:
            return None
        return _Rejections(
            self._affinity_rejections(pod, terms.required_affinity, table),
            self._anti_affinity_rejections(terms.required_anti_affinity, table),
            existing,
        )

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        rejected = state.read(_PRE_FILTER_KEY).rejected()
        return feasible if rejected is None else feasible & ~rejected

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        rejections: _Rejections = state.read(_PRE_FILTER_KEY)
        if rejections.affinity is not None and rejections.affinity[i]:
            return unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
        if rejections.anti_affinity is not None and rejections.anti_affinity[i]:
            return unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
        existing = rejections.existing_anti_affinity
        if existing is not None and existing[i]:
            return unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
        return SUCCESS

    def _affinity_rejections(
        self, pod: PodInfo, terms: tuple[AffinityTerm, ...], table: NodeTable
    ) -> np.ndarray | None:
        """satisfyPodAffinity for every node: pods matching ALL terms count in each term's
        domain."""
        if not terms:
            return None
        matched = self._matching_pods(table, tuple(t.pod_selection for t in terms))
        n = len(table)
        missing_label = np.zeros(n, bool)
        no_pods = np.zeros(n, bool)
        counted = False
        for term in terms:
            codes = self._codes(table, term.topology_key)
            labelled = codes >= 0
            missing_label |= ~labelled
            hits = codes[labelled & (matched > 0)]
            counted = counted or len(hits) > 0
            no_pods |= ~self._present(table, term.topology_key, hits)[codes]
        if not counted and matches_all(terms, pod):
            return missing_label
        return missing_label | no_pods

    def _anti_affinity_rejections(
        self, terms: tuple[AffinityTerm, ...], table: NodeTable
    ) -> np.ndarray | None:
        """satisfyPodAntiAffinity for every node: a domain holding a pod matching any term,
        counted per (topology key, value) as kube-scheduler's map does."""
        if not terms:
            return None
        hits_by_key: dict[str, list[np.ndarray]] = {}
        for term in terms:
            counts = self._matching_pods(table, (term.pod_selection,))
            codes = self._codes(table, term.topology_key)
            hits = codes[(codes >= 0) & (counts > 0)]
            if len(hits):
                hits_by_key.setdefault(term.topology_key, []).append(hits)
        if not hits_by_key:
            return None
        present = {
            key: self._present(table, key, np.concatenate(hits))
            for key, hits in hits_by_key.items()
        }
        rejected = np.zeros(len(table), bool)
        for term in terms:
            if term.topology_key in present:
                rejected |= present[term.topology_key][self._codes(table, term.topology_key)]
        return rejected

    def _existing_anti_affinity(self, pod: PodInfo, table: NodeTable) -> np.ndarray | None:
        """satisfyExistingPodsAntiAffinity for every node: domains where a placed pod's
        required anti-affinity term matches the incoming pod."""
        namespace_labels = self.namespace_labels.get(pod.namespace) or {}
        hits_by_key: dict[str, list[np.ndarray]] = {}
        for term, _, carriers in self._existing.terms(REQUIRED_ANTI_AFFINITY):
            if not term.matches(pod.namespace, pod.labels, namespace_labels):
                continue
            codes = self._codes(table, term.topology_key)
            hits = codes[(codes >= 0) & (carriers > 0)]
            if len(hits):
                hits_by_key.setdefault(term.topology_key, []).append(hits)
        if not hits_by_key:
            return None
        rejected = np.zeros(len(table), bool)
        for key, key_hits in hits_by_key.items():
            present = self._present(table, key, np.concatenate(key_hits))
            rejected |= present[self._codes(table, key)]
        return rejected

    # PreScore and Score.
    def pre_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> Status:
        if len(nodes) == 0:
            return SKIP
        try:
            terms = pod_affinity_terms(pod)
        except SelectorError as e:
            return error(f"failed to parse pod: {e}")
        has_constraints = bool(terms.preferred_affinity or terms.preferred_anti_affinity)
        if not has_constraints and (
            self.ignore_preferred_terms_of_existing_pods or self._existing.none_placed(table)
        ):
            return SKIP
        self._prepare(table)
        terms = merged(terms, self.namespace_labels)
        scores: dict[str, np.ndarray] = {}

        def add(term: AffinityTerm, weight: int, pods: np.ndarray) -> None:
            codes = self._codes(table, term.topology_key)
            counted = (codes >= 0) & (pods != 0)
            if not counted.any():
                return
            size = _values(table, term.topology_key) + 1  # + the unlabelled sentinel
            sums = np.bincount(codes[counted], weights=pods[counted], minlength=size)
            weighted = np.rint(sums).astype(np.int64) * weight
            if term.topology_key in scores:
                scores[term.topology_key] += weighted
            else:
                scores[term.topology_key] = weighted

        for preferred in terms.preferred_affinity:
            pods = self._matching_pods(table, (preferred.term.pod_selection,))
            add(preferred.term, preferred.weight, pods)
        for preferred in terms.preferred_anti_affinity:
            pods = self._matching_pods(table, (preferred.term.pod_selection,))
            add(preferred.term, -preferred.weight, pods)
        namespace_labels = self.namespace_labels.get(pod.namespace) or {}
        if self.hard_pod_affinity_weight > 0:
            for term, _, carriers in self._existing.terms(REQUIRED_AFFINITY):
                if term.matches(pod.namespace, pod.labels, namespace_labels):
                    add(term, self.hard_pod_affinity_weight, carriers)
        for term, weight, carriers in self._existing.terms(PREFERRED):
            if term.matches(pod.namespace, pod.labels, namespace_labels):
                add(term, weight, carriers)
        if not scores:
            return SKIP
        state.write(_PRE_SCORE_KEY, scores)
        return SUCCESS

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        total = np.zeros(len(nodes), np.int64)
        for key, by_value in state.read(_PRE_SCORE_KEY).items():
            total += by_value[gather(self._codes(table, key), nodes)]
        return total

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        """Min..max onto 0..100 as float64(100) * (float64(s-min) / float64(max-min)),
        truncated: the same float operations as kube-scheduler, so the same integers."""
        if len(scores) == 0:
            return scores
        low, high = int(scores.min()), int(scores.max())
        if high == low:
            return np.zeros_like(scores)
        return (float(MAX_NODE_SCORE) * ((scores - low) / float(high - low))).astype(np.int64)

    def events_to_register(self) -> list[ClusterEvent]:
        # kube-scheduler registers AssignedPod Add|UpdatePodLabel|Delete; pinnace reports an
        # assigned pod's updates as plain Update, which covers its label changes.
        return [
            ClusterEvent(ASSIGNED_POD, ADD),
            ClusterEvent(ASSIGNED_POD, UPDATE),
            ASSIGNED_POD_DELETE,
            NODE_ADD,
            ClusterEvent(NODE, UPDATE_NODE_LABEL),
        ]

    # Vectors over node rows.
    def _prepare(self, table: NodeTable) -> None:
        if table is not self._table:
            self._table = table
            self._matching = RowCache()
        self._existing.sync(table)

    def _codes(self, table: NodeTable, key: str) -> np.ndarray:
        """Each node's value of label `key` as a number; -1 where the node lacks it."""
        return label_index(table).codes(key)

    def _present(self, table: NodeTable, key: str, hits: np.ndarray) -> np.ndarray:
        """A bool per value of topology key `key`, True for the values in `hits`; one more,
        always False, is what an unlabelled node's -1 reads."""
        present = np.zeros(_values(table, key) + 1, bool)
        present[hits] = True
        return present

    def _matching_pods(self, table: NodeTable, selections: tuple[Selection, ...]) -> np.ndarray:
        """Per node, how many of its pods every one of `selections` selects."""

        def count(i: int) -> int:
            matched = 0
            for pod in table.pods[i].values():
                for namespaces, selector in selections:
                    if namespaces is not None and pod.namespace not in namespaces:
                        break
                    if not selector.matches(pod.labels):
                        break
                else:
                    matched += 1
            return matched

        def compute(rows: Rows) -> np.ndarray:
            return np.fromiter(
                (count(i) for i in _row_numbers(table, rows)), np.int64, row_count(table, rows)
            )

        return self._matching.get(table, selections, compute, count)


def _values(table: NodeTable, key: str) -> int:
    """How many values of label `key` have a number."""
    return len(label_index(table).vocabulary(key))


def _row_numbers(table: NodeTable, rows: Rows) -> range | list[int]:
    return range(*rows.indices(len(table))) if isinstance(rows, slice) else rows.tolist()
