"""Which objects a list or watch returns: its label and field selectors, compiled per kind.

kube-apiserver's watch cache keeps each object's labels and fields beside it (storage/cacher's
storeElement), so a list by selector tests every object without decoding any. Pinnace's store
keeps most objects packed; a filter tells it which need no decoding (`may_match`): those whose
JSON text lacks a label the label selector requires.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.api.fieldselector import FieldSelector, convert_field_selector, field_reader
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector, required_json
from pinnace.api.objects import Object
from pinnace.api.options import ListOptions, parse_selectors


@dataclass(frozen=True)
class Filter:
    kind: Kind
    labels: LabelSelector | None
    fields: FieldSelector | None
    required: tuple[tuple[bytes, ...], ...] = ()
    """`required_json(labels)`: an object's text holds one of each."""
    _field_terms: tuple[
        tuple[Callable[[Mapping[str, Any]], str], tuple[tuple[bool, str], ...]], ...
    ] = field(init=False, repr=False, compare=False)
    """The field selector's terms by field, in order, each field with what reads it and its
    terms' (equal, value): a watch tests every change (and the object it replaced) against
    them, and a field two terms test (the scheduler's status.phase, neither Succeeded nor
    Failed) is read once."""

    def __post_init__(self) -> None:
        terms = self.fields.terms if self.fields is not None else ()
        by_field: dict[str, list[tuple[bool, str]]] = {}
        for name, eq, value in terms:
            by_field.setdefault(name, []).append((eq, value))
        group, kind = self.kind.group, self.kind.kind
        selectable = self.kind.selectable_fields
        compiled = tuple(
            (field_reader(group, kind, name, selectable), tuple(checks))
            for name, checks in by_field.items()
        )
        object.__setattr__(self, "_field_terms", compiled)

    @property
    def everything(self) -> bool:
        return self.labels is None and self.fields is None

    def matches(self, obj: Object) -> bool:
        if self.labels is not None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if not self.labels.matches(labels):
                return False
        for read, checks in self._field_terms:  # loops, not generators: a hot path
            found = read(obj)
            for equal, value in checks:
                if (found == value) is not equal:
                    return False
        return True

    def may_match(self, text: bytes) -> bool:
        return all(any(label in text for label in any_of) for any_of in self.required)


def filter_for(kind: Kind, options: ListOptions) -> Filter:
    """The options' selectors, checked against the kind (unknown field labels are a 400)."""
    selectors = parse_selectors(options)
    labels = selectors.labels if selectors.labels and not selectors.labels.empty else None
    fields = None
    if selectors.fields is not None and not selectors.fields.empty:
        fields = convert_field_selector(
            kind.group,
            kind.kind,
            selectors.fields,
            custom=kind.custom,
            namespaced=kind.namespaced,
            selectable=kind.selectable_fields,
        )
    return Filter(kind, labels, fields, required_json(labels) if labels is not None else ())
