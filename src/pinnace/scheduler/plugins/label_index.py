"""Per-node label values and matching-pod counts as NumPy columns, for the plugins that select
nodes by label (NodeAffinity) or count pods per topology domain (PodTopologySpread).

A label key's values are interned: each node gets the code of its value (-1 when the node lacks
the key), so `In`, `Exists` or a topology domain become array look-ups over every node. Both the
codes and the per-node counts of pods matching a selector are `RowCache` vectors: after a bind
only the changed row is recomputed.

The index belongs to one `NodeTable` and is found with `label_index(table)`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from pinnace.api.labels import LabelSelector
from pinnace.scheduler.nodetable import NodeTable, RowCache, Rows
from pinnace.scheduler.podinfo import PodInfo

MISSING = -1


class LabelIndex:
    def __init__(self, table: NodeTable) -> None:
        self._table = weakref.ref(table)
        self._vocabularies: dict[str, dict[str, int]] = {}
        self._codes = RowCache(limit=256)
        self._counts = RowCache(limit=256)
        self._vectors = RowCache(limit=256)

    def vocabulary(self, key: str) -> dict[str, int]:
        """Value -> code of label `key`, for every value seen so far (codes never change)."""
        return self._vocabularies.setdefault(key, {})

    def codes(self, key: str) -> np.ndarray:
        """int32 per node: the code of the node's value of `key`, or MISSING."""
        table = self._live_table()
        vocabulary = self.vocabulary(key)

        def code_of(i: int) -> int:
            value = table.labels[i].get(key)
            if value is None:
                return MISSING
            return vocabulary.setdefault(value, len(vocabulary))

        def compute(rows: Rows) -> np.ndarray:
            return np.array([code_of(i) for i in _row_numbers(table, rows)], np.int32)

        return self._codes.get(table, key, compute, code_of)

    def matching_pods(self, namespace: str, selector: LabelSelector) -> np.ndarray:
        """int64 per node: pods on it in `namespace`, not being deleted, whose labels match
        `selector` (countPodsMatchSelector)."""
        table = self._live_table()

        def count(i: int) -> int:
            return sum(1 for pod in table.pods[i].values() if counts_for(pod, namespace, selector))

        def compute(rows: Rows) -> np.ndarray:
            if isinstance(rows, slice):
                return _matching_by_labels(table, namespace, selector)[rows]
            return np.array([count(i) for i in rows.tolist()], np.int64)

        key: Hashable = (namespace, selector)
        return self._counts.get(table, key, compute, count)

    def vector(
        self,
        key: Hashable,
        compute: Callable[[Rows], np.ndarray],
        compute_one: Callable[[int], Any],
    ) -> np.ndarray:
        """Any per-node vector that depends only on node rows (a selector's verdicts), kept
        like the others; `key` must identify what is computed. Read-only for callers."""
        return self._vectors.get(self._live_table(), key, compute, compute_one)

    def _live_table(self) -> NodeTable:
        table = self._table()
        if table is None:
            raise RuntimeError("the node table of this label index is gone")
        return table


def counts_for(pod: PodInfo, namespace: str, selector: LabelSelector) -> bool:
    """Whether an existing pod counts for a topology spread or an owner's pods: same namespace,
    not terminating (kubernetes#87621) and matched by the selector."""
    return pod.namespace == namespace and not pod.deleting and selector.matches(pod.labels)


_INDEXES: weakref.WeakKeyDictionary[NodeTable, LabelIndex] = weakref.WeakKeyDictionary()


def label_index(table: NodeTable) -> LabelIndex:
    index = _INDEXES.get(table)
    if index is None:
        index = _INDEXES[table] = LabelIndex(table)
    return index


def _matching_by_labels(table: NodeTable, namespace: str, selector: LabelSelector) -> np.ndarray:
    """`matching_pods` on every node, from the table's pods grouped by labels: the selector
    is matched once per set of labels."""
    counts = np.zeros(len(table), np.int64)
    for labels, on_nodes in table.pods_by_labels.get(namespace, {}).values():
        if selector.matches(labels):
            rows = np.fromiter(map(table.index.__getitem__, on_nodes), np.intp, len(on_nodes))
            counts[rows] += np.fromiter(on_nodes.values(), np.int64, len(on_nodes))
    return counts


def _row_numbers(table: NodeTable, rows: Rows) -> range | list[int]:
    return range(*rows.indices(len(table))) if isinstance(rows, slice) else rows.tolist()
