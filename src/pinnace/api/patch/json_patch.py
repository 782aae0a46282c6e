"""JSON patch (RFC 6902, application/json-patch+json) as kube-apiserver v1.32 applies it.

kube-apiserver uses evanphx/json-patch v4, whose quirks are kept: negative array indices
count from the end, `replace` of a missing object member adds it, `test` of a missing member
against null passes, and numbers compare by their JSON text (1 is not 1.0). Any failure while
applying is a 422 with apimachinery's generic message; a body that is not a list of objects is
a 400; more than 10000 operations is a 413.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pinnace.api.patch.body import json_body
from pinnace.api.patch.errors import bad_request, not_applicable, too_many_operations

__all__ = ["MAX_JSON_PATCH_OPERATIONS", "apply_json_patch"]

MAX_JSON_PATCH_OPERATIONS = 10000


# What Go's strconv.Atoi accepts.
_GO_INT = re.compile(r"[+-]?[0-9]+")


class _Failed(Exception):
    """An operation does not apply; the handler hides the reason behind a generic 422."""


def apply_json_patch(obj: dict[str, Any], ops: Any) -> dict[str, Any]:
    """`obj` with the operations applied in order; neither argument is modified."""
    ops = json_body(ops)
    if ops is None:
        ops = []
    if not isinstance(ops, list):
        raise bad_request(
            f"json: cannot unmarshal {_json_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {_json_kind(op)} into Go value of type jsonpatch.Operation"
            )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise too_many_operations(MAX_JSON_PATCH_OPERATIONS, len(ops))
    doc = copy.deepcopy(obj)
    try:
        for op in ops:
            _apply(doc, op or {})
    except _Failed:
        raise not_applicable() from None
    return doc


def _apply(doc: dict[str, Any], op: dict[str, Any]) -> None:
    kind = op.get("op")
    if kind == "add":
        parent, key = _parent(doc, _string(op, "path"))
        _add(parent, key, copy.deepcopy(op.get("value")))
    elif kind == "remove":
        parent, key = _parent(doc, _string(op, "path"))
        _remove(parent, key)
    elif kind == "replace":
        parent, key = _parent(doc, _string(op, "path"))
        _replace(parent, key, copy.deepcopy(op.get("value")))
    elif kind == "move":
        parent, key = _parent(doc, _string(op, "from"))
        value = _get(parent, key)
        _remove(parent, key)
        parent, key = _parent(doc, _string(op, "path"))
        _add(parent, key, value)
    elif kind == "copy":
        parent, key = _parent(doc, _string(op, "from"))
        value = _get(parent, key)
        parent, key = _parent(doc, _string(op, "path"))
        _add(parent, key, copy.deepcopy(value))
    elif kind == "test":
        parent, key = _parent(doc, _string(op, "path"))
        if not _equal(_get(parent, key), op.get("value")):
            raise _Failed
    else:
        raise _Failed


def _string(op: dict[str, Any], name: str) -> str:
    value = op.get(name)
    if not isinstance(value, str):
        raise _Failed
    return value


def _parent(doc: Any, pointer: str) -> tuple[Any, str]:
    """The container holding the pointer's last token, and that token (unescaped)."""
    parts = pointer.split("/")
    if len(parts) < 2:
        raise _Failed
    node = doc
    for part in parts[1:-1]:
        node = _get(node, _unescape(part))
        if not isinstance(node, dict | list):
            raise _Failed
    return node, _unescape(parts[-1])


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _index(array: list[Any], key: str, size: int) -> int:
    """An index into an array of `size` slots; negative counts from the end."""
    if not _GO_INT.fullmatch(key):
        raise _Failed
    index = int(key)
    if index < 0:
        if index < -size:
            raise _Failed
        index += size
    if index >= size:
        raise _Failed
    return index


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    return container[_index(container, key, len(container))]


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    elif key == "-":
        container.append(value)
    else:
        container.insert(_index(container, key, len(container) + 1), value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _Failed
        del container[key]
    else:
        del container[_index(container, key, len(container))]


def _replace(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container[_index(container, key, len(container))] = value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "array"
