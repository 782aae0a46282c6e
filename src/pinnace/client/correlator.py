"""What client-go's EventCorrelator does to an Event before it is written, with its defaults:

- aggregation: once an object has had events of one source, type and reason with 10 different
  messages within 10 minutes, further ones are written as one combined event, "(combined from
  similar events): <message>";
- counting: an event identical to an earlier one (same source, object, type, reason and
  message) is written as a patch of the earlier Event: count + 1, a new lastTimestamp;
- spam filtering: a source may write 25 events about one object at once, then one per
  5 minutes; the rest are dropped.

Every cache is an LRU of 4096 entries, as client-go's. The caches keep only what these rules
need (counts, first timestamps, names, token buckets), not the Events nor the objects they are
about: a kubelet keeps entries for every pod it runs, and the Events it wrote are the API's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Generic, TypeVar

from pinnace.apiserver.objects import Object
from pinnace.clock import Clock, format_time

LRU_CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """A plain dict keeps insertion order, so an entry read or written moves to the end by being
    inserted again, and the first is the least recently used. (An OrderedDict would cost about
    twice as much per entry, and a kubelet keeps several entries for every pod it runs.)"""

    def __init__(self, size: int = LRU_CACHE_ENTRIES) -> None:
        self._size = size
        self._entries: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self._entries.pop(key, None)
        if value is not None:
            self._entries[key] = value
        return value

    def peek(self, key: K) -> V | None:
        """The entry, if any, without counting this as a use."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        self._entries.pop(key, None)
        self._entries[key] = value
        if len(self._entries) > self._size:
            del self._entries[next(iter(self._entries))]


SourceAndObject = tuple[str, ...]
"""Who reported an event about which object: what every cache key starts with."""


def _source_and_object(event: Object) -> SourceAndObject:
    source, involved = event.get("source") or {}, event["involvedObject"]
    return (
        source.get("component", ""),
        source.get("host", ""),
        involved.get("kind", ""),
        involved.get("namespace", ""),
        involved.get("name", ""),
        involved.get("uid", ""),
        involved.get("apiVersion", ""),
    )


def event_key(event: Object, source_and_object: SourceAndObject) -> tuple[object, ...]:
    """What makes two events the same one (client-go's getEventKey)."""
    return (
        source_and_object,
        event["involvedObject"].get("fieldPath", ""),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("message", ""),
    )


def _aggregate_key(event: Object, source_and_object: SourceAndObject) -> tuple[object, ...]:
    return (
        source_and_object,
        event.get("type", ""),
        event.get("reason", ""),
        event.get("reportingComponent", ""),
        event.get("reportingInstance", ""),
    )


Similar = tuple[float, *tuple[str, ...]]
"""When events of one aggregation key were last seen, then the distinct messages seen, oldest
first (at most AGGREGATE_MAX_EVENTS, and mostly one): one tuple, as a kubelet keeps one for
every reason of every pod it runs."""


# Slots: a kubelet keeps one of each for every pod it runs (up to the LRU size).
@dataclass(frozen=True, slots=True)
class _Observation:
    """The last write of an Event: what its next repeat patches."""

    count: int
    first_timestamp: str
    """Interned: the events of one second share it."""
    stamp: int
    """The Event's name is `<involved object's name>.<stamp, hex>`, as the recorder names
    Events: an int holds it in a fraction of the name's memory."""


@dataclass(slots=True)
class _TokenBucket:
    key: SourceAndObject
    tokens: float
    last: float


@dataclass(frozen=True)
class Correlated:
    """The Event to write and, for a repeat, the patch that updates the existing one."""

    event: Object
    patch: Object | None


class EventCorrelator:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._similar: LRU[tuple[object, ...], Similar] = LRU()
        self._observed: LRU[tuple[object, ...], _Observation] = LRU()
        self._buckets: LRU[SourceAndObject, _TokenBucket] = LRU()

    def correlate(self, event: Object) -> Correlated | None:
        """The write for `event` (which this takes over), or None when spam drops it."""
        now = self._clock.now()
        source_and_object = self._shared(_source_and_object(event))
        event, key = self._aggregate(event, source_and_object, now)
        correlated = self._observe(event, key)
        if not self._allow(source_and_object, now):
            return None
        return correlated

    def written(self, event: Object) -> None:
        """Remember the Event as the server stored it, for the next repeat's patch."""
        key = event_key(event, self._shared(_source_and_object(event)))
        self._observed.put(key, _observation(event))

    def _shared(self, source_and_object: SourceAndObject) -> SourceAndObject:
        """The equal tuple the spam filter already holds, if any, so that the keys of all three
        caches share one per object (a kubelet keeps entries for every pod it runs)."""
        bucket = self._buckets.peek(source_and_object)
        return source_and_object if bucket is None else bucket.key

    def _aggregate(
        self, event: Object, source_and_object: SourceAndObject, now: float
    ) -> tuple[Object, tuple[object, ...]]:
        key = _aggregate_key(event, source_and_object)
        similar = self._similar.get(key)
        messages = () if similar is None or now - similar[0] > AGGREGATE_INTERVAL else similar[1:]
        message = event.get("message", "")
        if message not in messages:
            messages = (*messages, message)
        if len(messages) < AGGREGATE_MAX_EVENTS:
            self._similar.put(key, (now, *messages))
            return event, event_key(event, source_and_object)
        # Keep the set from growing past the threshold. client-go drops any one message; the
        # oldest, here, so that a run is reproducible.
        self._similar.put(key, (now, *messages[1:]))
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
        return combined, key

    def _observe(self, event: Object, key: tuple[object, ...]) -> Correlated:
        last = self._observed.get(key)
        patch = None
        if last is not None:
            involved_name = event["involvedObject"].get("name", "")
            event["metadata"] = {**event["metadata"], "name": f"{involved_name}.{last.stamp:x}"}
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event.get("message", ""),
            }
        self._observed.put(key, _observation(event))
        return Correlated(event, patch)

    def _allow(self, key: SourceAndObject, now: float) -> bool:
        """The spam filter: the combined event of an aggregation has the same source and
        object as the event it stands in for, so the key is the one correlate() started from."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _TokenBucket(key, SPAM_BURST, now)
        bucket.tokens = min(SPAM_BURST, bucket.tokens + (now - bucket.last) * SPAM_QPS)
        bucket.last = now
        self._buckets.put(key, bucket)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True


def _observation(event: Object) -> _Observation:
    return _Observation(
        count=event.get("count") or 0,
        first_timestamp=sys.intern(event.get("firstTimestamp") or ""),
        stamp=int(event["metadata"]["name"].rpartition(".")[2], 16),
    )
