"""The committed state of a store, in memory: every retained version of every key.

Each change is a `WatchEvent`; the same event objects serve MVCC reads (per-key history) and
watch replay (the log of every change after the compacted revision). Objects are shared, never
copied.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import replace

from pinnace.store.interface import (
    CompactedError,
    FutureRevisionError,
    ListResult,
    Object,
    WatchEvent,
)
from pinnace.store.sortedkeys import SortedKeys

INITIAL_REVISION = 1
"""The revision of a new, empty store; also its first compacted revision."""


def _revision_of(event: WatchEvent) -> int:
    return event.revision


class MvccState:
    def __init__(self) -> None:
        # Per key, its retained changes in revision order; the last one is the key's latest.
        # A key whose latest change is a DELETED tombstone stays until compaction drops it.
        self._history: dict[str, list[WatchEvent]] = {}
        self._keys = SortedKeys()  # the keys of _history
        self._tombstones = SortedKeys()  # the keys of _history whose latest change is DELETED
        # Every change with a revision in (compacted_revision, revision], in order.
        self._log: list[WatchEvent] = []
        self._versions = 0
        self.revision = INITIAL_REVISION
        self.compacted_revision = INITIAL_REVISION

    @property
    def retained_versions(self) -> int:
        """How many changes (object versions and tombstones) the state holds."""
        return self._versions

    def read_revision(self, revision: int | None) -> int:
        """`revision`, or the current one for None or 0, checked to be readable."""
        if not revision:
            return self.revision
        if revision < self.compacted_revision:
            raise CompactedError(revision, self.compacted_revision)
        if revision > self.revision:
            raise FutureRevisionError(revision, self.revision)
        return revision

    def latest(self, key: str) -> WatchEvent | None:
        """The key's latest change (possibly a tombstone), or None if none is retained."""
        history = self._history.get(key)
        return history[-1] if history is not None else None

    def event_at(self, revision: int) -> WatchEvent:
        """The change made at `revision`, which must be in (compacted_revision, revision]."""
        return self._log[revision - self.compacted_revision - 1]

    def get(self, key: str, revision: int) -> Object | None:
        history = self._history.get(key)
        if history is None:
            return None
        event = history[-1] if revision == self.revision else _at(history, revision)
        if event is None or event.type == "DELETED":
            return None
        return event.object

    def list(self, prefix: str, revision: int, limit: int, start_after: str | None) -> ListResult:
        history = self._history
        current = revision == self.revision
        items: list[Object] = []
        page = limit if limit > 0 else -1
        last_key: str | None = None
        for key in self._keys.scan(prefix, start_after):
            versions = history[key]
            event = versions[-1] if current else _at(versions, revision)
            if event is None or event.type == "DELETED":
                continue
            if len(items) == page:
                remaining = self._live_count(prefix, last_key, revision)
                return ListResult(items, revision, last_key, remaining)
            items.append(event.object)
            last_key = key
        return ListResult(items, revision, None, 0)

    def count(self, prefix: str) -> int:
        return self._live_count(prefix, None, self.revision)

    def _live_count(self, prefix: str, start_after: str | None, revision: int) -> int:
        """How many keys under `prefix` after `start_after` hold an object at `revision`.

        Counted from the key sets now, corrected by the changes made since `revision`, when
        those are fewer than the keys; else key by key.
        """
        keys = self._keys.count(prefix, start_after)
        changes = self.revision - revision
        if changes > keys:
            return sum(
                1
                for key in self._keys.scan(prefix, start_after)
                if _live(_at(self._history[key], revision))
            )
        live = keys - self._tombstones.count(prefix, start_after)
        changed: set[str] = set()
        for i in range(revision + 1, self.revision + 1):
            key = self.event_at(i).key
            if key in changed or not key.startswith(prefix):
                continue
            if start_after is not None and key <= start_after:
                continue
            changed.add(key)
            history = self._history[key]
            live += _live(_at(history, revision)) - _live(history[-1])
        return live

    def apply(self, event: WatchEvent) -> None:
        """Commit the next change; its revision must be `revision + 1`."""
        self._record(event)
        self._log.append(event)
        self.revision = event.revision

    def restore(self, events: Iterable[WatchEvent], revision: int, compacted: int) -> None:
        """Load a retained history, in revision order, into this new state.

        Changes after `compacted` must be complete; those at or before it are each key's
        latest change as of `compacted`.
        """
        self.compacted_revision = compacted
        for event in events:
            self._record(event)
            if event.revision > compacted:
                self._log.append(event)
        self.revision = max(revision, compacted)

    def _record(self, event: WatchEvent) -> None:
        key = event.key
        history = self._history.get(key)
        if history is None:
            self._history[key] = [event]
            self._keys.add(key)
        else:
            if event.type == "DELETED":
                self._tombstones.add(key)
            elif history[-1].type == "DELETED":
                self._tombstones.remove(key)
            history.append(event)
        self._versions += 1

    def compact(self, revision: int) -> list[int]:
        """Drop what is not needed to read at `revision` or later; return the revisions of
        the changes dropped. `revision` must be in [compacted_revision, revision]."""
        n = revision - self.compacted_revision
        if n <= 0:
            return []
        window = self._log[:n]
        del self._log[:n]
        self.compacted_revision = revision
        dropped: list[int] = []
        seen: set[str] = set()
        for changed in window:
            key = changed.key
            if key in seen:
                continue
            seen.add(key)
            history = self._history[key]
            i = bisect_right(history, revision, key=_revision_of) - 1
            keep = history[i]
            first_kept = i + 1 if keep.type == "DELETED" else i
            dropped.extend(event.revision for event in history[:first_kept])
            del history[:first_kept]
            if not history:
                del self._history[key]
                self._keys.remove(key)
                self._tombstones.remove(key)  # only a tombstone is ever dropped last
            elif first_kept == i and keep.prev_object is not None:
                # Nothing reads the previous object of a change at or before the compacted
                # revision (no watch replays it); let it go.
                history[0] = replace(keep, prev_object=None)
        self._versions -= len(dropped)
        return dropped


def _live(event: WatchEvent | None) -> bool:
    return event is not None and event.type != "DELETED"


def _at(history: list[WatchEvent], revision: int) -> WatchEvent | None:
    i = bisect_right(history, revision, key=_revision_of)
    return history[i - 1] if i else None
