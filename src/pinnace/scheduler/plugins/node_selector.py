"""Node selectors evaluated over every node at once: the node affinity of
`pinnace.scheduling.nodeaffinity` (component-helpers' scheduling/corev1/nodeaffinity),
vectorised over the node table by the label index. Each function gives, for every node, what
the matching one node at a time gives.
"""

from __future__ import annotations

import numpy as np

from pinnace.api.labels import (
    DOES_NOT_EXIST,
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_EQUALS,
    NOT_IN,
    Requirement,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.label_index import label_index
from pinnace.scheduling.nodeaffinity import (
    NODE_NAME_FIELD,
    FieldRequirement,
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)


def term_mask(table: NodeTable, term: NodeSelectorTerm) -> np.ndarray:
    result = np.full(len(table), not term.errors)
    if term.errors:
        return result
    for requirement in term.expressions or ():
        result &= requirement_mask(table, requirement)
    for field_requirement in term.fields or ():
        result &= _field_mask(table, field_requirement)
    return result


def requirement_mask(table: NodeTable, requirement: Requirement) -> np.ndarray:
    """Which nodes' labels satisfy `requirement`, by the label index."""
    index = label_index(table)
    codes = index.codes(requirement.key)
    op = requirement.operator
    if op == EXISTS:
        return codes >= 0
    if op == DOES_NOT_EXIST:
        return codes < 0
    vocabulary = index.vocabulary(requirement.key)
    lookup = np.zeros(len(vocabulary) + 1, bool)  # the last slot is a node without the key
    if op in (GREATER_THAN, LESS_THAN):
        for value, code in vocabulary.items():
            lookup[code] = requirement.matches({requirement.key: value})
    else:
        for value in requirement.values:
            found = vocabulary.get(value)
            if found is not None:
                lookup[found] = True
        if op in (NOT_IN, NOT_EQUALS):
            lookup = ~lookup  # a node without the key matches NotIn
        else:
            assert op in (IN, EQUALS, DOUBLE_EQUALS), op
    return lookup[codes]  # MISSING (-1) picks the last slot


def _field_mask(table: NodeTable, requirement: FieldRequirement) -> np.ndarray:
    if requirement.key != NODE_NAME_FIELD:
        return np.full(len(table), requirement.matches(""))
    result = np.full(len(table), requirement.negated)
    i = table.index.get(requirement.value)
    if i is not None:
        result[i] = not requirement.negated
    return result


def selector_mask(table: NodeTable, selector: NodeSelector) -> np.ndarray:
    """Which nodes match `selector` (any of its terms)."""
    result = np.zeros(len(table), bool)
    for term in selector.terms:
        result |= term_mask(table, term)
    return result


def cached_affinity_mask(table: NodeTable, affinity: RequiredNodeAffinity) -> np.ndarray:
    """`affinity_mask(table, affinity)`, kept up to date row by row between pods of the same
    spec (do not modify it)."""
    if affinity.empty:
        return np.ones(len(table), bool)
    return label_index(table).vector(
        ("RequiredNodeAffinity", affinity.key),
        lambda rows: affinity_mask(table, affinity)[rows],
        lambda i: affinity.matches(table.labels[i], table.names[i]),
    )


def affinity_mask(table: NodeTable, affinity: RequiredNodeAffinity) -> np.ndarray:
    """Which nodes match the pod's node selector and required node affinity."""
    result = np.ones(len(table), bool)
    if affinity.label_selector is not None:
        for requirement in affinity.label_selector.requirements:
            result &= requirement_mask(table, requirement)
    if affinity.node_selector is not None:
        result &= selector_mask(table, affinity.node_selector)
    return result


def preferred_score(
    table: NodeTable, preferred: PreferredSchedulingTerms, nodes: np.ndarray
) -> np.ndarray:
    """The sum of the weights of the terms each of `nodes` matches."""
    total = np.zeros(len(nodes), np.int64)
    for weight, term in preferred.terms:
        total += weight * term_mask(table, term)[nodes]
    return total
