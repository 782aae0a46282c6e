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
from pinnace.client.events import NameStamps, create_named, name_stamps, object_reference
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


class _Cached:
    """An Event as first recorded (with its series, once repeated) and when it was last seen
    (seconds since the epoch: what the finish pass compares, at the clock's precision)."""

    __slots__ = ("event", "seen")

    def __init__(self, event: Object, seen: float) -> None:
        self.event = event
        self.seen = seen


class EventBroadcaster:
    """Writes Events through events.k8s.io/v1 for the recorders `new_recorder` makes; `run()`
    is the task of its series passes, started with the component that records."""

    def __init__(self, client: Client, hostname: str) -> None:
        self._client = client
        self.clock = self._clock = client.clock
        self._hostname = hostname
        self._stamps = name_stamps(client.clock)
        self._cache: dict[EventKey, _Cached] = {}
        self._series = 0
        """How many cached Events are series."""
        self._queue: deque[tuple[Object, Object | None]] = deque()
        """The cached Events to write, each with its series then (None: the Event itself)."""
        self._writer: asyncio.Task[None] | None = None
        self._finish = Periodic(self._clock, FINISH_TIME, self._finish_series)
        self._refresh = Periodic(self._clock, REFRESH_TIME, self._refresh_series)

    def new_recorder(self, reporting_controller: str) -> Recorder:
        """A recorder reporting as `reporting_controller` on this host."""
        instance = f"{reporting_controller}-{self._hostname}"
        return Recorder(self, self._stamps, reporting_controller, instance)

    async def run(self) -> None:
        """The refresh and finish passes, until cancelled."""
        await asyncio.gather(self._refresh.run(), self._finish.run())

    async def flush(self) -> None:
        """Wait until every write begun so far is done (or dropped)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    def record(self, event: Object, now: float) -> None:
        """recordToSink: write `event` (new at `now`), or count it in the series of the
        isomorphic Event recorded before."""
        key = _event_key(event)
        cached = self._cache.get(key)
        if cached is None:
            if not self._cache:
                self._finish.wake()
            self._cache[key] = _Cached(event, now)
            self._write(event, None)
            return
        cached.seen = now
        observed = format_micro_time(now)
        series = cached.event.get("series")
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = observed
            return
        cached.event["series"] = {"count": 2, "lastObservedTime": observed}
        self._series += 1
        if self._series == 1:
            self._refresh.wake()
        self._write(cached.event, cached.event["series"])

    # --- the passes --------------------------------------------------------------------------

    async def _refresh_series(self) -> float | None:
        """refreshExistingEventSeries: write every series' count again."""
        for cached in self._cache.values():
            if "series" in cached.event:
                self._write(cached.event, cached.event["series"])
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
            if "series" in cached.event:
                self._write(cached.event, cached.event["series"])
                self._series -= 1
            del self._cache[key]
        return due

    # --- writing -----------------------------------------------------------------------------

    def _write(self, event: Object, series: Object | None) -> None:
        """Queue a write of the cached `event`: its creation, or its `series` as it is now
        (the cached one counts on)."""
        self._queue.append((event, None if series is None else dict(series)))
        if self._writer is None or self._writer.done():
            self._writer = self._clock.loop.create_task(self._write_all())

    async def _write_all(self) -> None:
        while self._queue:
            event, series = self._queue.popleft()
            name = event["metadata"]["name"]
            try:
                await self._record_event(event, series)
            except StatusError as e:
                log.log(
                    logging.DEBUG if e.reason == "AlreadyExists" else logging.ERROR,
                    "server rejected event %s (will not retry): %s",
                    name,
                    e.message,
                )
            except Exception as e:  # e.g. the store closing under a server that stops
                log.error("unable to write event %s: %s: %s", name, type(e).__name__, e)

    async def _record_event(self, event: Object, series: Object | None) -> None:
        """recordEvent: a new Event is created (under the next free name, which the cached
        one takes); a series is patched, and created again when gone (and patched again when
        that finds it back)."""
        body = {k: v for k, v in event.items() if k != "series"}
        body["metadata"] = dict(event["metadata"])
        if series is None:
            await create_named(self._client, EVENT_V1, body, self._stamps)
            event["metadata"]["name"] = body["metadata"]["name"]
            return
        body["series"] = series
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            try:
                await self._client.patch(
                    EVENT_V1, namespace, name, {"series": series}, PatchType.STRATEGIC_MERGE
                )
                return
            except StatusError as e:
                if e.code != 404:
                    raise
            try:
                await self._client.create(EVENT_V1, namespace, body)
                return
            except StatusError as e:
                if e.reason != "AlreadyExists" or tries == MAX_TRIES_PER_EVENT:
                    raise


class Recorder:
    """client-go's events.EventRecorder: `eventf` records an Event about `regarding`."""

    def __init__(
        self,
        broadcaster: EventBroadcaster,
        stamps: NameStamps,
        reporting_controller: str,
        reporting_instance: str,
    ) -> None:
        self._broadcaster = broadcaster
        self._clock = broadcaster.clock
        self._stamps = stamps
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
        reference = object_reference(regarding)
        namespace, name = reference.get("namespace") or "default", reference.get("name", "")
        nanos = self._stamps.give(namespace, name, round(now * 1e9))
        event: Object = {
            "apiVersion": API_VERSION,
            "kind": "Event",
            "metadata": {"name": f"{name}.{nanos:x}", "namespace": namespace},
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": reference,
            "note": note,
            "type": event_type,
        }
        if related is not None:
            event["related"] = object_reference(related)
        self._broadcaster.record(event, now)


def _reference(reference: Mapping[str, Any] | None) -> Reference:
    if not reference:
        return _NO_REFERENCE
    get = reference.get
    return (
        get("kind", ""),
        get("namespace", ""),
        get("name", ""),
        get("uid", ""),
        get("apiVersion", ""),
        get("resourceVersion", ""),
        get("fieldPath", ""),
    )


def _event_key(event: Object) -> EventKey:
    return (
        event["type"],
        event["action"],
        event["reason"],
        event["reportingController"],
        event["reportingInstance"],
        _reference(event["regarding"]),
        _reference(event.get("related")),
    )
