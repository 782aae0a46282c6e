"""The committed state of a store, in memory: every retained version of every key.

Each key's history of changes serves MVCC reads, and the log of the keys changed after the
compacted revision, in order, serves watch replay from those histories. A change is a `Version`
holding the object it was written with while it is among the last `RECENT_VERSIONS` changes,
which is where reads and watch replays mostly fall, and afterwards only its packed form (one
bytes string, `Packed`): a large cluster's objects would otherwise take most of the process's
memory. Until compaction reaches it, the packed form is kept in `Segments` and the history
holds where (a `Ref`): the room a start's burst of changes takes then goes back to the system
once compaction has passed them.

Most keys of a large cluster hold one object that has not changed since the compacted revision
(a running pod, an Event). Compaction *settles* such a key: it leaves the per-key histories for
`SettledKeys`, compressed blocks of keys and objects (about 100 bytes a key instead of 330),
until it is written again.

A key still written (a pod between its creation, binding and status updates, a node's Lease
renewed every 10 s) would leave the recent changes between two of its writes on a large
cluster, and each read or write of it would unpack it again, only to replace it. So the latest
change of a live key is *held* as written once it leaves the recent ones, and packed only once a
later change replaces it (a write packs the one before, as any write leaving the recent ones
would), or once more than `HELD_VERSIONS` keys are held: then the one written longest ago (a
pod that has run unchanged since, an Event) is. A deleted key holds nothing.
"""

from __future__ import annotations

import builtins
import struct
from bisect import bisect_left, bisect_right
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from typing import TypeGuard

import orjson

from pinnace.store.ahead import Ahead
from pinnace.store.codec import Codec
from pinnace.store.interface import (
    CompactedError,
    EventType,
    FutureRevisionError,
    ListResult,
    Object,
    Selection,
    WatchEvent,
)
from pinnace.store.segments import SEGMENT_BYTES, Ref, Segments
from pinnace.store.settled import BLOCK, Entry, SettledKeys, settles
from pinnace.store.sortedkeys import SortedKeys

INITIAL_REVISION = 1
"""The revision of a new, empty store; also its first compacted revision."""
RECENT_VERSIONS = 2048
"""The latest changes whose objects are kept as written rather than packed."""
HELD_VERSIONS = 16384
"""Live keys whose latest change is held as written past the recent ones, at most (a pod is
~10 KB held, ~2.3 KB packed as plain JSON: see `MvccState`)."""
SETTLE_STEP = 256
"""Keys settled at a time: `settle` rebuilds at most as many blocks."""
RESTORE_BATCH = 4096
"""Keys a reopened store settles at a time."""


class Version:
    """One change of a key: what a `WatchEvent` says, less the previous object (the key's
    history has it). A key's history keeps the latest changes as `Version`s and older ones
    only as their packed form (`Packed`), from which a `Version` is made again to be read."""

    # Four slots keep an instance in 64 bytes; a fifth would take it to 80.
    __slots__ = ("_data", "key", "revision", "type")

    def __init__(self, type: EventType, key: str, data: Object | Packed, revision: int) -> None:
        self.type = type
        self.key = key
        self.revision = revision
        self._data = data
        """The object as written, or once packed the change's packed form."""

    @classmethod
    def from_json(
        cls, type: EventType, key: str, data: bytes, revision: int, codec: Codec
    ) -> Version:
        """A change read back from its object's JSON text: packed from the start."""
        return cls(type, key, codec.pack_json(data, head=_head(type, revision)), revision)

    @classmethod
    def unpacked(cls, key: str, change: Version | Packed) -> Version:
        """The version a history's change is."""
        if isinstance(change, Version):
            return change
        return cls(_TYPES[change[0]], key, change, _revision_of(change))

    @classmethod
    def settled(cls, entry: Entry) -> Version:
        """The version of a settled key. It lies at or before the compacted revision, where
        only whether a change deleted its key still matters; it did not."""
        key, revision, text = entry
        return cls("MODIFIED", key, orjson.loads(text), revision)

    @property
    def object(self) -> Object:
        """The object of a change that holds it: as written, while recent, or `decoded`."""
        data = self._data
        assert not isinstance(data, bytes), "a packed change is read with read(codec)"
        return data

    def read(self, codec: Codec) -> Object:
        """The object of the change: shared while recent, a new copy each time once packed."""
        data = self._data
        return codec.unpack(memoryview(data)[_HEADER:]) if isinstance(data, bytes) else data

    def decoded(self, codec: Codec) -> Version:
        """The change holding its object: itself while recent, once packed a new version."""
        if isinstance(self._data, bytes):
            return Version(self.type, self.key, self.read(codec), self.revision)
        return self

    @property
    def stored(self) -> Change:
        """What a key's history keeps of this change: its packed form once packed."""
        data = self._data
        return data if isinstance(data, bytes) else self

    def selected(self, codec: Codec, select: Selection | None) -> Object | None:
        """The object of the change if `select` (if any) matches it; once packed, it is
        decoded only if it may."""
        data = self._data
        if isinstance(data, bytes):
            return _selected(_json(data, codec), select)
        return data if select is None or select.matches(data) else None

    def json(self, codec: Codec) -> bytes:
        """The object's JSON text."""
        data = self._data
        if isinstance(data, bytes):
            return _json(data, codec)
        return orjson.dumps(data)

    def pack(self, codec: Codec, packed: bytes | None = None) -> Packed:
        """The change's packed form, from now on; `packed`: its object as `codec` packs it,
        if that is at hand."""
        data = self._data
        if not isinstance(data, bytes):
            head = _head(self.type, self.revision)
            # Packed after its head in one copy, unless packed already.
            data = self._data = codec.pack(data, head=head) if packed is None else head + packed
        return data


Packed = bytes
"""A change as kept once packed (no object of its own, ~90 bytes less than a `Version` and
its revision): the change's type (one byte), its revision (8 bytes), then its
object packed by the store's `Codec`."""
Change = Version | Packed | Ref
PackedAhead = bytes | Ahead | None
"""A change's object as the codec packs it, when that was done (bytes) or is being done
(`Ahead`) off the event loop; None: the state packs it when it must."""
History = list[Change] | Change
"""A key's retained changes in revision order (the last one is the key's latest), or the
change itself when there is one (most keys: an Event is written once)."""

_TYPES: tuple[EventType, ...] = ("ADDED", "MODIFIED", "DELETED")
_CODES = {type: code for code, type in enumerate(_TYPES)}
_DELETED = _CODES["DELETED"]
_REVISION = struct.Struct("<Q")
_HEADER = 1 + _REVISION.size


def _head(type: EventType, revision: int) -> bytes:
    """What a packed change starts with: its type's code and its revision."""
    return bytes((_CODES[type],)) + _REVISION.pack(revision)


def _json(packed: Packed, codec: Codec) -> bytes:
    return codec.inflate(memoryview(packed)[_HEADER:])


def _selected(text: bytes, select: Selection | None) -> Object | None:
    """The object whose JSON text is `text` if `select` (if any) matches it, decoded only if
    it may: a list by label selector reads most objects no further than their text."""
    if select is not None and not select.may_match(text):
        return None
    obj: Object = orjson.loads(text)
    return obj if select is None or select.matches(obj) else None


def _revision_of(change: Version | Packed) -> int:
    if isinstance(change, bytes):
        return _REVISION.unpack_from(change, 1)[0]
    return change.revision


def _deleted(change: Version | Packed) -> bool:
    return change[0] == _DELETED if isinstance(change, bytes) else change.type == "DELETED"


def _key_of(version: Version) -> str:
    return version.key


class MvccState:
    def __init__(
        self,
        recent_versions: int = RECENT_VERSIONS,
        block: int = BLOCK,
        segment_bytes: int = SEGMENT_BYTES,
        codec: Codec | None = None,
        settle_keys: bool = True,
        held_versions: int = HELD_VERSIONS,
    ) -> None:
        """`block`: keys per block of settled keys (see `SettledKeys`); `segment_bytes`: the
        size of a mapping of packed changes (see `Segments`); `codec`: what packs the objects
        (a new one by default); `settle_keys`: whether compaction settles keys at all (else
        each keeps its packed version in its history: ~230 bytes more a key, for less work on
        every write, read and compaction of an object that lives past one);
        `held_versions`: how many live keys' latest changes are held as written past the
        recent ones, at most."""
        self._codec = codec = codec if codec is not None else Codec()
        self._settle_keys = settle_keys
        # Per key not settled, its retained changes. A key whose latest change is a DELETED
        # tombstone stays until compaction drops it.
        self._history: dict[str, History] = {}
        self._keys = SortedKeys()  # the keys of _history
        self._tombstones = SortedKeys()  # the keys of _history whose latest change is DELETED
        self._settled = SettledKeys(block, codec)
        # The packed changes after the compacted revision (and those of keys not yet settled).
        self._segments = Segments(segment_bytes)
        # Keys compaction left with one packed live version, which `settle` moves to _settled
        # (in key order, from the end of _settling) unless they are written before.
        self._unsettled: list[str] = []
        self._settling: list[str] = []
        self._removed = 0  # keys removed from _history since it was last copied
        # The key of every change with a revision in (compacted_revision, revision], in order;
        # None for a revision that changed nothing here (see `skip`).
        self._log: list[str | None] = []
        # The last `recent_versions` of _log, unpacked, each with its object packed if that was
        # done ahead (off the event loop); compaction takes the versions it passes.
        self._recent: deque[tuple[Version, PackedAhead]] = deque()
        self._recent_versions = recent_versions
        # The live keys whose latest change has left _recent, with it (and its packed object,
        # if made ahead), the one written longest ago first: packed once a later change
        # replaces it, or once it is first of more than _held_versions.
        self._held: OrderedDict[str, tuple[Version, PackedAhead]] = OrderedDict()
        self._held_versions = held_versions
        self._versions = 0
        # The object `get` read last, by key and revision: a write reads its key again at
        # once (`latest`), and would decode a packed object a second time.
        self._last_read: tuple[str, int, Object] | None = None
        self.revision = INITIAL_REVISION
        self.compacted_revision = INITIAL_REVISION

    @property
    def retained_versions(self) -> int:
        """How many changes (object versions and tombstones) the state holds."""
        return self._versions

    @property
    def held_versions(self) -> int:
        """How many keys' latest changes are held as written past the recent ones."""
        return len(self._held)

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
        """The key's latest change (possibly a tombstone) holding its object, or None if none
        is retained."""
        history = self._history.get(key)
        if history is None:
            return self._settled_version(key)
        latest = self._at(key, history, self.revision)
        if latest is None:
            return None
        last = self._last_read
        if last is not None and last[1] == latest.revision and last[0] == key:
            return Version(latest.type, key, last[2], latest.revision)
        return latest.decoded(self._codec)

    def event_at(self, revision: int) -> WatchEvent | None:
        """The change made at `revision`, which must be in (compacted_revision, revision], or
        None if that revision changed nothing here."""
        key = self._log[revision - self.compacted_revision - 1]
        if key is None:
            return None
        history = _changes(self._history[key])
        i = bisect_left(history, revision, key=self._revision_of)
        version = self._version(key, history[i])
        previous = None
        if version.type != "ADDED" and i:
            previous = self._version(key, history[i - 1]).read(self._codec)
        return WatchEvent(version.type, key, version.read(self._codec), previous, revision)

    def get(self, key: str, revision: int) -> Object | None:
        history = self._history.get(key)
        event = self._settled_version(key) if history is None else self._at(key, history, revision)
        if not _live(event):
            return None
        obj = event.read(self._codec)
        self._last_read = (key, event.revision, obj)
        return obj

    def revision_of(self, key: str) -> int | None:
        """The revision of the key's live object now, if any; the object is not unpacked."""
        history = self._history.get(key)
        if history is None:
            found = self._settled.get(key)
            return None if found is None else found[0]
        latest = self._at(key, history, self.revision)
        return latest.revision if _live(latest) else None

    def list(
        self,
        prefix: str,
        revision: int,
        limit: int,
        start_after: str | None,
        select: Selection | None = None,
    ) -> ListResult:
        items: list[Object] = []
        page = limit if limit > 0 else -1
        last_key: str | None = None
        for key, found in self._scan(prefix, start_after, revision):
            if len(items) == page:
                remaining = self._live_count(prefix, last_key, revision) if select is None else None
                return ListResult(items, revision, last_key, remaining)
            if isinstance(found, Version):
                obj = found.selected(self._codec, select)
            else:
                obj = _selected(found, select)
            if obj is not None:
                items.append(obj)
                last_key = key
        return ListResult(items, revision, None, 0)

    def count(self, prefix: str) -> int:
        return self._live_count(prefix, None, self.revision)

    def _scan(
        self, prefix: str, start_after: str | None, revision: int
    ) -> Iterator[tuple[str, Version | bytes]]:
        """Every key under `prefix` (after `start_after`) that holds an object at `revision`,
        in order, with its change in effect then, or a settled key's JSON text."""
        history = self._history
        keys = self._keys.scan(prefix, start_after)
        settled = self._settled.scan(prefix, start_after)
        key = next(keys, None)
        entry = next(settled, None)
        while True:
            if key is not None and (entry is None or key < entry[0]):
                version = self._at(key, history[key], revision)
                if _live(version):
                    yield key, version
                key = next(keys, None)
            elif entry is not None:
                yield entry[0], entry[2]
                entry = next(settled, None)
            else:
                return

    def _settled_version(self, key: str) -> Version | None:
        if not self._settled:  # a simulation's store settles nothing
            return None
        found = self._settled.get(key)
        if found is None:
            return None
        last = self._last_read
        if last is not None and last[1] == found[0] and last[0] == key:
            return Version("MODIFIED", key, last[2], found[0])
        return Version.settled((key, *found))

    def _live_count(self, prefix: str, start_after: str | None, revision: int) -> int:
        """How many keys under `prefix` after `start_after` hold an object at `revision`.

        Settled keys all do. The others are counted from the key sets now, corrected by the
        changes made since `revision`, when those are fewer than the keys; else key by key.
        """
        settled = self._settled.count(prefix, start_after)
        keys = self._keys.count(prefix, start_after)
        changes = self.revision - revision
        if changes > keys:
            return settled + sum(
                1
                for key in self._keys.scan(prefix, start_after)
                if _live(self._at(key, self._history[key], revision))
            )
        live = settled + keys - self._tombstones.count(prefix, start_after)
        changed: set[str] = set()
        for i in range(revision + 1, self.revision + 1):
            key = self._log[i - self.compacted_revision - 1]
            if key is None or key in changed or not key.startswith(prefix):
                continue
            if start_after is not None and key <= start_after:
                continue
            changed.add(key)
            history = self._history[key]
            live += _live(self._at(key, history, revision)) - _live(
                self._at(key, history, self.revision)
            )
        return live

    def apply(self, event: WatchEvent, packed: PackedAhead = None) -> None:
        """Commit the next change; its revision must be `revision + 1`. `packed`: its object
        as the codec packs it, when that was done elsewhere (the SQLite store's writer thread
        does it) or is being done (`Ahead`), for when the change leaves the recent ones."""
        version = Version(event.type, event.key, event.object, event.revision)
        self._record(version)
        self._log.append(version.key)
        self._keep_recent(version, packed)
        self.revision = event.revision

    def text(self, event: WatchEvent) -> bytes:
        """The JSON text of `event`'s object. When `event` is the change applied last, its
        packed form is made of that text now, and kept for when it leaves the recent ones."""
        text = orjson.dumps(event.object)
        recent = self._recent
        if recent and recent[-1][0].revision == event.revision and recent[-1][1] is None:
            recent[-1] = (recent[-1][0], self._codec.pack(event.object, text))
        return text

    def skip(self, revision: int) -> None:
        """The revisions after the current one, up to `revision`, changed nothing here: etcd
        counts the writes of every key in its revisions, those of keys outside the store too."""
        self._log.extend(None for _ in range(self.revision, revision))
        self.revision = max(self.revision, revision)

    def restore(
        self, versions: Iterable[Version], revision: int, compacted: int
    ) -> builtins.list[int]:
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
        changed = {version.key for version in later}
        settling: list[Version] = []
        for key, version in settled.items():
            if version.type == "DELETED":
                dropped.append(version.revision)
            elif key in changed or not (self._settle_keys and settles(key)):
                self._record(version)
            else:
                settling.append(version)
        settling.sort(key=_key_of)
        # A batch at a time: every object's JSON text at once would take gigabytes.
        for i in range(0, len(settling), RESTORE_BATCH):
            batch = settling[i : i + RESTORE_BATCH]
            self._settled.add([(v.key, v.revision, v.json(self._codec)) for v in batch])
        self._versions += len(settling)
        for version in later:
            self._record(version)
            self._log.append(version.key)
        self.revision = max(revision, compacted)
        return sorted(dropped)

    def _record(self, version: Version) -> None:
        key = version.key
        history = self._history.get(key)
        if history is not None and self._held:
            held = self._held.pop(key, None)
            if held is not None:
                self._pack(*held)  # replaced now
                history = self._history[key]
        if history is None:
            # A new key, or a settled one: neither is held.
            settled = self._settled.pop(key) if self._settled else None
            self._keys.add(key)
            if settled is None:
                self._history[key] = version.stored
                self._versions += 1
                return
            revision, text = settled
            history = [Version.from_json("MODIFIED", key, text, revision, self._codec).stored]
            self._history[key] = history
        else:
            # One string for all the key's changes in the log: each write brings its own.
            key = version.key = self._keys.stored(key)
            if not isinstance(history, list):
                history = self._history[key] = [history]
        if version.type == "DELETED":
            self._tombstones.add(key)
        elif _deleted(self._read(history[-1])):
            self._tombstones.remove(key)
        history.append(version.stored)
        self._versions += 1

    def _keep_recent(self, version: Version, packed: PackedAhead) -> None:
        recent = self._recent
        recent.append((version, packed))
        if len(recent) > self._recent_versions:
            self._leave_recent(*recent.popleft())

    def _leave_recent(self, version: Version, packed: PackedAhead) -> None:
        """A version leaves the recent ones: held if it is its key's live latest change, else
        packed."""
        if version.type != "DELETED":
            history = self._history.get(version.key)
            if history is version or (isinstance(history, list) and history[-1] is version):
                held = self._held
                held[version.key] = (version, packed)
                if len(held) > self._held_versions:
                    self._release(*held.popitem(last=False)[1])
                return
        self._pack(version, packed)

    def _release(self, version: Version, packed: PackedAhead) -> None:
        """A held version is packed while it is still its key's latest: the key settles as
        one compaction left would, if compaction has passed it."""
        self._pack(version, packed)
        if version.revision <= self.compacted_revision:
            self._unsettled.append(version.key)

    def _pack(self, version: Version, packed: PackedAhead) -> None:
        """Keep only the packed form of a version leaving the recent ones (or held), if it is
        still in its key's history: in the segments, unless compaction has passed it."""
        history = self._history.get(version.key)
        if history is version:
            self._history[version.key] = self._packed(version, packed)
        elif isinstance(history, list):
            # From the end: a version leaves the recent ones (or is replaced) among the last.
            for i in range(len(history) - 1, -1, -1):
                if history[i] is version:
                    history[i] = self._packed(version, packed)
                    break

    def _packed(self, version: Version, packed_object: PackedAhead) -> Change:
        if isinstance(packed_object, Ahead):
            packed_object = packed_object.packed
        packed = version.pack(self._codec, packed_object)
        if version.revision > self.compacted_revision:
            ref = self._segments.add(packed, version.revision)
            if ref is not None:
                return ref
        return packed

    def compact(self, revision: int) -> builtins.list[int]:
        """Drop what is not needed to read at `revision` or later; return the revisions of
        the changes dropped. `revision` must be in [compacted_revision, revision].

        The keys this leaves with one live packed version are settled by `settle`."""
        n = revision - self.compacted_revision
        if n <= 0:
            return []
        window = dict.fromkeys(self._log[:n])  # the keys changed, each once, in order
        del self._log[:n]
        self.compacted_revision = revision
        dropped: list[int] = []
        histories = self._history
        for key in window:
            if key is None:
                continue
            history = histories[key]
            if isinstance(history, Version):
                # Its only change, made in the window: kept unless it deleted the key.
                if history.type == "DELETED":
                    dropped.append(history.revision)
                    self._remove(key)
                continue
            history = _changes(history)
            i = bisect_right(history, revision, key=self._revision_of) - 1
            first_kept = i + 1 if _deleted(self._read(history[i])) else i
            for change in history[:first_kept]:
                dropped.append(self._revision_of(change))
                self._forget(change)
            kept = history[first_kept:]
            if not kept:
                self._remove(key)
            elif len(kept) > 1:
                # Its change at the compacted revision may be kept long: not in a segment.
                kept[0] = self._copied_out(kept[0])
                histories[key] = kept
            else:
                histories[key] = kept[0]
                if isinstance(kept[0], bytes | int):
                    self._unsettled.append(key)
        self._versions -= len(dropped)
        recent = self._recent
        gone = set(dropped)  # out of their keys' histories: nothing to hold or pack
        while recent and recent[0][0].revision <= revision:
            version, packed = recent.popleft()
            if version.revision in gone:
                continue
            self._leave_recent(version, packed)
            if isinstance(histories.get(version.key), bytes):
                self._unsettled.append(version.key)
        return dropped

    def _remove(self, key: str) -> None:
        """Compaction dropped the key's last change, a tombstone."""
        del self._history[key]
        self._removed += 1
        self._keys.remove(key)
        self._tombstones.remove(key)

    def settle(self) -> bool:
        """Settle up to `SETTLE_STEP` of the keys compaction left with one live packed version
        at or before the compacted revision, if they still are; True if some are left. A key
        that does not settle has that change copied out of the segments."""
        if not self._settling and self._unsettled:
            # In key order, each block is rebuilt once for all the keys it takes. Keys a
            # compaction running alongside leaves meanwhile wait for the next round: sorting
            # them in at once would sort everything again for each of its steps. Sorted in
            # place, as a copy (or a set) of a start's million keys would raise the peak.
            self._unsettled.sort(reverse=True)
            self._settling, self._unsettled = self._unsettled, []
        settling = self._settling
        history = self._history
        entries: list[Entry] = []
        for _ in range(min(SETTLE_STEP, len(settling))):
            key = settling.pop()
            kept = history.get(key)
            if isinstance(kept, list):  # written since
                kept[0] = self._copied_out(kept[0])
                continue
            only = self._read(kept) if kept is not None else None
            if (
                isinstance(only, bytes)
                and not _deleted(only)
                and _revision_of(only) <= self.compacted_revision
                and self._settle_keys
                and settles(key)
            ):
                entries.append((key, _revision_of(only), _json(only, self._codec)))
                del history[key]
                self._keys.remove(key)
                self._forget(kept)
            elif kept is not None:
                history[key] = self._copied_out(kept)
        entries.sort()
        self._settled.add(entries)
        self._removed += len(entries)
        if not settling and self._removed > len(history):
            # A dict keeps its table when keys go: a start's burst of new keys would stay.
            self._history = dict(history)
            self._removed = 0
        return bool(settling or self._unsettled)

    def _read(self, change: Change) -> Version | Packed:
        """`change` itself, or its packed form out of the segments when it is kept there."""
        return self._segments.get(change) if isinstance(change, int) else change

    def _copied_out(self, change: Change) -> Change:
        """`change`, copied out of the segments if compaction has passed it there: a segment
        goes when the changes in it do, and a key's change at the compacted revision may stay
        for long."""
        if isinstance(change, int) and self._segments.revision(change) <= self.compacted_revision:
            packed = self._segments.get(change)
            self._segments.drop(change)
            return packed
        return change

    def _forget(self, change: Change | None) -> None:
        """`change` is no longer kept."""
        if isinstance(change, int):
            self._segments.drop(change)

    def _revision_of(self, change: Change) -> int:
        if isinstance(change, int):
            return self._segments.revision(change)
        return _revision_of(change)

    def _version(self, key: str, change: Change) -> Version:
        return Version.unpacked(key, self._read(change))

    def _at(self, key: str, history: History, revision: int) -> Version | None:
        """The key's change in effect at `revision` (a readable one), if any."""
        if isinstance(history, int):
            history = self._segments.get(history)
        if isinstance(history, bytes):
            at = _REVISION.unpack_from(history, 1)[0]
            return Version(_TYPES[history[0]], key, history, at) if revision >= at else None
        if isinstance(history, Version):
            return history if revision >= history.revision else None
        if revision >= self._revision_of(history[-1]):
            return self._version(key, history[-1])
        i = bisect_right(history, revision, key=self._revision_of)
        return self._version(key, history[i - 1]) if i else None


def _live(event: Version | None) -> TypeGuard[Version]:
    return event is not None and event.type != "DELETED"


def _changes(history: History) -> list[Change]:
    """The key's retained changes as a list, in revision order (a new one unless it was)."""
    return history if isinstance(history, list) else [history]
