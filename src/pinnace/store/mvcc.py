"""The committed state of a store, in memory: every retained version of every key.

Each change is a `Version`; the same versions serve MVCC reads (per-key history) and watch
replay (the log of every change after the compacted revision). A version keeps the object it was
written with while it is among the last `RECENT_VERSIONS` changes, which is where reads and
watch replays mostly fall, and only its packed form (`codec`) afterwards: a large cluster's
objects would otherwise take most of the process's memory.

Most keys of a large cluster hold one object that has not changed since the compacted revision
(a running pod, an Event). Such a key's history is *settled*: one bytes record, its revision
then its packed object, instead of a list holding a `Version` (about 170 bytes less per key).
Its version is rebuilt from the record when the key is written again.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable

from pinnace.store import codec
from pinnace.store.interface import (
    CompactedError,
    EventType,
    FutureRevisionError,
    ListResult,
    Object,
    WatchEvent,
)
from pinnace.store.sortedkeys import SortedKeys

INITIAL_REVISION = 1
"""The revision of a new, empty store; also its first compacted revision."""
RECENT_VERSIONS = 2048
"""The latest changes whose objects are kept as written rather than packed."""


class Version:
    """One retained change of a key: what a `WatchEvent` says, less the previous object (the
    key's history has it)."""

    # Four slots keep an instance in 64 bytes; a fifth would take it to 80.
    __slots__ = ("_data", "key", "revision", "type")

    def __init__(self, type: EventType, key: str, data: Object | bytes, revision: int) -> None:
        self.type = type
        self.key = key
        self.revision = revision
        self._data = data
        """The object as written, or once packed the record: the revision (`_HEADER` bytes)
        then the packed object, which is also what a settled history keeps."""

    @classmethod
    def from_json(cls, type: EventType, key: str, data: bytes, revision: int) -> Version:
        """A change read back from its object's JSON text: packed from the start."""
        return cls(type, key, _header(revision) + codec.pack_json(data), revision)

    @classmethod
    def settled(cls, key: str, record: bytes) -> Version:
        """The version a settled history's record holds. It lies at or before the compacted
        revision, where only whether a change deleted its key still matters; it did not."""
        return cls("MODIFIED", key, record, int.from_bytes(record[:_HEADER], _ORDER))

    @property
    def object(self) -> Object:
        """The object of the change: shared while recent, a new copy each time once packed."""
        data = self._data
        return _unpack(data) if isinstance(data, bytes) else data

    @property
    def record(self) -> bytes | None:
        """What this version's key keeps settled, if it can be: packed and not a deletion."""
        data = self._data
        return data if isinstance(data, bytes) and self.type != "DELETED" else None

    def pack(self) -> None:
        data = self._data
        if not isinstance(data, bytes):
            self._data = _header(self.revision) + codec.pack(data)


History = list[Version] | Version | bytes
"""A key's retained changes in revision order (the last one is the key's latest); the change
itself when there is one (most keys: an Event is written once); or, settled, the record of its
one live version at or before the compacted revision."""

_HEADER = 8
_ORDER = "little"


def _header(revision: int) -> bytes:
    return revision.to_bytes(_HEADER, _ORDER)


def _unpack(record: bytes) -> Object:
    return codec.unpack(memoryview(record)[_HEADER:])


def _revision_of(version: Version) -> int:
    return version.revision


class MvccState:
    def __init__(self, recent_versions: int = RECENT_VERSIONS) -> None:
        # Per key, its retained changes. A key whose latest change is a DELETED tombstone stays
        # until compaction drops it.
        self._history: dict[str, History] = {}
        self._keys = SortedKeys()  # the keys of _history
        self._tombstones = SortedKeys()  # the keys of _history whose latest change is DELETED
        # Every change with a revision in (compacted_revision, revision], in order.
        self._log: list[Version] = []
        # The last `recent_versions` of _log, unpacked; compaction takes the versions it passes.
        self._recent: deque[Version] = deque()
        self._recent_versions = recent_versions
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

    def latest(self, key: str) -> Version | None:
        """The key's latest change (possibly a tombstone), or None if none is retained."""
        history = self._history.get(key)
        return None if history is None else _at(key, history, self.revision)

    def event_at(self, revision: int) -> WatchEvent:
        """The change made at `revision`, which must be in (compacted_revision, revision]."""
        version = self._log[revision - self.compacted_revision - 1]
        previous = None
        if version.type != "ADDED":
            history = _versions(version.key, self._history[version.key])
            i = bisect_left(history, revision, key=_revision_of)
            if i:
                previous = history[i - 1].object
        return WatchEvent(version.type, version.key, version.object, previous, revision)

    def get(self, key: str, revision: int) -> Object | None:
        history = self._history.get(key)
        if history is None:
            return None
        event = _at(key, history, revision)
        if event is None or event.type == "DELETED":
            return None
        return event.object

    def list(self, prefix: str, revision: int, limit: int, start_after: str | None) -> ListResult:
        history = self._history
        items: list[Object] = []
        page = limit if limit > 0 else -1
        last_key: str | None = None
        for key in self._keys.scan(prefix, start_after):
            event = _at(key, history[key], revision)
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
                if _live(_at(key, self._history[key], revision))
            )
        live = keys - self._tombstones.count(prefix, start_after)
        changed: set[str] = set()
        for i in range(revision + 1, self.revision + 1):
            key = self._log[i - self.compacted_revision - 1].key
            if key in changed or not key.startswith(prefix):
                continue
            if start_after is not None and key <= start_after:
                continue
            changed.add(key)
            history = self._history[key]
            live += _live(_at(key, history, revision)) - _live(_at(key, history, self.revision))
        return live

    def apply(self, event: WatchEvent) -> None:
        """Commit the next change; its revision must be `revision + 1`."""
        version = Version(event.type, event.key, event.object, event.revision)
        self._record(version)
        self._log.append(version)
        self._keep_recent(version)
        self.revision = event.revision

    def restore(self, versions: Iterable[Version], revision: int, compacted: int) -> list[int]:
        """Load a retained history, in revision order, into this new state; return the
        revisions of the changes it leaves out.

        Changes after `compacted` must be complete. Of those at or before it only each key's
        latest is kept, unless it deleted the key: a compaction whose log deletion failed
        leaves older ones behind.
        """
        self.compacted_revision = compacted
        settled: dict[str, Version] = {}
        later: list[Version] = []
        dropped: list[int] = []
        for version in versions:
            if version.revision > compacted:
                later.append(version)
                continue
            replaced = settled.pop(version.key, None)
            if replaced is not None:
                dropped.append(replaced.revision)
            settled[version.key] = version
        for key, version in settled.items():
            if version.type == "DELETED":
                dropped.append(version.revision)
                continue
            self._record(version)
            self._settle(key)
        for version in later:
            self._record(version)
            self._log.append(version)
        self.revision = max(revision, compacted)
        return sorted(dropped)

    def _record(self, version: Version) -> None:
        key = version.key
        history = self._history.get(key)
        if history is None:
            self._history[key] = version
            self._keys.add(key)
        else:
            if not isinstance(history, list):
                history = self._history[key] = _versions(key, history)
            if version.type == "DELETED":
                self._tombstones.add(key)
            elif history[-1].type == "DELETED":
                self._tombstones.remove(key)
            history.append(version)
        self._versions += 1

    def _keep_recent(self, version: Version) -> None:
        recent = self._recent
        recent.append(version)
        if len(recent) > self._recent_versions:
            recent.popleft().pack()

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
            history = _versions(key, self._history[key])
            i = bisect_right(history, revision, key=_revision_of) - 1
            keep = history[i]
            first_kept = i + 1 if keep.type == "DELETED" else i
            dropped.extend(event.revision for event in history[:first_kept])
            kept = history[first_kept:]
            if not kept:
                del self._history[key]
                self._keys.remove(key)
                self._tombstones.remove(key)  # only a tombstone is ever dropped last
            else:
                self._history[key] = kept if len(kept) > 1 else kept[0]
                self._settle(key)
        self._versions -= len(dropped)
        recent = self._recent
        while recent and recent[0].revision <= revision:
            version = recent.popleft()
            kept = self._history.get(version.key)
            if kept is version or (isinstance(kept, list) and kept[0] is version):
                version.pack()
                self._settle(version.key)
        return dropped

    def _settle(self, key: str) -> None:
        """Settle the key's history if it is down to one packed live version at or before the
        compacted revision (a later version would be in the log)."""
        only = self._history[key]
        if isinstance(only, Version):
            record = only.record
            if record is not None and only.revision <= self.compacted_revision:
                self._history[key] = record


def _live(event: Version | None) -> bool:
    return event is not None and event.type != "DELETED"


def _versions(key: str, history: History) -> list[Version]:
    """The key's retained changes as a list, in revision order (a new one unless it was)."""
    if isinstance(history, list):
        return history
    return [history if isinstance(history, Version) else Version.settled(key, history)]


def _at(key: str, history: History, revision: int) -> Version | None:
    """The key's change in effect at `revision` (a readable one), if any."""
    if isinstance(history, bytes):
        return Version.settled(key, history)  # at or before any readable revision
    if isinstance(history, Version):
        return history if revision >= history.revision else None
    if revision >= history[-1].revision:
        return history[-1]
    i = bisect_right(history, revision, key=_revision_of)
    return history[i - 1] if i else None
