"""What client-go's EventCorrelator does to an Event before it is written, with its defaults:

- aggregation: once an object has had events of one source, type and reason with 10 different
  messages within 10 minutes, further ones are written as one combined event, "(combined from
  similar events): <message>";
- counting: an event identical to an earlier one (same source, object, type, reason and
  message) is written as a patch of the earlier Event: count + 1, a new lastTimestamp;
- spam filtering: a source may write 25 events about one object at once, then one per
  5 minutes; the rest are dropped.

client-go keeps three LRU caches of 4096 entries (aggregation records, last writes, token
buckets). A kubelet keeps entries for every pod it runs, so here the three are kept together per
source and object, in one LRU of objects: when there would be more than 4096 objects, or more
than 4096 aggregation records or last writes in all, the least recently used object's entries are
all forgotten. So nothing differs until a cache is full; past that, what is forgotten first is
the object reported on longest ago, where client-go forgets each cache's least recently used
entry on its own (an object's older reasons before its recent ones). Forgetting has client-go's
effect: a repeat creates a new Event instead of counting, aggregation starts again, the spam
filter's burst is full again.

The caches keep only what these rules need (counts, first timestamps, names, token buckets), not
the Events nor the objects they are about: the Events a kubelet wrote are the API's.
"""

from __future__ import annotations

import struct
import sys
from typing import NamedTuple, cast

from pinnace.api.core.event import without_empty
from pinnace.api.objects import Object
from pinnace.clock import Clock, format_time

LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "
SHARED_KEYS = 64
"""How many distinct entry keys a correlator shares between objects before it starts over."""

SourceAndObject = tuple[tuple[str, str, str, str, str], str, str]
"""Who reported an event about which object (client-go's spam key): (component, host, kind,
namespace, apiVersion), shared by the objects of one kind and namespace, then name and uid."""
EntryKey = tuple[str, str, str, str]
"""The rest of an entry's key: (fieldPath, type, reason, message) for an event (client-go's
event key), (type, reason, reportingComponent, reportingInstance) for its aggregation record
and for the combined event that stands in for it (client-go's aggregate key)."""

Messages = tuple[str, ...]
"""The distinct messages of an aggregation record, oldest first (at most AGGREGATE_MAX_EVENTS -
1)."""
SimilarChange = tuple[int, EntryKey, Messages, float]
"""An aggregation record to set: which (-1: a new one after the others), its key, its messages
(at least one) and when its key was last seen."""
WriteChange = tuple[int, EntryKey, int, int, str]
"""A last write to set: which (-1: a new one after the others), its key, count, the Event's
name's stamp and its firstTimestamp."""
Slot = bytes | str | tuple[str, ...]
"""What a record holds: its numbers, entry keys, messages (one, or a tuple of them when
several, as almost every key has one) and first timestamps."""

_HEAD = struct.Struct("<ddqH")
"""The spam filter's token bucket (tokens, when last taken), the base of the last writes'
stamps, how many aggregation records there are."""
_SEEN = struct.Struct("<d")
"""When an aggregation record's key was last seen."""
_WRITE = struct.Struct("<qq")
"""A last write's count and stamp."""
_FIRST = struct.Struct(_HEAD.format + _SEEN.format[1:] + _WRITE.format[1:])
"""The numbers of a record with one aggregation record and one last write."""


class Record(tuple[Slot, ...]):
    """The entries of one source and object, in one flat tuple (a kubelet keeps one for every
    pod it runs, with three entries of each kind: a tuple subclass without slots of its own
    costs what a tuple does, where an object per entry, or one holding tuples, would cost as
    much again): its numbers packed in one bytes string (as floats and ints of their own they
    took as much memory as the rest), then the aggregation records (key, messages), then the
    last writes (key, firstTimestamp).

    The numbers are `_HEAD`, then each aggregation record's `_SEEN`, then each last write's
    `_WRITE`. A last write's firstTimestamp is interned (the events of one second share it);
    its stamp is its Event's name's, `<involved object's name>.<stamp, hex>`, as the recorder
    names Events, kept as its difference from the base (the stamp of the record's first
    write). A record is never changed: each change makes a new one."""

    __slots__ = ()

    @property
    def similar_count(self) -> int:
        """How many aggregation records it holds."""
        count: int = _HEAD.unpack_from(self._numbers)[3]
        return count

    @property
    def observed_count(self) -> int:
        """How many last writes it holds."""
        return (len(self) - 1) // 2 - self.similar_count

    def head(self) -> tuple[float, float, int, int]:
        """The spam filter's tokens and when they were last taken, the base of the last
        writes' stamps, and how many aggregation records it holds (`similars`, which the
        methods below take)."""
        head: tuple[float, float, int, int] = _HEAD.unpack_from(self._numbers)
        return head

    # --- aggregation records -----------------------------------------------------------------

    def similar(self, key: EntryKey, similars: int) -> int:
        """Which aggregation record is of `key`, or -1."""
        return _index(self[1 : 1 + 2 * similars : 2], key)

    def seen(self, j: int) -> float:
        """When the key of aggregation record `j` was last seen."""
        seen: float = _SEEN.unpack_from(self._numbers, _HEAD.size + _SEEN.size * j)[0]
        return seen

    def messages(self, j: int) -> Messages:
        messages = self[2 + 2 * j]
        if isinstance(messages, str):
            return (messages,)
        assert isinstance(messages, tuple), "a record's messages are strings"
        return messages

    # --- last writes -------------------------------------------------------------------------

    def observed(self, key: EntryKey, similars: int) -> int:
        """Which last write is of `key`, or -1."""
        return _index(self[1 + 2 * similars :: 2], key)

    def last_write(self, j: int, base: int, similars: int) -> tuple[int, int, str]:
        """Last write `j`'s count, stamp and firstTimestamp."""
        at = _HEAD.size + _SEEN.size * similars + _WRITE.size * j
        count, stamp = _WRITE.unpack_from(self._numbers, at)
        first_timestamp = self[2 + 2 * (similars + j)]
        assert isinstance(first_timestamp, str), "a record's timestamps are strings"
        return count, base + stamp, first_timestamp

    # --- changes -----------------------------------------------------------------------------

    def changed(
        self, write: WriteChange, bucket: tuple[float, float], similar: SimilarChange | None = None
    ) -> Record:
        """With `write` set, the spam filter's `bucket` (tokens, when last taken) and, if given,
        `similar` set: what an event makes of the record, in one new record. The first write of
        a record sets its base."""
        numbers = self._numbers
        _, _, base, similars = _HEAD.unpack_from(numbers)
        writes_at = _HEAD.size + _SEEN.size * similars
        seens, writes = numbers[_HEAD.size : writes_at], numbers[writes_at:]
        entries = list(self[1:])  # the aggregation records' slots, then the last writes'
        if similar is not None:
            j, key, messages, seen = similar
            entry = (key, messages[0] if len(messages) == 1 else messages)
            if j < 0:
                entries[2 * similars : 2 * similars] = entry
                seens += _SEEN.pack(seen)
                similars += 1
            else:
                entries[2 * j : 2 * j + 2] = entry
                seens = _spliced(seens, _SEEN.size * j, _SEEN.size, _SEEN.pack(seen))
        j, key, count, stamp, first_timestamp = write
        if not writes:
            base = stamp
        entry = (key, sys.intern(first_timestamp))
        packed = _WRITE.pack(count, stamp - base)
        if j < 0:
            entries += entry
            writes += packed
        else:
            entries[2 * (similars + j) : 2 * (similars + j) + 2] = entry
            writes = _spliced(writes, _WRITE.size * j, _WRITE.size, packed)
        head = _HEAD.pack(*bucket, base, similars)
        return Record((head + seens + writes, *entries))

    # --- the slots ---------------------------------------------------------------------------

    @property
    def _numbers(self) -> bytes:
        return cast(bytes, self[0])  # a record starts with its numbers


def _index(keys: tuple[Slot, ...], key: EntryKey) -> int:
    """Where `key` is in `keys`, or -1."""
    return keys.index(key) if key in keys else -1


_NEW = Record((_HEAD.pack(SPAM_BURST, float("-inf"), 0, 0),))
"""A record with no entries: a full bucket at minus infinity stands for none."""


class Correlated(NamedTuple):
    """The Event to write and, for a repeat, the patch that updates the existing one; then
    what `correlate` remembered of it as its last write: the record it left, and the last
    write's key, name, count and firstTimestamp."""

    event: Object
    patch: Object | None
    source_and_object: SourceAndObject
    record: Record
    key: EntryKey
    name: str
    event_count: int
    first_timestamp: str


class EventCorrelator:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._records: dict[SourceAndObject, Record] = {}
        """Least recently used first: a plain dict keeps insertion order, so a record used moves
        to the end by being inserted again (an OrderedDict costs about twice as much)."""
        self._similar = 0  # aggregation records, in all records
        self._observed = 0  # last writes, in all records
        self._keys: dict[EntryKey, EntryKey] = {}
        """Equal entry keys are one tuple across objects ("Normal", "Started", "kubelet",
        <node>); when there are too many distinct ones to share, sharing starts over."""
        self._sources: dict[tuple[str, str, str, str, str], tuple[str, str, str, str, str]] = {}
        """The same for the sources and kinds of objects in the records' keys."""

    def correlate(self, event: Object) -> Correlated | None:
        """The write for `event` (which this takes over), or None when spam drops it."""
        now = self._clock.now()
        source_and_object = self._source_and_object(event)
        records = self._records
        record = records.pop(source_and_object, None)  # put back last: the most recently used
        patch = None
        if record is None:
            key, record = self._first(event, now)
            allowed = True
        else:
            event, key, patch, allowed, record = self._next(record, event, now)
        records[source_and_object] = record
        self._evict()
        if not allowed:
            return None
        return Correlated(
            event,
            patch,
            source_and_object,
            record,
            key,
            event["metadata"]["name"],
            event.get("count") or 0,
            event.get("firstTimestamp") or "",
        )

    def written(self, event: Object, sent: Correlated | None = None) -> None:
        """Remember the Event as the server stored it, for the next repeat's patch. `sent`: what
        `correlate` returned for it; when the server stored it as sent and nothing was
        correlated since, there is nothing new to remember."""
        if sent is not None and self._as_remembered(event, sent):
            return
        source_and_object = self._source_and_object(event)
        record = self._use(source_and_object)
        tokens, last, _, similars = record.head()
        key = self._event_key(event)
        write = self._last_write(record.observed(key, similars), key, event)
        self._records[source_and_object] = record.changed(write, (tokens, last))
        self._evict()

    def _as_remembered(self, event: Object, sent: Correlated) -> bool:
        """Whether the stored `event` is what `correlate` remembered, in the record it left as
        the most recently used: the server wrote it as sent (under its name, not one moved on
        after a collision), so remembering it again would change nothing."""
        records, source_and_object = self._records, sent.source_and_object
        if records.get(source_and_object) is not sent.record:
            return False
        if next(reversed(records)) != source_and_object:
            return False
        return (
            event["metadata"].get("name") == sent.name
            and (event.get("count") or 0) == sent.event_count
            and (event.get("firstTimestamp") or "") == sent.first_timestamp
            and _event_key_of(event) == sent.key
        )

    def _first(self, event: Object, now: float) -> tuple[EntryKey, Record]:
        """The key and record of the first event of a source about an object: what `_next`
        makes of an empty record, built at once (every pod's first event from each source
        has one)."""
        key = self._event_key(event)
        numbers = _FIRST.pack(
            SPAM_BURST - 1, now, _stamp(event), 1, now, event.get("count") or 0, 0
        )
        first_timestamp = sys.intern(event.get("firstTimestamp") or "")
        self._similar += 1
        self._observed += 1
        similar = self._aggregate_key(event)
        return key, Record((numbers, similar, event.get("message", ""), key, first_timestamp))

    def _next(
        self, record: Record, event: Object, now: float
    ) -> tuple[Object, EntryKey, Object | None, bool, Record]:
        """What client-go's aggregation, counting and spam filtering, in turn, make of an event
        about an object its source has a record of: the event to write (`event`, or the
        combined one standing in for it), its entry key, the patch for a repeat, whether the
        spam filter lets it through, and the record after. The combined event of an
        aggregation has the source and object of the event it stands in for, so the spam
        filter's bucket is the record's either way."""
        tokens, last, base, similars = record.head()
        event, key, similar = self._aggregate(record, similars, event, now)
        patch, write = self._observe(record, base, similars, event, key)
        tokens = min(SPAM_BURST, tokens + (now - last) * SPAM_QPS)
        allowed = tokens >= 1
        bucket = (tokens - 1 if allowed else tokens, now)
        return event, key, patch, allowed, record.changed(write, bucket, similar)

    def _use(self, source_and_object: SourceAndObject) -> Record:
        """The record of `source_and_object`, now the most recently used (its caller puts it
        back, changed)."""
        record = self._records.pop(source_and_object, _NEW)
        self._records[source_and_object] = record
        return record

    def _evict(self) -> None:
        records = self._records
        while (
            len(records) > LRU_CACHE_ENTRIES
            or self._similar > LRU_CACHE_ENTRIES
            or self._observed > LRU_CACHE_ENTRIES
        ):
            record = records.pop(next(iter(records)))
            self._similar -= record.similar_count
            self._observed -= record.observed_count

    def _shared(self, key: EntryKey) -> EntryKey:
        if len(self._keys) >= SHARED_KEYS:
            self._keys.clear()
        return self._keys.setdefault(key, key)

    def _source_and_object(self, event: Object) -> SourceAndObject:
        source, involved = event.get("source") or {}, event["involvedObject"]
        shared = (
            source.get("component", ""),
            source.get("host", ""),
            involved.get("kind", ""),
            involved.get("namespace", ""),
            involved.get("apiVersion", ""),
        )
        if len(self._sources) >= SHARED_KEYS:
            self._sources.clear()
        shared = self._sources.setdefault(shared, shared)
        return (shared, involved.get("name", ""), involved.get("uid", ""))

    def _event_key(self, event: Object) -> EntryKey:
        return self._shared(_event_key_of(event))

    def _aggregate_key(self, event: Object) -> EntryKey:
        return self._shared(
            (
                event.get("type", ""),
                event.get("reason", ""),
                event.get("reportingComponent", ""),
                event.get("reportingInstance", ""),
            )
        )

    def _aggregate(
        self, record: Record, similars: int, event: Object, now: float
    ) -> tuple[Object, EntryKey, SimilarChange]:
        """The event to write (`event`, or the combined one standing in for it), its entry key,
        and what becomes of its aggregation record."""
        key = self._aggregate_key(event)
        j = record.similar(key, similars)
        messages: Messages = ()
        if j >= 0 and now - record.seen(j) <= AGGREGATE_INTERVAL:
            messages = record.messages(j)
        message = event.get("message", "")
        if message not in messages:
            messages = (*messages, message)
        combine = len(messages) >= AGGREGATE_MAX_EVENTS
        if combine:
            # Keep the set from growing past the threshold. client-go drops any one message;
            # the oldest, here, so that a run is reproducible.
            messages = messages[1:]
        if j < 0:
            self._similar += 1
        similar = (j, key, messages, now)
        if not combine:
            return event, self._event_key(event), similar
        stamp = format_time(now)
        combined: Object = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": event["metadata"]["name"],  # it stands in for this event
                "namespace": event["metadata"]["namespace"],
            },
            "involvedObject": event["involvedObject"],
            "reason": event.get("reason", ""),
            "message": COMBINED_PREFIX + event.get("message", ""),
            "source": event.get("source") or {},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event.get("type", ""),
        }
        return without_empty(combined), key, similar

    def _observe(
        self, record: Record, base: int, similars: int, event: Object, key: EntryKey
    ) -> tuple[Object | None, WriteChange]:
        """A repeat becomes a patch of the Event written before (`event` takes its name, count
        and firstTimestamp); and `event` becomes the last write of `key`."""
        j = record.observed(key, similars)
        patch = None
        if j >= 0:
            count, stamp, first_timestamp = record.last_write(j, base, similars)
            involved_name = event["involvedObject"].get("name", "")
            event["metadata"] = {**event["metadata"], "name": f"{involved_name}.{stamp:x}"}
            event["firstTimestamp"] = first_timestamp
            event["count"] = count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event.get("message", ""),
            }
        return patch, self._last_write(j, key, event)

    def _last_write(self, j: int, key: EntryKey, event: Object) -> WriteChange:
        """`event` as last write `j` (a new one when -1) of `key`."""
        if j < 0:
            self._observed += 1
        count, first_timestamp = event.get("count") or 0, event.get("firstTimestamp") or ""
        return j, key, count, _stamp(event), first_timestamp


def _event_key_of(event: Object) -> EntryKey:
    return (
        event["involvedObject"].get("fieldPath", ""),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("message", ""),
    )


def _stamp(event: Object) -> int:
    """The stamp of the Event's name, `<involved object's name>.<stamp, hex>`."""
    return int(event["metadata"]["name"].rpartition(".")[2], 16)


def _spliced(numbers: bytes, at: int, size: int, new: bytes) -> bytes:
    """`numbers` with the `size` bytes at `at` replaced by `new`."""
    return numbers[:at] + new + numbers[at + size :]
