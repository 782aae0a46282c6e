"""Recording Events through events.k8s.io/v1, as client-go's tools/events library does
(event_broadcaster.go, event_recorder.go): what v1.32's kube-scheduler records with.

An `EventBroadcaster` writes the Events of its `Recorder`s (one per reporting controller, as
kube-scheduler has one per profile). An Event carries `eventTime`, `reportingController`,
`reportingInstance` (`<controller>-<hostname>`), `action`, `reason`, `note`, `regarding`, the
optional `related` and `type`; none of core/v1's `source`, `firstTimestamp`, `lastTimestamp`
or `count`.

Repeats are kept apart from the core recorder's correlator: an Event is isomorphic to an
earlier one when type, action, reason, reporting controller and instance, `regarding` and
`related` (each whole, resourceVersion included) are the same; the note is not compared, and
the first one's is kept. The first repeat turns the Event into a series, written at once as a
patch of the Event (`series: {count: 2, lastObservedTime}`); later repeats only count in
memory. Every REFRESH_TIME (30 min) each series is written again with its count; every
FINISH_TIME (6 min) a series not seen for FINISH_TIME is written a last time and forgotten, and
so is an Event that never repeated (a repeat after that is a new Event). Both passes run on
the clock from the broadcaster's start, `wait.Until`'s grid, skipped while they have nothing
to do (`Periodic`).

Writes go in order through one task, as with the core recorder: a patch of a series whose
Event is gone creates it again, a create that finds it back (AlreadyExists) patches again; a
server's refusal or a transport failure is logged and the write dropped (client-go retries
the latter every 10 s, up to 12 times). A new Event's name is the core recorder's
(`<regarding name>.<nanoseconds, hex>`, moved on a nanosecond when taken: docs/differences.md).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Mapping
from typing import Any

from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.events import API_VERSION, EVENT_V1
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client.events import create_named, name_stamps, shared
from pinnace.client.interface import Client, PatchType
from pinnace.clock import format_micro_time
from pinnace.clock.periodic import Periodic

log = logging.getLogger(__name__)

DEFAULT_HOSTNAME = "pinnace"
"""The host a broadcaster reports from unless told the machine's (os.Hostname, which `pinnace
up` and `pinnace scheduler` give): a simulation's Events are then the same on every machine."""
FINISH_TIME = 6 * 60.0
REFRESH_TIME = 30 * 60.0
MAX_TRIES_PER_EVENT = 12

Reference = tuple[str, str, str, str, str, str, str]
"""An ObjectReference's fields, in Go's order."""
EventKey = tuple[str, str, str, str, str, Reference, Reference]
"""client-go's eventKey: type, action, reason, reportingController, reportingInstance,
regarding, related."""

_NO_REFERENCE: Reference = ("",) * 7
_REFERENCE_FIELDS = (
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
)


class _Cached:
    """What the broadcaster keeps of an Event recorded (its key holds the rest): its name's
    stamp, when it was first recorded and its note, and its series: how many times it was
    seen (1: no series yet) and when last (seconds since the epoch, at the clock's precision:
    what the finish pass compares). A scheduler keeps one per pod it placed in the last minutes,
    so no dict of the Event."""

    __slots__ = ("count", "first", "note", "seen", "stamp")

    def __init__(self, stamp: int, first: float, note: str) -> None:
        self.stamp = stamp
        self.first = first
        self.note = note
        self.seen = first
        self.count = 1


Series = tuple[int, float]
"""A series as written: count and lastObservedTime (seconds since the epoch)."""


class EventBroadcaster:
    """Writes Events through events.k8s.io/v1 for the recorders `new_recorder` makes; `run()`
    is the task of its series passes, started with the component that records."""

    def __init__(self, client: Client, hostname: str) -> None:
        self._client = client
        self.clock = self._clock = client.clock
        self._hostname = hostname
        self.stamps = name_stamps(client.clock)
        self._cache: dict[EventKey, _Cached] = {}
        self._series = 0
        """How many cached Events are series."""
        self._queue: deque[tuple[EventKey, _Cached, Series | None]] = deque()
        """The cached Events to write, each with its series then (None: the Event itself)."""
        self._writer: asyncio.Task[None] | None = None
        self._finish = Periodic(self._clock, FINISH_TIME, self._finish_series)
        self._refresh = Periodic(self._clock, REFRESH_TIME, self._refresh_series)

    def new_recorder(self, reporting_controller: str) -> Recorder:
        """A recorder reporting as `reporting_controller` on this host."""
        return Recorder(self, reporting_controller, f"{reporting_controller}-{self._hostname}")

    async def run(self) -> None:
        """The refresh and finish passes, until cancelled."""
        await asyncio.gather(self._refresh.run(), self._finish.run())

    async def flush(self) -> None:
        """Wait until every write begun so far is done (or dropped)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    def record(self, key: EventKey, stamp: int, now: float, note: str) -> None:
        """recordToSink: write the Event of `key` (new at `now`, its name's `stamp`), or count
        it in the series of the isomorphic Event recorded before."""
        cached = self._cache.get(key)
        if cached is None:
            if not self._cache:
                self._finish.wake()
            cached = self._cache[key] = _Cached(stamp, now, note)
            self._write(key, cached, None)
            return
        cached.seen = now
        cached.count += 1
        if cached.count > 2:
            return
        self._series += 1
        if self._series == 1:
            self._refresh.wake()
        self._write(key, cached, (2, now))

    # --- the passes --------------------------------------------------------------------------

    async def _refresh_series(self) -> float | None:
        """refreshExistingEventSeries: write every series' count again."""
        for key, cached in self._cache.items():
            if cached.count > 1:
                self._write(key, cached, (cached.count, cached.seen))
        return math.inf if self._series == 0 else None

    async def _finish_series(self) -> float:
        """finishSeries: write a series not seen for FINISH_TIME a last time; forget it, and
        an Event not repeated for as long. The answer: when the next one is due."""
        horizon = self._clock.now() - FINISH_TIME
        due = math.inf
        for key, cached in list(self._cache.items()):
            if cached.seen >= horizon:
                due = min(due, cached.seen + FINISH_TIME)
                continue
            if cached.count > 1:
                self._write(key, cached, (cached.count, cached.seen))
                self._series -= 1
            del self._cache[key]
        return due

    # --- writing -----------------------------------------------------------------------------

    def _write(self, key: EventKey, cached: _Cached, series: Series | None) -> None:
        """Queue a write of the cached Event: its creation, or its series as it is now."""
        self._queue.append((key, cached, series))
        if self._writer is None or self._writer.done():
            self._writer = self._clock.loop.create_task(self._write_all())

    async def _write_all(self) -> None:
        while self._queue:
            key, cached, series = self._queue.popleft()
            event = _event(key, cached, series)
            try:
                await self._record_event(event)
            except StatusError as e:
                log.log(
                    logging.DEBUG if e.reason == "AlreadyExists" else logging.ERROR,
                    "server rejected event %s (will not retry): %s",
                    event["metadata"]["name"],
                    e.message,
                )
                continue
            except Exception as e:  # e.g. the store closing under a server that stops
                name = event["metadata"]["name"]
                log.error("unable to write event %s: %s: %s", name, type(e).__name__, e)
                continue
            if series is None:  # the name it was created under, for the series' patches
                cached.stamp = int(event["metadata"]["name"].rpartition(".")[2], 16)

    async def _record_event(self, event: Object) -> None:
        """recordEvent: a new Event is created (under the next free name); a series is
        patched, and created again when gone (and patched again when that finds it back)."""
        if "series" not in event:
            await create_named(self._client.record_own, EVENT_V1, event, self.stamps)
            return
        namespace, name = event["metadata"]["namespace"], event["metadata"]["name"]
        patch = {"series": event["series"]}
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            try:
                await self._client.patch(
                    EVENT_V1, namespace, name, patch, PatchType.STRATEGIC_MERGE
                )
                return
            except StatusError as e:
                if e.code != 404:
                    raise
            try:
                await self._client.create(EVENT_V1, namespace, event)
                return
            except StatusError as e:
                if e.reason != "AlreadyExists" or tries == MAX_TRIES_PER_EVENT:
                    raise


class Recorder:
    """client-go's events.EventRecorder: `eventf` records an Event about `regarding`."""

    def __init__(
        self, broadcaster: EventBroadcaster, reporting_controller: str, reporting_instance: str
    ) -> None:
        self._broadcaster = broadcaster
        self._clock = broadcaster.clock
        self._stamps = broadcaster.stamps
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance

    def eventf(
        self,
        regarding: Mapping[str, Any],
        related: Mapping[str, Any] | None,
        event_type: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        """Record that `action` on `regarding` (with `related`, if any) had outcome `reason`;
        `event_type` is "Normal" or "Warning"."""
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            log.error("unsupported event type %r; event %s dropped", event_type, reason)
            return
        now = self._clock.now()  # one reading: the name's stamp and eventTime agree
        reference = _reference(regarding)
        stamp = self._stamps.give(reference[1] or "default", reference[2], round(now * 1e9))
        key = (
            event_type,
            action,
            reason,
            self.reporting_controller,
            self.reporting_instance,
            reference,
            _NO_REFERENCE if related is None else _reference(related),
        )
        self._broadcaster.record(key, stamp, now, note)


def _reference(obj: Mapping[str, Any]) -> Reference:
    """The fields of the ObjectReference to `obj` (`object_reference`'s, "" for those it leaves
    out), read off the object at once: the reference itself is only made for the write."""
    m = obj.get("metadata") or {}
    get = m.get
    reference = (
        shared(obj.get("kind") or ""),
        shared(get("namespace") or ""),
        get("name") or "",
        get("uid") or "",
        shared(obj.get("apiVersion") or ""),
        get("resourceVersion") or "",
        "",
    )
    return _NO_REFERENCE if reference == _NO_REFERENCE else reference


def _event(key: EventKey, cached: _Cached, series: Series | None) -> Object:
    """The Event of `key` as written: created (no series) or with `series`. As decoded
    (`create_named` creates it with `record_own`): core/v1's action, reason, message and type
    are left out when empty."""
    event_type, action, reason, controller, instance, regarding, related = key
    event: Object = {
        "apiVersion": API_VERSION,
        "kind": "Event",
        "metadata": {
            "name": f"{regarding[2]}.{cached.stamp:x}",
            "namespace": regarding[1] or "default",
        },
        "eventTime": format_micro_time(cached.first),
        "reportingController": controller,
        "reportingInstance": instance,
    }
    if action:
        event["action"] = action
    if reason:
        event["reason"] = reason
    event["regarding"] = _object_reference(regarding)
    if cached.note:
        event["note"] = cached.note
    if event_type:
        event["type"] = event_type
    if related is not _NO_REFERENCE:
        event["related"] = _object_reference(related)
    if series is not None:
        count, observed = series
        event["series"] = {"count": count, "lastObservedTime": format_micro_time(observed)}
    return event


def _object_reference(reference: Reference) -> Object:
    """An ObjectReference of its fields, the empty ones left out."""
    return {f: v for f, v in zip(_REFERENCE_FIELDS, reference, strict=True) if v}
