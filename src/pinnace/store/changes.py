"""The rules of create, update and delete: given a key's latest change, check the write and
build the change it makes (the `WatchEvent` every store records, publishes and persists)."""

from __future__ import annotations

from typing import Protocol

from pinnace.store.interface import (
    ConflictError,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    Object,
    WatchEvent,
)


class Change(Protocol):
    """A key's latest change: committed (the store's `Version`) or built by a write still being
    committed (its `WatchEvent`)."""

    @property
    def type(self) -> EventType: ...

    @property
    def revision(self) -> int: ...

    @property
    def object(self) -> Object: ...


def created(key: str, obj: Object, revision: int, latest: Change | None) -> WatchEvent:
    if latest is not None and latest.type != "DELETED":
        raise KeyExistsError(key)
    return WatchEvent("ADDED", key, stamped(obj, revision), None, revision)


def updated(
    key: str, obj: Object, expected: int | None, revision: int, latest: Change | None
) -> WatchEvent:
    current = _precondition(key, expected, latest)
    return WatchEvent("MODIFIED", key, stamped(obj, revision), current, revision)


def deleted(key: str, expected: int | None, revision: int, latest: Change | None) -> WatchEvent:
    current = _precondition(key, expected, latest)
    return WatchEvent("DELETED", key, stamped(dict(current), revision), current, revision)


def stamped(obj: Object, revision: int) -> Object:
    """`obj` with a fresh metadata dict carrying `revision` as its resourceVersion."""
    metadata = obj.get("metadata")
    if metadata:
        # dict.copy clones the table at once; `{**metadata, ...}` inserts key by key (every
        # write: 0.34-0.47 -> 0.21 us). The same keys in the same order either way.
        stamp = metadata.copy()
        stamp["resourceVersion"] = str(revision)
    else:
        stamp = {"resourceVersion": str(revision)}
    obj["metadata"] = stamp
    return obj


def _precondition(key: str, expected: int | None, latest: Change | None) -> Object:
    if latest is None or latest.type == "DELETED":
        raise KeyNotFoundError(key)
    if expected is not None and expected != latest.revision:
        raise ConflictError(key, latest.object)
    return latest.object
