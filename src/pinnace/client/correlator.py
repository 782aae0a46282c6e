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
from dataclasses import dataclass

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

Record = tuple[object, ...]
"""The entries of one source and object, as one flat tuple rather than an object per entry (a
kubelet keeps one with three entries of each kind for every pod it runs): its numbers packed
in one bytes string (as floats and ints of their own they took as much memory as the rest),
how many aggregation records it holds, then the aggregation records (SIMILAR slots each), then
the last writes (OBSERVED slots each).

The numbers are the spam filter's token bucket (tokens, when last taken) and the base of the
stamps (`_BUCKET`), then when each aggregation record's key was last seen (`_SEEN`), then each
last write's count and stamp (`_WRITE`)."""
_NUMBERS, _SIMILARS = range(2)
HEAD = 2
_BUCKET = struct.Struct("<ddq")
_SEEN = struct.Struct("<d")
_WRITE = struct.Struct("<qq")
_NEW: Record = (_BUCKET.pack(SPAM_BURST, float("-inf"), 0), 0)
"""A record with no entries: a full bucket at minus infinity stands for none."""

SIMILAR = 2
"""The slots of an aggregation record: its key, then the distinct messages seen, oldest first
(at most AGGREGATE_MAX_EVENTS - 1): one message, or a tuple of them when several, as almost
every key has one."""
OBSERVED = 2
"""The slots of a last write: its key and its firstTimestamp (interned: the events of one
second share it). Its stamp is its Event's name's: `<involved object's name>.<stamp, hex>`, as
the recorder names Events, kept as its difference from the record's base (the stamp of its
first write)."""


@dataclass(frozen=True)
class Correlated:
    """The Event to write and, for a repeat, the patch that updates the existing one."""

    event: Object
    patch: Object | None


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
        record = self._use(source_and_object)
        event, key, record = self._aggregate(record, event, now)
        correlated, record = self._observe(record, event, key)
        allowed, record = _allow(record, now)
        self._records[source_and_object] = record
        self._evict()
        return correlated if allowed else None

    def written(self, event: Object) -> None:
        """Remember the Event as the server stored it, for the next repeat's patch."""
        source_and_object = self._source_and_object(event)
        record = self._use(source_and_object)
        self._records[source_and_object] = self._remember(record, self._event_key(event), event)
        self._evict()

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
            similars: int = record[_SIMILARS]  # type: ignore[assignment]
            self._similar -= similars
            self._observed -= (len(record) - HEAD - SIMILAR * similars) // OBSERVED

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
        return self._shared(
            (
                event["involvedObject"].get("fieldPath", ""),
                event.get("type", ""),
                event.get("reason", ""),
                event.get("message", ""),
            )
        )

    def _aggregate(
        self, record: Record, event: Object, now: float
    ) -> tuple[Object, EntryKey, Record]:
        key = self._shared(
            (
                event.get("type", ""),
                event.get("reason", ""),
                event.get("reportingComponent", ""),
                event.get("reportingInstance", ""),
            )
        )
        similars: int = record[_SIMILARS]  # type: ignore[assignment]
        i = _find(record, key, HEAD, HEAD + SIMILAR * similars, SIMILAR)
        numbers: bytes = record[_NUMBERS]  # type: ignore[assignment]
        at = _BUCKET.size + _SEEN.size * ((i - HEAD) // SIMILAR if i >= 0 else similars)
        messages: tuple[str, ...] = ()
        if i >= 0 and now - _SEEN.unpack_from(numbers, at)[0] <= AGGREGATE_INTERVAL:
            seen = record[i + 1]
            messages = seen if type(seen) is tuple else (seen,)
        message = event.get("message", "")
        if message not in messages:
            messages = (*messages, message)
        combine = len(messages) >= AGGREGATE_MAX_EVENTS
        if combine:
            # Keep the set from growing past the threshold. client-go drops any one message;
            # the oldest, here, so that a run is reproducible.
            messages = messages[1:]
        entry = (key, messages[0] if len(messages) == 1 else messages)
        seen_now = _SEEN.pack(now)
        if i >= 0:
            numbers = _spliced(numbers, at, _SEEN.size, seen_now)
            record = (numbers, *_replace(record, i, entry)[HEAD - 1 :])
        else:
            end = HEAD + SIMILAR * similars
            numbers = _spliced(numbers, at, 0, seen_now)
            record = (numbers, similars + 1, *record[HEAD:end], *entry, *record[end:])
            self._similar += 1
        if not combine:
            return event, self._event_key(event), record
        stamp = format_time(now)
        combined = {
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
        return combined, key, record

    def _observe(self, record: Record, event: Object, key: EntryKey) -> tuple[Correlated, Record]:
        start = _observed_start(record)
        i = _find(record, key, start, len(record), OBSERVED)
        patch = None
        if i >= 0:
            numbers: bytes = record[_NUMBERS]  # type: ignore[assignment]
            count, stamp = _WRITE.unpack_from(numbers, _written_at(record, start, i))
            stamp += _BUCKET.unpack_from(numbers)[2]
            first_timestamp = record[i + 1]
            involved_name = event["involvedObject"].get("name", "")
            event["metadata"] = {**event["metadata"], "name": f"{involved_name}.{stamp:x}"}
            event["firstTimestamp"] = first_timestamp
            event["count"] = count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event.get("message", ""),
            }
        return Correlated(event, patch), self._remember(record, key, event)

    def _remember(self, record: Record, key: EntryKey, event: Object) -> Record:
        """`record` with `event` as the last write of `key`."""
        start = _observed_start(record)
        i = _find(record, key, start, len(record), OBSERVED)
        stamp = int(event["metadata"]["name"].rpartition(".")[2], 16)
        numbers: bytes = record[_NUMBERS]  # type: ignore[assignment]
        tokens, last, base = _BUCKET.unpack_from(numbers)
        if start == len(record):
            base = stamp
            numbers = _spliced(numbers, 0, _BUCKET.size, _BUCKET.pack(tokens, last, base))
        write = _WRITE.pack(event.get("count") or 0, stamp - base)
        entry = (key, sys.intern(event.get("firstTimestamp") or ""))
        if i >= 0:
            numbers = _spliced(numbers, _written_at(record, start, i), _WRITE.size, write)
            return (numbers, *_replace(record, i, entry)[HEAD - 1 :])
        self._observed += 1
        return (numbers + write, *record[HEAD - 1 :], *entry)


def _observed_start(record: Record) -> int:
    return HEAD + SIMILAR * record[_SIMILARS]  # type: ignore[operator]


def _written_at(record: Record, start: int, i: int) -> int:
    """Where in the record's numbers are those of the last write at slot `i` (`start`: where
    the last writes start)."""
    similars: int = record[_SIMILARS]  # type: ignore[assignment]
    return _BUCKET.size + _SEEN.size * similars + _WRITE.size * ((i - start) // OBSERVED)


def _spliced(numbers: bytes, at: int, size: int, new: bytes) -> bytes:
    """`numbers` with the `size` bytes at `at` replaced by `new`."""
    return numbers[:at] + new + numbers[at + size :]


def _allow(record: Record, now: float) -> tuple[bool, Record]:
    """The spam filter: the combined event of an aggregation has the same source and object as
    the event it stands in for, so its bucket is the record's."""
    numbers: bytes = record[_NUMBERS]  # type: ignore[assignment]
    tokens, last, base = _BUCKET.unpack_from(numbers)
    tokens = min(SPAM_BURST, tokens + (now - last) * SPAM_QPS)
    allowed = tokens >= 1
    bucket = _BUCKET.pack(tokens - 1 if allowed else tokens, now, base)
    return allowed, (_spliced(numbers, 0, _BUCKET.size, bucket), *record[HEAD - 1 :])


def _find(record: Record, key: EntryKey, start: int, end: int, stride: int) -> int:
    """Where the entry of `key` starts among the entries of `stride` slots from `start` to
    `end` of `record`, or -1."""
    for i in range(start, end, stride):
        if record[i] == key:
            return i
    return -1


def _replace(record: Record, i: int, entry: tuple[object, ...]) -> Record:
    """`record` with the entry at `i` replaced by `entry`."""
    return record[:i] + entry + record[i + len(entry) :]
