"""Node selectors evaluated over every node at once (component-helpers' scheduling/corev1/
nodeaffinity, vectorised): a pod's spec.nodeSelector and required node affinity, and preferred
scheduling terms.

Semantics of v1.32: terms are ORed, a term's expressions and fields ANDed; a term with neither
matches nothing; a term that does not parse (unknown operator, a Gt value that is not an
integer, a field requirement without exactly one value) matches nothing either. Label
requirements reuse `pinnace.api.labels`; the only node field is `metadata.name`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnace.api import field as fielderr
from pinnace.api.field import Path
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
    SelectorError,
    new_requirement,
    selector_from_set,
)
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.label_index import label_index
from pinnace.scheduler.podinfo import PodInfo

NODE_NAME_FIELD = "metadata.name"
_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
    "Gt": GREATER_THAN,
    "Lt": LESS_THAN,
}
_FIELD_OPERATORS = ("In", "NotIn")


class NodeSelectorError(ValueError):
    """Terms that do not parse, worded as field errors."""


@dataclass(frozen=True)
class FieldRequirement:
    """`key` In/NotIn a single value, over the node's fields."""

    key: str
    value: str
    negated: bool

    def matches(self, name: str) -> bool:
        actual = name if self.key == NODE_NAME_FIELD else ""
        return (actual == self.value) != self.negated


@dataclass(frozen=True)
class NodeSelectorTerm:
    expressions: tuple[Requirement, ...] | None  # None: the term has no matchExpressions
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[str, ...] = ()

    @classmethod
    def parse(cls, term: Mapping[str, Any], path: Path) -> NodeSelectorTerm:
        errors: list[str] = []
        expressions = fields = None
        if term.get("matchExpressions"):
            expressions = _label_requirements(
                term["matchExpressions"], path.child("matchExpressions"), errors
            )
        if term.get("matchFields"):
            fields = _field_requirements(term["matchFields"], path.child("matchFields"), errors)
        return cls(expressions, fields, tuple(errors))

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.errors:
            return False
        if self.expressions is not None and not all(r.matches(labels) for r in self.expressions):
            return False
        return self.fields is None or all(f.matches(name) for f in self.fields)

    def mask(self, table: NodeTable) -> np.ndarray:
        result = np.full(len(table), not self.errors)
        if self.errors:
            return result
        for requirement in self.expressions or ():
            result &= requirement_mask(table, requirement)
        for field_requirement in self.fields or ():
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


class NodeSelector:
    """v1.NodeSelector: its non-empty terms, ORed."""

    def __init__(self, selector: Mapping[str, Any], path: Path | None = None) -> None:
        path = path or Path("nodeSelectorTerms")
        self.terms = tuple(
            NodeSelectorTerm.parse(term, path.index(i))
            for i, term in enumerate(selector.get("nodeSelectorTerms") or ())
            if term.get("matchExpressions") or term.get("matchFields")
        )

    def errors(self) -> list[str]:
        return [e for term in self.terms for e in term.errors]

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return any(term.matches(labels, name) for term in self.terms)

    def mask(self, table: NodeTable) -> np.ndarray:
        result = np.zeros(len(table), bool)
        for term in self.terms:
            result |= term.mask(table)
        return result


class RequiredNodeAffinity:
    """spec.nodeSelector AND spec.affinity.nodeAffinity.requiredDuringScheduling... of a pod
    (GetRequiredNodeAffinity); parse errors make terms match nothing, as the scheduler
    ignores them."""

    def __init__(self, spec: Mapping[str, Any], key: str = "") -> None:
        self.key = key or _required_key(spec)
        node_selector = spec.get("nodeSelector") or {}
        self.label_selector = selector_from_set(node_selector) if node_selector else None
        required = required_affinity(spec)
        self.node_selector = NodeSelector(required) if required is not None else None

    @property
    def empty(self) -> bool:
        return self.label_selector is None and self.node_selector is None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.label_selector is not None and not self.label_selector.matches(labels):
            return False
        return self.node_selector is None or self.node_selector.matches(labels, name)

    def cached_mask(self, table: NodeTable) -> np.ndarray:
        """`mask(table)`, kept up to date row by row between pods of the same spec (do not
        modify it)."""
        if self.empty:
            return np.ones(len(table), bool)
        return label_index(table).vector(
            ("RequiredNodeAffinity", self.key),
            lambda rows: self.mask(table)[rows],
            lambda i: self.matches(table.labels[i], table.names[i]),
        )

    def mask(self, table: NodeTable) -> np.ndarray:
        result = np.ones(len(table), bool)
        if self.label_selector is not None:
            for requirement in self.label_selector.requirements:
                result &= requirement_mask(table, requirement)
        if self.node_selector is not None:
            result &= self.node_selector.mask(table)
        return result


class PreferredSchedulingTerms:
    """Weighted terms; a node scores the sum of the weights of the terms it matches. Terms of
    weight 0 and empty terms are left out; any term that does not parse is an error."""

    def __init__(self, terms: Sequence[Mapping[str, Any]], path: Path | None = None) -> None:
        parsed: list[tuple[int, NodeSelectorTerm]] = []
        errors: list[str] = []
        for i, term in enumerate(terms):
            weight = int(term.get("weight") or 0)
            preference = term.get("preference") or {}
            if weight == 0 or not (
                preference.get("matchExpressions") or preference.get("matchFields")
            ):
                continue
            at = path.index(i) if path else Path(f"[{i}]")
            selector_term = NodeSelectorTerm.parse(preference, at)
            errors += selector_term.errors
            parsed.append((weight, selector_term))
        if errors:
            raise NodeSelectorError(", ".join(errors))
        self.terms = tuple(parsed)

    def score(self, table: NodeTable, nodes: np.ndarray) -> np.ndarray:
        total = np.zeros(len(nodes), np.int64)
        for weight, term in self.terms:
            total += weight * term.mask(table)[nodes]
        return total


_REQUIRED_CACHE: dict[str, RequiredNodeAffinity] = {}
_REQUIRED_CACHE_LIMIT = 1024


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """The pod's RequiredNodeAffinity; pods stamped from one template share one."""
    spec = pod.pod.get("spec") or {}
    key = _required_key(spec)
    cached = _REQUIRED_CACHE.get(key)
    if cached is None:
        if len(_REQUIRED_CACHE) >= _REQUIRED_CACHE_LIMIT:
            _REQUIRED_CACHE.clear()
        cached = _REQUIRED_CACHE[key] = RequiredNodeAffinity(spec, key)
    return cached


def _required_key(spec: Mapping[str, Any]) -> str:
    return repr((spec.get("nodeSelector"), required_affinity(spec)))


def required_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")


def preferred_terms(spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    return node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")


def _label_requirements(
    expressions: Sequence[Mapping[str, Any]], path: Path, errors: list[str]
) -> tuple[Requirement, ...]:
    requirements = []
    for j, expression in enumerate(expressions):
        at = path.index(j)
        operator = expression.get("operator") or ""
        op = _OPERATORS.get(operator)
        if op is None:
            supported = tuple(_OPERATORS)
            errors.append(str(fielderr.not_supported(at.child("operator"), operator, supported)))
            continue
        try:
            requirements.append(
                new_requirement(expression.get("key") or "", op, expression.get("values") or (), at)
            )
        except SelectorError as e:
            errors.append(str(e))
    return tuple(requirements)


def _field_requirements(
    expressions: Sequence[Mapping[str, Any]], path: Path, errors: list[str]
) -> tuple[FieldRequirement, ...]:
    requirements = []
    for j, expression in enumerate(expressions):
        at = path.index(j)
        operator = expression.get("operator") or ""
        values = list(expression.get("values") or ())
        if operator not in _FIELD_OPERATORS:
            supported = _FIELD_OPERATORS
            errors.append(str(fielderr.not_supported(at.child("operator"), operator, supported)))
        elif len(values) != 1:
            detail = "must have one element"
            errors.append(str(fielderr.invalid(at.child("values"), values, detail)))
        else:
            key = expression.get("key") or ""
            requirements.append(FieldRequirement(key, values[0], operator == "NotIn"))
    return tuple(requirements)
