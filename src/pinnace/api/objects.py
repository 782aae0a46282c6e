"""Kubernetes objects as every layer handles them (plain dicts), and small helpers over them."""

from __future__ import annotations

from typing import Any

import orjson

Object = dict[str, Any]


def clone(obj: Object) -> Object:
    """A deep copy. Objects are JSON, and a JSON round trip through orjson is several times
    faster than `copy.deepcopy` for them."""
    return orjson.loads(orjson.dumps(obj))


def meta(obj: Object) -> dict[str, Any]:
    """The object's metadata, created if missing (callers validated its type before)."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = obj["metadata"] = {}
    return m


def resource_version(obj: Object) -> int:
    """The object's resourceVersion as the store's revision; 0 when absent."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return int(rv) if rv else 0
