"""The rules of create, update and delete: given a key's latest change, check the write and
build the change it makes (the `WatchEvent` every store records, publishes and persists)."""

from __future__ import annotations

from pinnace.store.interface import (
    ConflictError,
    KeyExistsError,
    KeyNotFoundError,
    Object,
    WatchEvent,
)


def created(key: str, obj: Object, revision: int, latest: WatchEvent | None) -> WatchEvent:
    if latest is not None and latest.type != "DELETED":
        raise KeyExistsError(key)
    return WatchEvent("ADDED", key, stamped(obj, revision), None, revision)


def updated(
    key: str, obj: Object, expected: int | None, revision: int, latest: WatchEvent | None
) -> WatchEvent:
    current = _precondition(key, expected, latest)
    return WatchEvent("MODIFIED", key, stamped(obj, revision), current, revision)


def deleted(key: str, expected: int | None, revision: int, latest: WatchEvent | None) -> WatchEvent:
    current = _precondition(key, expected, latest)
    return WatchEvent("DELETED", key, stamped(dict(current), revision), current, revision)


def stamped(obj: Object, revision: int) -> Object:
    """`obj` with a fresh metadata dict carrying `revision` as its resourceVersion."""
    metadata = obj.get("metadata")
    obj["metadata"] = (
        {**metadata, "resourceVersion": str(revision)}
        if metadata
        else {"resourceVersion": str(revision)}
    )
    return obj


def _precondition(key: str, expected: int | None, latest: WatchEvent | None) -> Object:
    if latest is None or latest.type == "DELETED":
        raise KeyNotFoundError(key)
    if expected is not None and expected != latest.revision:
        raise ConflictError(key, latest.object)
    return latest.object
