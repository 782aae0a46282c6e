"""Pod (anti-)affinity terms as kube-scheduler's framework.AffinityTerm, and an index of the
terms carried by the pods already on each node.

A term selects pods by label selector within a set of namespaces: the listed `namespaces`, plus
every namespace whose labels the `namespaceSelector` matches (an empty selector: all of them);
with neither, the namespace of the pod carrying the term. The terms of the pod being scheduled
have their namespace selector resolved into names first (`merge_namespaces`), as
kube-scheduler's mergeAffinityTermNamespacesIfNotEmpty does; the terms of pods already placed
keep theirs and are matched against the labels of the incoming pod's namespace.

`matchLabelKeys` and `mismatchLabelKeys` need no handling here: kube-apiserver v1.32 merges them
into the label selector when the pod is created.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api.labels import LabelSelector, selector_from_dict
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo

_NOTHING = LabelSelector.nothing()
_NO_LABELS: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    namespace_selector: LabelSelector
    selector: LabelSelector
    topology_key: str
    # Terms key the per-node counts, so their hash is computed once.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = (self.namespaces, self.namespace_selector, self.selector, self.topology_key)
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """AffinityTerm.Matches: the pod is in one of the term's namespaces (or its namespace's
        labels match the namespace selector) and its labels match the selector."""
        return (
            namespace in self.namespaces or self.namespace_selector.matches(namespace_labels)
        ) and self.selector.matches(labels)

    @property
    def pod_selection(self) -> tuple[frozenset[str] | None, LabelSelector]:
        """For a merged term: (its namespaces, None for all of them; its selector)."""
        return (None if self.namespace_selector.empty else self.namespaces), self.selector


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedTerm, ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.required_affinity
            or self.required_anti_affinity
            or self.preferred_affinity
            or self.preferred_anti_affinity
        )


NO_TERMS = PodAffinityTerms()

# Pods stamped from one template share their terms: each distinct (namespace, affinity) is
# parsed once.
_TERMS_CACHE: dict[str, PodAffinityTerms] = {}
_TERMS_CACHE_LIMIT = 4096


def pod_affinity_terms(pod: PodInfo) -> PodAffinityTerms:
    """The pod's inter-pod affinity terms (framework.NewPodInfo); raises SelectorError for a
    selector that cannot be parsed."""
    if not pod.pod_affinity:
        return NO_TERMS
    affinity = (pod.pod.get("spec") or {}).get("affinity") or {}
    pod_affinity = affinity.get("podAffinity")
    pod_anti_affinity = affinity.get("podAntiAffinity")
    if not pod_affinity and not pod_anti_affinity:
        return NO_TERMS
    shape = repr((pod.namespace, pod_affinity, pod_anti_affinity))
    terms = _TERMS_CACHE.get(shape)
    if terms is None:
        pod_affinity, pod_anti_affinity = pod_affinity or {}, pod_anti_affinity or {}
        terms = PodAffinityTerms(
            _required(pod.namespace, pod_affinity),
            _required(pod.namespace, pod_anti_affinity),
            _preferred(pod.namespace, pod_affinity),
            _preferred(pod.namespace, pod_anti_affinity),
        )
        if len(_TERMS_CACHE) >= _TERMS_CACHE_LIMIT:
            _TERMS_CACHE.clear()
        _TERMS_CACHE[shape] = terms
    return terms


def _required(namespace: str, section: Mapping[str, Any]) -> tuple[AffinityTerm, ...]:
    terms = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(_term(namespace, term) for term in terms)


def _preferred(namespace: str, section: Mapping[str, Any]) -> tuple[WeightedTerm, ...]:
    terms = section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(
        WeightedTerm(_term(namespace, t.get("podAffinityTerm") or {}), int(t.get("weight") or 0))
        for t in terms
    )


def _term(namespace: str, term: Mapping[str, Any]) -> AffinityTerm:
    namespaces = term.get("namespaces") or ()
    namespace_selector = term.get("namespaceSelector")
    if not namespaces and namespace_selector is None:
        namespaces = (namespace,)
    return AffinityTerm(
        frozenset(namespaces),
        selector_from_dict(namespace_selector),
        selector_from_dict(term.get("labelSelector")),
        term.get("topologyKey") or "",
    )


def merge_namespaces(
    term: AffinityTerm, namespace_labels: Mapping[str, Mapping[str, str]]
) -> AffinityTerm:
    """mergeAffinityTermNamespacesIfNotEmpty: a namespace selector that restricts anything is
    replaced by the names of the namespaces it selects now. An empty one (every namespace) and
    a missing one (none) stay."""
    selector = term.namespace_selector
    if selector.empty or selector == _NOTHING:
        return term
    selected = {name for name, labels in namespace_labels.items() if selector.matches(labels)}
    return AffinityTerm(term.namespaces | selected, _NOTHING, term.selector, term.topology_key)


def merged(
    terms: PodAffinityTerms, namespace_labels: Mapping[str, Mapping[str, str]]
) -> PodAffinityTerms:
    if not terms:
        return terms
    return PodAffinityTerms(
        tuple(merge_namespaces(t, namespace_labels) for t in terms.required_affinity),
        tuple(merge_namespaces(t, namespace_labels) for t in terms.required_anti_affinity),
        tuple(
            WeightedTerm(merge_namespaces(w.term, namespace_labels), w.weight)
            for w in terms.preferred_affinity
        ),
        tuple(
            WeightedTerm(merge_namespaces(w.term, namespace_labels), w.weight)
            for w in terms.preferred_anti_affinity
        ),
    )


def matches_all(terms: tuple[AffinityTerm, ...], pod: PodInfo) -> bool:
    """podMatchesAllAffinityTerms for merged terms (no namespace labels needed)."""
    return bool(terms) and all(t.matches(pod.namespace, pod.labels, _NO_LABELS) for t in terms)


# What the index counts per node: the required anti-affinity terms of placed pods (the
# symmetry rule of Filter), and the terms that score the incoming pod (required affinity, scored
# with hardPodAffinityWeight; preferred affinity and anti-affinity, with their signed weight).
REQUIRED_ANTI_AFFINITY = "required-anti-affinity"
REQUIRED_AFFINITY = "required-affinity"
PREFERRED = "preferred"

IndexKey = tuple[str, AffinityTerm, int]


def _index_keys(pod: PodInfo) -> tuple[IndexKey, ...]:
    try:
        terms = pod_affinity_terms(pod)
    except ValueError:  # kube-scheduler keeps such a pod without its terms
        return ()
    if not terms:
        return ()
    return (
        *((REQUIRED_ANTI_AFFINITY, t, 1) for t in terms.required_anti_affinity),
        *((REQUIRED_AFFINITY, t, 1) for t in terms.required_affinity),
        *((PREFERRED, w.term, w.weight) for w in terms.preferred_affinity),
        *((PREFERRED, w.term, -w.weight) for w in terms.preferred_anti_affinity),
    )


class ExistingPodTerms:
    """Per node row, how many placed pods carry each affinity term, kept in step with the node
    table by re-reading only the rows it logged as changed (of each row, the pods with terms)."""

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._epoch = -1
        self._reset()

    def _reset(self) -> None:
        self._logged = 0
        self._rows: list[dict[str, tuple[PodInfo, tuple[IndexKey, ...]]]] = []
        self._row_keys: list[Counter[IndexKey]] = []
        self.counts: dict[IndexKey, np.ndarray] = {}  # key -> pods carrying it, per row
        self._totals: Counter[IndexKey] = Counter()

    def sync(self, table: NodeTable) -> None:
        n = len(table)
        same_table = table is self._table and table.epoch == self._epoch
        if same_table and len(table.changed_rows) == self._logged and len(self._rows) == n:
            return
        if not same_table:
            self._reset()
            self._table, self._epoch = table, table.epoch
            changed: set[int] = set(range(n))
        else:
            changed = {i for i in table.changed_rows[self._logged :] if i < n}
            changed.update(range(len(self._rows), n))
        self._logged = len(table.changed_rows)
        while len(self._rows) > n:  # rows of removed nodes
            self._apply(len(self._rows) - 1, self._row_keys.pop(), -1)
            self._rows.pop()
        while len(self._rows) < n:
            self._rows.append({})
            self._row_keys.append(Counter())
        for i in changed:
            self._resync_row(table, i)

    def _resync_row(self, table: NodeTable, i: int) -> None:
        """Count the terms of the row's pods that are new or replaced, uncount those of pods
        gone or replaced; a pod object seen before keeps its parsed terms."""
        old, current = self._rows[i], table.pods_with_affinity[i]
        if not old and not current:
            return  # no pod on the row has terms, before or now (most rows, most binds)
        rows: dict[str, tuple[PodInfo, tuple[IndexKey, ...]]] = {}
        gained: list[tuple[IndexKey, ...]] = []
        lost: list[tuple[IndexKey, ...]] = []
        for key, pod in current.items():
            seen = old.get(key)
            if seen is not None and seen[0] is pod:
                rows[key] = seen
                continue
            keys = _index_keys(pod)
            rows[key] = (pod, keys)
            if keys:
                gained.append(keys)
            if seen is not None and seen[1]:
                lost.append(seen[1])
        if self._row_keys[i]:  # some pod on the row carried terms: see which are gone
            lost += [seen[1] for key, seen in old.items() if seen[1] and key not in current]
        self._rows[i] = rows
        if not gained and not lost:
            return
        delta: Counter[IndexKey] = Counter()
        for keys in gained:
            delta.update(keys)
        for keys in lost:
            delta.subtract(keys)
        changed = {key: count for key, count in delta.items() if count}
        if changed:
            self._apply(i, changed, 1)
            row_keys = self._row_keys[i]
            for index_key, count in changed.items():
                row_keys[index_key] += count
                if not row_keys[index_key]:
                    del row_keys[index_key]

    def _apply(self, i: int, keys: Mapping[IndexKey, int], sign: int) -> None:
        for key, count in keys.items():
            vector = self.counts.get(key)
            if vector is None:
                vector = self.counts[key] = np.zeros(max(16, len(self._rows)), np.int64)
            elif i >= len(vector):
                vector = self.counts[key] = np.concatenate(
                    [vector, np.zeros(max(len(vector), i + 1 - len(vector)), np.int64)]
                )
            vector[i] += sign * count
            self._totals[key] += sign * count
            if self._totals[key] == 0:
                del self._totals[key], self.counts[key]

    def none_placed(self, table: NodeTable) -> bool:
        """Whether no pod placed on `table` carries terms, known without a `sync`: the table
        files none, and none is counted here that a sync would have to take out."""
        return not table.pods_with_affinity_count and not self.counts

    def terms(self, kind: str) -> list[tuple[AffinityTerm, int, np.ndarray]]:
        """The terms of this kind placed pods carry: (term, weight, pods carrying it per row)."""
        n = len(self._rows)
        return [(t, w, _sized(v, n)) for (k, t, w), v in self.counts.items() if k == kind]


def _sized(vector: np.ndarray, n: int) -> np.ndarray:
    if len(vector) >= n:
        return vector[:n]
    return np.concatenate([vector, np.zeros(n - len(vector), np.int64)])
