"""The fields a create sets, as FieldsV1, in one walk over the new object.

On a create without managedFields in the request, the general updater compares the empty
object with the new one (both with Go's zero structs filled in, `typed.with_zero_structs`)
and records what was added or modified, less the fields the endpoint ignores and those nobody
owns. This walk gives that same set directly, with the zero structs taken into account as it
goes instead of built, and writes FieldsV1 as it goes instead of a `FieldSet`.

`CreatedFields` remembers the walk's answers by the objects' structure: the objects of one
template differ in their names and values, and the fields they set are the same.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson

from pinnace.api.objects import Remembered, plain_json
from pinnace.api.patch.fieldpath import FieldSet, element_order
from pinnace.api.patch.openapi import NULL_LIST_FIELDS, SCALAR, VALUE_STRUCT_FIELDS, Shape
from pinnace.api.patch.typed import equal, item_element, with_zero_structs

__all__ = ["CreatedFields", "created_fields_v1"]

FieldsV1 = dict[str, Any]


def created_fields_v1(
    obj: dict[str, Any], shape: Shape, ignored: FieldSet, untracked: FieldSet
) -> FieldsV1:
    """What `typed.compare` finds added or modified from the empty object to `obj`, without
    `ignored` (and all below it) and without the paths in `untracked` (only those paths)."""
    _, children = _changed(_empty_object(shape), obj, shape, ignored, untracked)
    return children


class CreatedFields:
    """`created_fields_v1` with fixed `ignored` and `untracked` sets, remembered by the
    structure of the objects (`_structure`): objects of the same structure set the same
    fields. Each answer is a new FieldsV1 of its own."""

    def __init__(self, ignored: FieldSet, untracked: FieldSet) -> None:
        self._ignored = ignored
        self._untracked = untracked

    def __call__(self, obj: dict[str, Any], shape: Shape) -> FieldsV1:
        text = plain_json(_structure(obj))
        if text is None or len(text) > _MAX_REMEMBERED_TEXT:
            return created_fields_v1(obj, shape, self._ignored, self._untracked)
        key = (self, shape, text)
        known = _known.get(key)
        if known is not None:
            found: FieldsV1 = orjson.loads(known)
            return found
        fields = created_fields_v1(obj, shape, self._ignored, self._untracked)
        _known.put(key, orjson.dumps(fields))
        return fields


_MAX_REMEMBERED_TEXT = 16384
"""Longer structures (long lists) are one object's."""
_known: Remembered[bytes] = Remembered(512)
"""By `CreatedFields` and shape and structure, the FieldsV1 text of the fields set."""


def _structure(value: dict[str, Any]) -> dict[str, Any]:
    """`value` as far as the walk can tell it from others: each scalar outside lists is only
    null or not (a leaf is a field whatever its value; a zero value is `{}` or null, so only a
    null equals one), while lists are kept whole (their items' keys and values name them).
    The walk tells dicts, lists and the rest apart as this does."""
    out: dict[str, Any] = {}
    for name, child in value.items():
        if isinstance(child, dict):
            child = _structure(child)
        elif child is not None and not isinstance(child, list):
            child = 0
        out[name] = child
    return out


@cache
def _empty_object(shape: Shape) -> Any:
    """The empty object as kube-apiserver compares it. Shared: never modified."""
    return with_zero_structs({}, shape)


@cache
def _zero_fields(type_name: str) -> tuple[tuple[str, Any], ...]:
    """The fields `with_zero_structs` gives a struct of this type when they are absent."""
    fields = Shape("struct", type_name=type_name).fields()
    out: dict[str, dict[str, Any] | None] = {
        name: {} for name in VALUE_STRUCT_FIELDS.get(type_name, ()) if name in fields
    }
    for name in NULL_LIST_FIELDS.get(type_name, ()):
        out.setdefault(name, None)
    return tuple(out.items())


def _missing_zero_fields(shape: Shape, value: dict[str, Any]) -> list[tuple[str, Any]]:
    if shape.kind != "struct":
        return []
    return [(name, zero) for name, zero in _zero_fields(shape.type_name) if name not in value]


Step = tuple[str, Shape, bool]
"""A field as the walk takes it: its path element, its shape, whether it is a leaf."""


@cache
def _struct_steps(shape: Shape) -> dict[str, Step]:
    fields = shape.fields()
    return {name: ("f:" + name, f.shape, f.shape.atomic) for name, f in fields.items()}


def _undeclared_step(name: str) -> Step:
    return "f:" + name, SCALAR, True


def _put(
    out: FieldsV1,
    element: str,
    member: bool,
    children: FieldsV1,
    untracked: FieldSet | None,
) -> None:
    """Record `element` in FieldsV1's form: `{}` for a member, its children below it, and
    `".": {}` among them when it is a member too."""
    if untracked is not None and element in untracked.members:
        member = False
    if children:
        out[element] = {".": {}, **children} if member else children
    elif member:
        out[element] = {}


def _sorted(out: FieldsV1, by_name: bool) -> FieldsV1:
    # Struct and map nodes hold only `f:` elements: their order is their names' order.
    return dict(sorted(out.items()) if by_name else sorted(out.items(), key=_by_element))


def _by_element(item: tuple[str, Any]) -> Any:
    return element_order(item[0])


def _below(fields: FieldSet | None, element: str) -> FieldSet | None:
    return fields.children.get(element) if fields is not None else None


def _changed(
    zero: Any,
    value: Any,
    shape: Shape,
    ignored: FieldSet | None,
    untracked: FieldSet | None,
) -> tuple[bool, FieldsV1]:
    """`typed._compare` of a position the empty object has (`zero`) with the new value:
    whether the position is modified, and what below it is added or modified."""
    container = dict if shape.kind in ("struct", "map") else list
    if shape.atomic or _is_leaf(shape, container, zero, value):
        return not equal(zero, value), {}
    out: FieldsV1 = {}
    if container is dict:
        left = zero if isinstance(zero, dict) else {}
        right = value if isinstance(value, dict) else {}
        for name, child in right.items():
            element = "f:" + name
            if ignored is not None and element in ignored.members:
                continue
            child_shape = shape.child(name) or SCALAR
            below_ignored, below_untracked = _below(ignored, element), _below(untracked, element)
            if name in left:
                member, children = _changed(
                    left[name], child, child_shape, below_ignored, below_untracked
                )
            else:
                member, children = True, _added(child, child_shape, below_ignored, below_untracked)
            _put(out, element, member, children, untracked)
        return False, _sorted(out, True)
    # The empty object holds no list items: every item is added.
    _add_items(out, value if isinstance(value, list) else [], shape, ignored, untracked)
    return False, _sorted(out, False)


def _is_leaf(shape: Shape, container: type, zero: Any, value: Any) -> bool:
    """`typed._is_leaf` on the zero and the new value with its zero structs filled in."""
    sides = [v for v in (zero, value) if v is not None]
    if any(not isinstance(v, container) for v in sides):
        return True
    if zero:
        return False
    return value is None or not (value or _missing_zero_fields(shape, value))


def _added(
    value: Any, shape: Shape, ignored: FieldSet | None, untracked: FieldSet | None
) -> FieldsV1:
    """What lies below a position the new object adds (the position itself is added)."""
    if shape.atomic or value is None:
        return {}
    out: FieldsV1 = {}
    if shape.kind in ("struct", "map"):
        if not isinstance(value, dict):
            return {}
        missing = _missing_zero_fields(shape, value)
        # Struct fields are looked up once per type; a map's values all share one shape.
        steps = _struct_steps(shape) if shape.kind == "struct" else None
        element_shape = shape.element or SCALAR
        for name, child in [*value.items(), *missing] if missing else value.items():
            if steps is None:
                element, child_shape, leaf = "f:" + name, element_shape, element_shape.atomic
            else:
                element, child_shape, leaf = steps.get(name) or _undeclared_step(name)
            if ignored is not None and element in ignored.members:
                continue
            if leaf or not isinstance(child, (dict, list)):
                children: FieldsV1 = {}  # a leaf, without a call for it
            else:
                below_ignored = _below(ignored, element)
                children = _added(child, child_shape, below_ignored, _below(untracked, element))
            if untracked is None:
                out[element] = {".": {}, **children} if children else {}
            else:
                _put(out, element, True, children, untracked)
        return _sorted(out, True)
    if not isinstance(value, list):
        return {}
    _add_items(out, value, shape, ignored, untracked)
    return _sorted(out, False)


def _add_items(
    out: FieldsV1,
    items: list[Any],
    shape: Shape,
    ignored: FieldSet | None,
    untracked: FieldSet | None,
) -> None:
    """The list's addressable items, first occurrence winning, as `typed._indexed` pairs
    them with nothing."""
    element_shape = shape.element or SCALAR
    seen: set[str] = set()
    for n, item in enumerate(items):
        try:
            element = item_element(shape, item, n)
        except ValueError:
            continue
        if element in seen or (ignored is not None and element in ignored.members):
            continue
        seen.add(element)
        below_ignored, below_untracked = _below(ignored, element), _below(untracked, element)
        children = _added(item, element_shape, below_ignored, below_untracked)
        _put(out, element, True, children, untracked)
