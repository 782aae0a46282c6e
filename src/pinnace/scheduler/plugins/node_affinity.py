"""NodeAffinity (pkg/scheduler/framework/plugins/nodeaffinity): a node must match the pod's
spec.nodeSelector and required node affinity, and the scheduler-enforced `addedAffinity`
argument (Filter, UnschedulableAndUnresolvable); preferred terms, the pod's and the added
ones, score the sum of the weights of the terms a node matches (Score, default normalisation).

PreFilter narrows the nodes when every required term names nodes with `matchFields`
`metadata.name In`: kube-scheduler then filters only those nodes and says of the others
"node(s) didn't satisfy plugin(s) [NodeAffinity]". Here the Filter rejects them with that
reason; an earlier Filter plugin that rejects such a node is named instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.api.field import Path
from pinnace.scheduler.events import NODE, NODE_ADD, UPDATE_NODE_LABEL, ClusterEvent
from pinnace.scheduler.framework import (
    SKIP,
    SUCCESS,
    CycleState,
    Status,
    default_normalize_score,
    error,
    unresolvable,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.label_index import label_index
from pinnace.scheduler.plugins.node_selector import (
    cached_affinity_mask,
    preferred_score,
    selector_mask,
)
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.nodeaffinity import (
    NODE_NAME_FIELD,
    NodeSelector,
    NodeSelectorError,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    preferred_terms,
    required_affinity,
    required_node_affinity,
)

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
ERR_REASON_NOT_NAMED = f"node(s) didn't satisfy plugin(s) [{NAME}]"
_PRE_FILTER_KEY = "PreFilter" + NAME
_PRE_SCORE_KEY = "PreScore" + NAME


@dataclass(frozen=True)
class _PreFilterState:
    required: RequiredNodeAffinity
    node_names: frozenset[str] | None  # None: every node


class NodeAffinity:
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        added = (args or {}).get("addedAffinity") or {}
        self.added_node_selector: NodeSelector | None = None
        self.added_preferred: PreferredSchedulingTerms | None = None
        required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            path = Path("addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
            selector = NodeSelector(required, path.child("nodeSelectorTerms"))
            if selector.errors():
                raise ValueError(
                    "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
                    + ", ".join(selector.errors())
                )
            self.added_node_selector = selector
        preferred = added.get("preferredDuringSchedulingIgnoredDuringExecution")
        if preferred:
            path = Path("addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
            try:
                self.added_preferred = PreferredSchedulingTerms(preferred, path)
            except NodeSelectorError as e:
                raise ValueError(
                    f"parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {e}"
                ) from None

    # Filtering.
    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> Status:
        spec = pod.pod.get("spec") or {}
        required = required_affinity(spec)
        if required is None and self.added_node_selector is None and not spec.get("nodeSelector"):
            return SKIP
        node_names = _named_nodes(required)
        state.write(_PRE_FILTER_KEY, _PreFilterState(required_node_affinity(spec), node_names))
        if node_names is not None and not node_names:
            return unresolvable(ERR_REASON_CONFLICT)
        return SUCCESS

    def filter(
        self, state: CycleState, pod: PodInfo, table: NodeTable, feasible: np.ndarray
    ) -> np.ndarray:
        s = self._pre_filter_state(state, pod)
        result = feasible & cached_affinity_mask(table, s.required)
        if self.added_node_selector is not None:
            added = self.added_node_selector
            result &= label_index(table).vector(
                (NAME, "addedAffinity", id(self)),
                lambda rows: selector_mask(table, added)[rows],
                lambda i: added.matches(table.labels[i], table.names[i]),
            )
        if s.node_names is not None:
            named = np.zeros(len(table), bool)
            rows = [table.index[n] for n in s.node_names if n in table.index]
            named[rows] = True
            result &= named
        return result

    def node_status(self, state: CycleState, pod: PodInfo, table: NodeTable, i: int) -> Status:
        s = self._pre_filter_state(state, pod)
        name, labels = table.names[i], table.labels[i]
        if s.node_names is not None and name not in s.node_names:
            return unresolvable(ERR_REASON_NOT_NAMED)
        if self.added_node_selector is not None and not self.added_node_selector.matches(
            labels, name
        ):
            return unresolvable(ERR_REASON_ENFORCED)
        if not s.required.matches(labels, name):
            return unresolvable(ERR_REASON_POD)
        return SUCCESS

    def _pre_filter_state(self, state: CycleState, pod: PodInfo) -> _PreFilterState:
        s = state.data.get(_PRE_FILTER_KEY)
        if s is None:  # PreFilter disabled: no narrowing, as in kube-scheduler
            s = _PreFilterState(required_node_affinity(pod.pod.get("spec") or {}), None)
        return s

    # Scoring.
    def pre_score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> Status:
        try:
            preferred = _pod_preferred(pod)
        except NodeSelectorError as e:
            return error(str(e))
        if preferred is None and self.added_preferred is None:
            return SKIP
        state.write(_PRE_SCORE_KEY, preferred)
        return SUCCESS

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        scores = np.zeros(len(nodes), np.int64)
        if self.added_preferred is not None:
            scores += preferred_score(table, self.added_preferred, nodes)
        if _PRE_SCORE_KEY in state.data:
            preferred = state.read(_PRE_SCORE_KEY)
        else:
            preferred = _pod_preferred(pod)
        if preferred is not None:
            scores += preferred_score(table, preferred, nodes)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    def events_to_register(self) -> list[ClusterEvent]:
        return [NODE_ADD, ClusterEvent(NODE, UPDATE_NODE_LABEL)]


def _named_nodes(required: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The nodes the required terms name with `metadata.name In`: within a term the names
    are intersected, across terms united; None when some term names no nodes."""
    if required is None:
        return None
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for r in term.get("matchFields") or ():
            if r.get("key") == NODE_NAME_FIELD and r.get("operator") == "In":
                values = set(r.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def _pod_preferred(pod: PodInfo) -> PreferredSchedulingTerms | None:
    terms = preferred_terms(pod.pod.get("spec") or {})
    return None if terms is None else PreferredSchedulingTerms(terms)
