"""Walks of an object against its shape, as structured-merge-diff's typed package does them:
the set of fields a value sets, merging an applied configuration into a live object,
comparing two objects, and removing items.

A field declared by a struct or a map entry is addressed `f:<name>`; list items by key
(list maps), value (sets) or index. Atomic values (scalars, atomic lists, maps and structs)
are leaves: they are owned, compared and replaced whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pinnace.api.patch.fieldpath import FieldSet, key_element, path_string, value_element
from pinnace.api.patch.openapi import NULL_LIST_FIELDS, SCALAR, VALUE_STRUCT_FIELDS, Shape

__all__ = [
    "MISSING",
    "Comparison",
    "compare",
    "ensure_named_fields_are_members",
    "merge",
    "remove_items",
    "to_field_set",
    "with_zero_structs",
]

Path = tuple[str, ...]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""An absent value (a field that is not there), unlike a present null."""


class ValidationErrors(Exception):
    """smd's ValidationErrors: one line each, `<path>: <message>`."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        text = errors[0] if len(errors) == 1 else "\n  ".join(["errors:", *errors])
        super().__init__(text)


def _error(path: Path, message: str) -> str:
    return f"{path_string(path)}: {message}" if path else message


def _is_leaf(shape: Shape, lhs: Any, rhs: Any) -> bool:
    if shape.atomic:
        return True
    kind = dict if shape.kind in ("struct", "map") else list
    sides = [v for v in (lhs, rhs) if v is not MISSING and v is not None]
    if any(not isinstance(v, kind) for v in sides):
        return True
    return all(not v for v in sides)


def _child_shape(shape: Shape, name: str) -> Shape:
    return shape.child(name) or SCALAR


def item_element(shape: Shape, item: Any, index: int) -> str:
    """The path element of a list item; ValueError when the item cannot have one."""
    if shape.relationship == "map":
        if item is None:
            raise ValueError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ValueError("associative list with keys may not have non-map elements")
        keys: dict[str, Any] = {}
        for name in shape.keys:
            if name in item:
                keys[name] = item[name]
            elif shape.key_default(name) is not None:
                keys[name] = shape.key_default(name)
            else:
                raise ValueError(
                    f'associative list with keys has an element that omits key field "{name}"'
                    " (and doesn't have default value)"
                )
        return key_element(keys)
    if shape.relationship == "set":
        if isinstance(item, dict):
            raise ValueError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise ValueError("not supported: associative list with lists as elements")
        if item is None:
            raise ValueError("associative list without keys has an element that's an explicit null")
        return value_element(item)
    return f"i:{index}"


def _indexed(shape: Shape, items: list[Any]) -> tuple[list[str], dict[str, Any]]:
    """Items by path element, first occurrence winning, in list order."""
    order: list[str] = []
    found: dict[str, Any] = {}
    for n, item in enumerate(items):
        try:
            element = item_element(shape, item, n)
        except ValueError:
            continue
        if element not in found:
            found[element] = item
            order.append(element)
    return order, found


# The set of fields a value sets.


def to_field_set(value: Any, shape: Shape, *, strict: bool = True) -> FieldSet:
    """Every leaf, list item and map entry `value` mentions; ValidationErrors when it does
    not fit the shape (undeclared fields, list items without keys, duplicate keys).

    Not strict, a stored object's set: undeclared fields count as leaves and items that
    cannot be addressed are skipped, as smd does for live objects (AllowDuplicates)."""
    out = FieldSet()
    errors: list[str] = []
    _collect(value, shape, (), out, errors, strict)
    if errors and strict:
        raise ValidationErrors(errors)
    return out


def _collect(
    value: Any, shape: Shape, path: Path, out: FieldSet, errors: list[str], strict: bool
) -> None:
    if shape.atomic:
        out.insert(path)
        return
    if value is None:
        return
    if shape.kind in ("struct", "map"):
        if not isinstance(value, dict):
            errors.append(_error(path, f"expected map, got {value!r}"))
            return
        for name, child in value.items():
            declared = shape.kind == "struct" and name in shape.fields()
            if shape.kind == "struct" and not declared:
                if not shape.unknown_fields:
                    errors.append(_error((*path, "f:" + name), "field not declared in schema"))
                if shape.unknown_fields or not strict:
                    out.insert((*path, "f:" + name))
                continue
            child_path = (*path, "f:" + name)
            _collect(child, _child_shape(shape, name), child_path, out, errors, strict)
            # A named field is a member only when it holds nothing to descend into.
            if not declared or child is None or child == {}:
                out.insert(child_path)
        return
    if not isinstance(value, list):
        errors.append(_error(path, f"expected list, got {value!r}"))
        return
    seen: set[str] = set()
    for n, item in enumerate(value):
        try:
            element = item_element(shape, item, n)
        except ValueError as e:
            errors.append(_error(path, f"element {n}: {e}"))
            continue
        if element in seen:
            errors.append(_error(path, f"duplicate entries for key {path_string((element,))}"))
            continue
        seen.add(element)
        _collect(item, shape.element or SCALAR, (*path, element), out, errors, strict)
        out.insert((*path, element))


def ensure_named_fields_are_members(fields: FieldSet, shape: Shape) -> FieldSet:
    """`fields` with every struct field it descends through made a member too, so that
    removing the set removes those fields whole (smd's EnsureNamedFieldsAreMembers)."""
    out = FieldSet()
    out.members = set(fields.members)
    for element, child in fields.children.items():
        if shape.kind == "struct" and element[2:] in shape.fields() and element[:2] == "f:":
            out.members.add(element)
        if shape.kind == "struct":
            below = _child_shape(shape, element[2:])
        else:
            below = shape.element or SCALAR
        out.children[element] = ensure_named_fields_are_members(child, below)
    return out


def with_zero_structs(value: Any, shape: Shape) -> Any:
    """`value` with the fields Go always serializes present: non-pointer structs as `{}`,
    lists without omitempty as null. kube-apiserver compares objects in that form, so a
    struct or list that merely appears is not recorded as set.

    Parts whose types hold no such fields are `value`'s own, not copies."""
    if shape.atomic or value is None or not _holds_zero_fields(shape):
        return value
    if shape.kind == "struct" and isinstance(value, dict):
        out = {k: with_zero_structs(v, _child_shape(shape, k)) for k, v in value.items()}
        for name in VALUE_STRUCT_FIELDS.get(shape.type_name, ()):
            if name not in out and name in shape.fields():
                out[name] = with_zero_structs({}, _child_shape(shape, name))
        for name in NULL_LIST_FIELDS.get(shape.type_name, ()):
            out.setdefault(name, None)
        return out
    if shape.kind == "map" and isinstance(value, dict):
        element = shape.element or SCALAR
        return {k: with_zero_structs(v, element) for k, v in value.items()}
    if shape.kind == "list" and isinstance(value, list):
        element = shape.element or SCALAR
        return [with_zero_structs(v, element) for v in value]
    return value


_HOLDS_ZERO_FIELDS: dict[Shape, bool] = {}


def _holds_zero_fields(shape: Shape) -> bool:
    """Whether `with_zero_structs` can add anything at or below a value of this shape."""
    found = _HOLDS_ZERO_FIELDS.get(shape)
    if found is None:
        _HOLDS_ZERO_FIELDS[shape] = False  # a type that contains itself adds nothing new
        found = _find_zero_fields(shape)
        _HOLDS_ZERO_FIELDS[shape] = found
    return found


def _find_zero_fields(shape: Shape) -> bool:
    if shape.atomic:
        return False
    if shape.kind != "struct":
        return _holds_zero_fields(shape.element or SCALAR)
    if VALUE_STRUCT_FIELDS.get(shape.type_name) or NULL_LIST_FIELDS.get(shape.type_name):
        return True
    return any(_holds_zero_fields(f.shape) for f in shape.fields().values())


# Merging an applied configuration into a live object.


def merge(lhs: Any, rhs: Any, shape: Shape) -> Any:
    """lhs with rhs merged in: rhs wins on leaves; list items are ordered like rhs for the
    items it names, and like lhs for the rest."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING or _is_leaf(shape, lhs, rhs):
        return rhs
    if shape.kind in ("struct", "map"):
        lhs, rhs = lhs or {}, rhs or {}
        out = {k: merge(v, rhs.get(k, MISSING), _child_shape(shape, k)) for k, v in lhs.items()}
        out.update({k: v for k, v in rhs.items() if k not in lhs})
        return out
    element = shape.element or SCALAR
    return [
        merge(left, right, element) for _, left, right in _zip_lists(shape, lhs or [], rhs or [])
    ]


def _zip_lists(shape: Shape, lhs: list[Any], rhs: list[Any]) -> list[tuple[str, Any, Any]]:
    """The items of both lists paired by path element, in smd's merged order."""
    lhs_order, lhs_items = _indexed(shape, lhs)
    rhs_order, rhs_items = _indexed(shape, rhs)
    shared = [e for e in rhs_order if e in lhs_items]
    next_shared = 0
    out: list[tuple[str, Any, Any]] = []
    i = j = 0
    while i < len(lhs_order) or j < len(rhs_order):
        if i < len(lhs_order) and j < len(rhs_order):
            element = lhs_order[i]
            if element == rhs_order[j]:
                out.append((element, lhs_items[element], rhs_items[element]))
                i, j, next_shared = i + 1, j + 1, next_shared + 1
                continue
            wanted = shared[next_shared] if next_shared < len(shared) else None
            if element in rhs_items and wanted is not None and wanted != element:
                i += 1  # a shared item, placed when the rhs reaches it
                continue
        if i < len(lhs_order) and lhs_order[i] not in rhs_items:
            element = lhs_order[i]
            out.append((element, lhs_items[element], MISSING))
            i += 1
            continue
        if j < len(rhs_order):
            element = rhs_order[j]
            out.append((element, lhs_items.get(element, MISSING), rhs_items[element]))
            j += 1
            if next_shared < len(shared) and shared[next_shared] == element:
                next_shared += 1
        else:
            i += 1
    return out


# Comparing two objects.


@dataclass
class Comparison:
    added: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    removed: FieldSet = field(default_factory=FieldSet)

    def exclude(self, ignored: FieldSet) -> Comparison:
        return Comparison(
            self.added.recursive_difference(ignored),
            self.modified.recursive_difference(ignored),
            self.removed.recursive_difference(ignored),
        )


def compare(lhs: Any, rhs: Any, shape: Shape) -> Comparison:
    out = Comparison()
    _compare(lhs, rhs, shape, (), out)
    return out


def _compare(lhs: Any, rhs: Any, shape: Shape, path: Path, out: Comparison) -> None:
    if _is_leaf(shape, lhs, rhs):
        if lhs is MISSING:
            out.added.insert(path)
        elif rhs is MISSING:
            out.removed.insert(path)
        elif not equal(lhs, rhs):
            out.modified.insert(path)
        return
    # Python's own equality (compiled) tells most differing values apart at once.
    if lhs is not MISSING and rhs is not MISSING and lhs == rhs and _identical(lhs, rhs):
        return
    if shape.kind in ("struct", "map"):
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for name in [*left, *(k for k in right if k not in left)]:
            _compare(
                left.get(name, MISSING),
                right.get(name, MISSING),
                _child_shape(shape, name),
                (*path, "f:" + name),
                out,
            )
    else:
        left_items = lhs if isinstance(lhs, list) else []
        right_items = rhs if isinstance(rhs, list) else []
        for element, left, right in _zip_lists(shape, left_items, right_items):
            _compare(left, right, shape.element or SCALAR, (*path, element), out)
    if lhs is MISSING:
        out.added.insert(path)
    elif rhs is MISSING:
        out.removed.insert(path)


def _identical(a: Any, b: Any) -> bool:
    """Equal down to the types of numbers: then `_compare` finds nothing below either (list
    items pair up alike, leaves are equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_identical(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_identical, a, b))
    return bool(a == b)


def equal(a: Any, b: Any) -> bool:
    """smd's value.Equals: numbers compare by value, booleans are not numbers."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


# Removing items.


def remove_items(value: Any, items: FieldSet, shape: Shape) -> Any:
    """`value` without the fields and list items in `items`. An emptied map or list becomes
    null, as in smd; a field left null that way is dropped, as the Go round trip drops it."""
    if shape.atomic or not value:
        return value
    if shape.kind in ("struct", "map"):
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for name, child in value.items():
            element = "f:" + name
            if element in items.members:
                continue
            below = items.child(element)
            if below:
                kept_child = remove_items(child, below, _child_shape(shape, name))
                if kept_child is None and child is not None:
                    continue
                out[name] = kept_child
            else:
                out[name] = child
        return out or None
    if not isinstance(value, list):
        return value
    kept: list[Any] = []
    for n, item in enumerate(value):
        try:
            element = item_element(shape, item, n)
        except ValueError:
            kept.append(item)
            continue
        if element in items.members:
            continue
        below = items.child(element)
        kept.append(remove_items(item, below, shape.element or SCALAR) if below else item)
    return kept or None
