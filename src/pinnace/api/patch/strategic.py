"""Strategic merge patch (application/strategic-merge-patch+json), as kube-apiserver v1.32
applies it (apimachinery's strategicpatch.StrategicMergeMapPatch with MergeParallelList and
IgnoreUnmatchedNulls).

Lists whose field has patch strategy "merge" are merged: lists of objects by the field's merge
key, lists of scalars as ordered sets; other lists and "replace" maps are replaced. Directives:
`$patch: replace|delete|merge`, `$retainKeys`, `$setElementOrder/<list>` and
`$deleteFromPrimitiveList/<list>`. A null deletes a key. The order of a merged list follows
the patch for the items it names and the live list for the rest, as apimachinery's
normalizeElementOrder does.
"""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api.patch import errors
from pinnace.api.patch.body import json_body
from pinnace.api.patch.openapi import SCALAR, Shape, field_of, kind_shape
from pinnace.api.status import StatusError

__all__ = ["apply_strategic_merge_patch"]

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
_BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
_MAP = "map[string]interface {}"


def apply_strategic_merge_patch(obj: dict[str, Any], patch: Any, kind: Any) -> dict[str, Any]:
    """`obj` with the strategic merge patch applied; neither argument is modified, and the
    result shares with `obj` what the patch leaves alone (each map it changes is a copy).

    `kind` is the kind's name ("Deployment") or a `pinnace.api.kind.Kind`.
    """
    kind_name = getattr(kind, "kind", kind)
    shape = kind_shape(kind_name) if isinstance(kind_name, str) else None
    if shape is None:
        # As for custom resources, which have no Go struct to take strategies from.
        raise StatusError(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml",
        )
    patch = json_body(patch)
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise errors.bad_request(
            f"json: cannot unmarshal {_json_kind(patch)} into Go value of type "
            "map[string]interface {}"
        )
    return _merge_map(obj, copy.deepcopy(patch), shape)


def _merge_map(live: dict[str, Any] | None, patch: dict[str, Any], shape: Shape) -> Any:
    """`live` with `patch` merged into a copy of it; what lies below is shared until changed
    (lists are merged into new lists)."""
    if PATCH in patch:
        return _map_directive(patch)
    original = {} if live is None else dict(live)
    _apply_retain_keys(original, patch)
    _apply_element_orders(original, patch, shape)
    for key, value in list(patch.items()):
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _list_name(key, DELETE_FROM_PRIMITIVE_LIST)
        if value is None:
            original.pop(key, None)
            continue
        child, strategy, merge_key = _lookup(shape, key)
        if key not in original:
            # A deletion list has nothing to delete from, and is not stored in its place.
            if not is_delete_list:
                original[key] = _decoded(value, child)
            continue
        current = original[key]
        if isinstance(current, dict) and isinstance(value, dict):
            original[key] = (
                _decoded(value, child)
                if strategy == "replace"
                else _decoded(_merge_map(current, value, child), child)
            )
        elif isinstance(current, list) and isinstance(value, list):
            original[key] = _decoded(
                _merge_list_field(current, value, child, strategy, merge_key, is_delete_list),
                child,
            )
        elif not is_delete_list:
            original[key] = _decoded(value, child)
    return original


def _map_directive(patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch[PATCH]
    if directive == "replace":
        del patch[PATCH]
        return patch
    if directive == "delete":
        return {}
    raise _bad_patch_type(directive, patch)


def _lookup(shape: Shape, key: str) -> tuple[Shape, str, str]:
    """A field's shape, its patch strategy other than retainKeys, and its merge key."""
    if shape.kind == "map":
        return shape.element or SCALAR, "", ""
    if shape.kind != "struct":
        return SCALAR, "", ""
    found = field_of(shape.type_name, key)
    if found is None:
        return SCALAR, "", ""
    others = [s for s in found.strategies if s != "retainKeys"]
    return found.shape, (others[0] if others else ""), found.merge_key


def _list_name(key: str, prefix: str) -> str:
    head, sep, name = key.partition("/")
    if not sep or head != prefix:
        message = (
            _BAD_PRIMITIVE_LIST
            if prefix == DELETE_FROM_PRIMITIVE_LIST
            else (_BAD_SET_ELEMENT_ORDER)
        )
        raise errors.bad_request(message)
    return name


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retained = patch.pop(RETAIN_KEYS)
    if not isinstance(retained, list):
        raise errors.bad_request(_BAD_RETAIN_KEYS)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if not _contains(retained, key):
            raise errors.bad_request(_BAD_RETAIN_KEYS)
    for key in list(original):
        if not _contains(retained, key):
            del original[key]


def _apply_element_orders(original: dict[str, Any], patch: dict[str, Any], shape: Shape) -> None:
    """Process each `$setElementOrder/<list>` together with the patch's `<list>`."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise _bad_arg_type(order)
        name = _list_name(key, SET_ELEMENT_ORDER)
        live = _list_field(original, name)
        patch_list = _list_field(patch, name)
        child, strategy, merge_key = _lookup(shape, name)
        _check_order(patch_list or [], order, merge_key)
        if live is not None and patch_list is not None:
            merged = _merge_list_field(live, patch_list, child, strategy, merge_key, False)
        elif live is not None:
            merged = live
        elif patch_list is not None:
            merged = patch_list
        else:
            continue
        live_list = live or []
        is_map = _element_kind(live_list, patch_list or []) == "map"
        named, server_only = _partition(merged, order, merge_key, is_map)
        original[name] = _decoded(
            _normalize_order(named, server_only, order, live_list, merge_key, is_map), child
        )
        patch.pop(name, None)


def _check_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch's items must appear in the order list, in the same relative order."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        items = [v for v in _all_maps(patch_list) if v.get(PATCH) != "delete"]
    i = j = 0
    while i < len(items) and j < len(order):
        if isinstance(items[i], dict) and PATCH in items[i]:
            i += 1
            continue
        if _same_key(items[i], order[j], merge_key):
            i += 1
        j += 1
    if i < len(items) and j >= len(order):
        raise errors.unconverted(
            f"The order in patch list:\n{errors.go_value(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{errors.go_value(order)}\n"
        )


def _list_field(obj: dict[str, Any], name: str) -> list[Any] | None:
    """obj[name], which must be a list when present; None when absent."""
    if name not in obj:
        return None
    value = obj[name]
    if not isinstance(value, list):
        raise _bad_arg_type(value)
    return value


def _merge_list_field(
    live: list[Any],
    patch: list[Any],
    shape: Shape,
    strategy: str,
    merge_key: str,
    is_delete_list: bool,
) -> list[Any]:
    if strategy != "merge":
        return patch
    return _merge_list(live, patch, shape.element or SCALAR, merge_key, is_delete_list)


def _merge_list(
    live: list[Any], patch: list[Any], element: Shape, merge_key: str, is_delete_list: bool
) -> list[Any]:
    if not live and not patch:
        return live
    is_map = _element_kind(live, patch) == "map"
    if not is_map:
        if is_delete_list:
            return [v for v in live if not _contains(patch, v)]
        merged = _dedupe(live + patch)
    else:
        if not merge_key:
            raise errors.unconverted("cannot merge lists without merge key for type struct")
        live, patch = _apply_list_directives(live, patch, merge_key)
        merged = list(live)
        for item in patch:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            at = _find(merged, merge_key, item[merge_key])
            if at is None:
                merged.append(item)
            else:
                merged[at] = _merge_map(merged[at], item, element)
    named, server_only = _partition(merged, patch, merge_key, is_map)
    return _normalize_order(named, server_only, patch, live, merge_key, is_map)


def _apply_list_directives(
    live: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], list[Any]]:
    """Handle `$patch` items of a merging list: the live list left, and the patch items left."""
    plain: list[Any] = []
    replace = False
    for item in patch:
        if PATCH not in item:
            plain.append(item)
            continue
        directive = item[PATCH]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            live = [
                v
                for v in _all_maps(live)
                if not (merge_key in v and _same_value(v[merge_key], item[merge_key]))
            ]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise errors.unconverted("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, item)
    if replace:
        return plain, []
    return live, plain


def _partition(
    items: list[Any], by: list[Any], merge_key: str, is_map: bool
) -> tuple[list[Any], list[Any]]:
    """Items present in `by` (by merge key for maps), and the others."""
    named: list[Any] = []
    others: list[Any] = []
    for item in items:
        if is_map:
            if not isinstance(item, dict):
                raise _bad_arg_type(item, _MAP)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            present = _find(by, merge_key, item[merge_key]) is not None
        else:
            present = _contains(by, item)
        (named if present else others).append(item)
    return named, others


def _normalize_order(
    named: list[Any],
    server_only: list[Any],
    named_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    is_map: bool,
) -> list[Any]:
    """Sort the patch's items by the patch and the others by the live list, then interleave
    them, putting each live item before the first patch item that follows it in the live list."""
    named = _sorted_by(named, named_order, merge_key, is_map)
    server_only = _sorted_by(server_only, server_order, merge_key, is_map)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(named):
        if i >= len(server_only):
            out.append(named[j])
            j += 1
        elif j >= len(named):
            out.append(server_only[i])
            i += 1
        else:
            left = _index(server_order, server_only[i], merge_key, is_map)
            right = _index(server_order, named[j], merge_key, is_map)
            if left >= 0 and right >= 0 and left < right:
                out.append(server_only[i])
                i += 1
            else:
                out.append(named[j])
                j += 1
    return out


def _sorted_by(items: list[Any], order: list[Any], merge_key: str, is_map: bool) -> list[Any]:
    deletions: list[Any] = []
    if is_map:
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise _bad_arg_type(item, _MAP)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        deletions = [v for v in items if v.get(PATCH) == "delete"]
        items = [v for v in items if v.get(PATCH) != "delete"]
    positions = [_index(order, v, merge_key, is_map) for v in items]
    found = sorted((p, n) for n, p in enumerate(positions) if p >= 0)
    ordered = [items[n] for _, n in found]
    ordered += [v for v, p in zip(items, positions, strict=True) if p < 0]
    return ordered + deletions


def _index(items: list[Any], item: Any, merge_key: str, is_map: bool) -> int:
    wanted = _key_of(item, merge_key, is_map)
    for n, candidate in enumerate(items):
        if _same_value(_key_of(candidate, merge_key, is_map), wanted):
            return n
    return -1


def _key_of(item: Any, merge_key: str, is_map: bool) -> Any:
    if not is_map:
        return item
    return item.get(merge_key) if isinstance(item, dict) else None


def _find(items: list[Any], merge_key: str, value: Any) -> int | None:
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise errors.unconverted(f"value for key {n} is not a map.")
        if merge_key in item and _same_value(item[merge_key], value):
            return n
    return None


def _element_kind(*lists: list[Any]) -> str:
    """The one kind of element of the lists ("map" or a scalar kind), judged as Go's
    sliceElementType does: by the first element, then each must match it."""
    items = [v for each in lists for v in each]
    if not items:
        raise errors.unconverted("no elements in any of the given slices")
    first = _go_kind(items[0])
    if first == "slice":
        raise errors.not_applicable()  # lists of lists are not supported
    if first is None or any(_go_kind(v) != first for v in items):
        rendered = errors.go_value(list(lists))
        raise errors.unconverted(f"list element types are not identical: {rendered}")
    return first


def _go_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if value is None:
        return None
    return type(value).__name__


def _all_maps(items: list[Any]) -> list[dict[str, Any]]:
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type(item, _MAP)
    return items


def _same_value(a: Any, b: Any) -> bool:
    """Go's == on decoded JSON values: 1 (int64) differs from 1.0 (float64)."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return type(a) is type(b) and a == b


def _same_key(a: Any, b: Any, merge_key: str) -> bool:
    if not merge_key:
        return _same_value(a, b)
    for item in (a, b):
        if not isinstance(item, dict):
            raise _bad_arg_type(item, _MAP)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _same_value(a[merge_key], b[merge_key])


def _contains(items: list[Any], value: Any) -> bool:
    return any(_same_value(v, value) for v in items)


def _dedupe(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not _contains(out, item):
            out.append(item)
    return out


def _decoded(value: Any, shape: Shape) -> Any:
    """What decoding into the Go type keeps: directive keys left in struct positions are
    unknown fields, and vanish."""
    if isinstance(value, dict):
        if shape.kind == "struct":
            return {
                k: _decoded(v, shape.child(k) or SCALAR)
                for k, v in value.items()
                if not k.startswith("$")
            }
        if shape.kind == "map":
            return {k: _decoded(v, shape.element or SCALAR) for k, v in value.items()}
        return value
    if isinstance(value, list) and shape.kind == "list":
        return [_decoded(v, shape.element or SCALAR) for v in value]
    return value


def _bad_patch_type(directive: Any, item: dict[str, Any]) -> StatusError:
    return errors.unconverted(f"unknown patch type: {directive} in map: {errors.go_value(item)}")


def _no_merge_key(item: Any, merge_key: str) -> StatusError:
    return errors.unconverted(
        f"map: {errors.go_value(item)} does not contain declared merge key: {merge_key}"
    )


def _bad_arg_type(value: Any, expected: str = "[]interface {}") -> StatusError:
    return errors.unconverted(f"expected a {expected}, but received a {_go_type_name(value)}")


def _go_type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "%!s(<nil>)"


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number"
