"""Field ownership across writes, as structured-merge-diff's merge.Updater keeps it.

`apply` merges an applier's configuration into the live object, removes what the applier
stopped setting (unless someone else owns it) and fails on conflicts unless forced;
`update` records who changed what in an ordinary write. Both work on objects without
`metadata.managedFields` and on decoded entries (`managed.Managed`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pinnace.api.patch.fieldpath import FieldSet
from pinnace.api.patch.managed import Entry, Managed
from pinnace.api.patch.openapi import Shape
from pinnace.api.patch.typed import (
    Comparison,
    compare,
    ensure_named_fields_are_members,
    merge,
    remove_items,
    to_field_set,
    with_zero_structs,
)

__all__ = ["Conflicts", "apply", "update"]


class Conflicts(Exception):
    """Fields another manager owns that a write would change, by manager identifier."""

    def __init__(self, conflicts: dict[str, FieldSet]) -> None:
        super().__init__(f"{len(conflicts)} manager(s) in conflict")
        self.conflicts = conflicts


def apply(
    live: dict[str, Any],
    config: dict[str, Any],
    shape: Shape,
    managed: Managed,
    manager_id: str,
    version: str,
    *,
    force: bool,
    ignored: FieldSet,
) -> tuple[dict[str, Any], Managed]:
    """The object after applying `config` as `manager_id`, and the new ownership.
    ValidationErrors when `config` does not fit the shape; Conflicts unless forced."""
    applied = to_field_set(config, shape).recursive_difference(ignored)
    merged = merge(live, config, shape)
    last = managed.get(manager_id)
    managed = {**managed, manager_id: Entry(applied, version, True, last.time if last else None)}
    if last is not None and not last.fields.empty():
        merged = _prune(merged, managed, last.fields, shape)
    managed, _ = _settle(live, merged, shape, managed, manager_id, force, ignored)
    return merged, managed


def update(
    old: dict[str, Any],
    new: dict[str, Any],
    shape: Shape,
    managed: Managed,
    manager_id: str,
    *,
    ignored: FieldSet,
) -> tuple[FieldSet, Managed]:
    """The fields `new` changes from `old`, and the other managers' ownership without them
    (an update always wins)."""
    managed, comparison = _settle(old, new, shape, managed, manager_id, True, ignored)
    changed = comparison.modified.union(comparison.added)
    return changed, managed


def _settle(
    old: dict[str, Any],
    new: dict[str, Any],
    shape: Shape,
    managed: Managed,
    manager_id: str,
    force: bool,
    ignored: FieldSet,
) -> tuple[Managed, Comparison]:
    """Take from the other managers what the write changes or removes (smd's update)."""
    old, new = _outside(old, ignored), _outside(new, ignored)
    comparison = compare(
        with_zero_structs(old, shape), with_zero_structs(new, shape), shape
    ).exclude(ignored)
    set_now = comparison.modified.union(comparison.added)
    conflicts: dict[str, FieldSet] = {}
    for other, entry in managed.items():
        if other != manager_id:
            clash = entry.fields.intersection(set_now)
            if not clash.empty():
                conflicts[other] = clash
    if conflicts and not force:
        raise Conflicts(conflicts)
    out: Managed = {}
    for other, entry in managed.items():
        fields = entry.fields
        if other != manager_id:
            if other in conflicts:
                fields = fields.difference(conflicts[other])
            fields = fields.difference(comparison.removed)
        if not fields.empty():
            out[other] = entry if fields is entry.fields else replace(entry, fields=fields)
    return out, comparison


def _outside(value: Any, ignored: FieldSet) -> Any:
    """`value` without the fields `ignored` names: what the comparison would find in them is
    left out of its result anyway (a status write need not compare the spec)."""
    if not isinstance(value, dict) or ignored.empty():
        return value
    out = {k: v for k, v in value.items() if "f:" + k not in ignored.members}
    for element, below in ignored.children.items():
        name = element[2:]
        if element.startswith("f:") and name in out:
            out[name] = _outside(out[name], below)
    return out


def _prune(merged: Any, managed: Managed, last: FieldSet, shape: Shape) -> Any:
    """`merged` without what the applier set last time and no longer does, unless another
    manager owns it: smd's prune, addBackOwnedItems and addBackDanglingItems."""

    def named(fields: FieldSet) -> FieldSet:
        return ensure_named_fields_are_members(fields, shape)

    def fields_of(value: Any) -> FieldSet:
        return named(to_field_set(value, shape, strict=False))

    last_named = named(last)
    pruned = remove_items(merged, last_named, shape)
    owned = FieldSet()
    for entry in managed.values():
        owned = owned.union(entry.fields)
    merged_set = fields_of(merged)
    pruned = remove_items(
        merged, merged_set.difference(fields_of(pruned).union(named(owned))), shape
    )
    dangling = merged_set.difference(fields_of(pruned)).intersection(last_named)
    return remove_items(merged, dangling, shape)
