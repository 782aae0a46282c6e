"""Recording core/v1 Events, as client-go's record.EventRecorder writes them: what
`kubectl get events` and `kubectl describe` show.

`event()` never blocks and never fails: events are written in order by a task of the recorder's
own, after the correlator's counting, aggregation and spam filtering. A write that fails is
logged and dropped (client-go drops what the server refuses, and retries a transport failure
a few times first).

One deliberate difference: client-go names an Event `<object>.<nanoseconds, hex>` and drops
the second of two events about one object created in the same nanosecond (AlreadyExists).
On a virtual clock many things happen in the same instant, so the recorder moves the name on
by a nanosecond instead; the recorders of one cluster (one clock) share the stamps they gave,
so that a kubelet's event seldom needs a second try after the scheduler's about the same pod.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, without_empty
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError, namespace_terminating
from pinnace.client.correlator import EventCorrelator
from pinnace.client.interface import Client, PatchType
from pinnace.clock import Clock, format_time

log = logging.getLogger(__name__)
T = TypeVar("T")

NAME_ATTEMPTS = 8
_EVENTS = catalog.kind("", "events")


def object_reference(obj: Mapping[str, Any], field_path: str = "") -> Object:
    """The ObjectReference an Event's involvedObject holds (client-go's GetReference)."""
    m = obj.get("metadata") or {}
    reference: Object = {}
    if kind := obj.get("kind"):
        reference["kind"] = shared(kind)
    if namespace := m.get("namespace"):
        reference["namespace"] = shared(namespace)
    if name := m.get("name"):
        reference["name"] = name
    if uid := m.get("uid"):
        reference["uid"] = uid
    if api_version := obj.get("apiVersion"):
        reference["apiVersion"] = shared(api_version)
    if resource_version := m.get("resourceVersion"):
        reference["resourceVersion"] = resource_version
    if field_path:
        reference["fieldPath"] = field_path
    return reference


def shared(text: str) -> str:
    """Most messages, field paths, kinds and namespaces recur across objects ("Started
    container app", "spec.containers{app}"): interned, the correlator's caches hold one string
    each instead of one per event."""
    return sys.intern(text) if type(text) is str else text


class NameStamps:
    """The last name stamp (nanoseconds) given per object by the recorders of one clock (one
    cluster), so that events about one object in the same instant, from the scheduler and a
    kubelet alike, get distinct names without a failed create each. They are forgotten once
    the clock is past the latest of them: an earlier stamp cannot collide any more. (Stamps
    moved on past a collision may reach beyond the next instant.)"""

    __slots__ = ("_base", "_last", "_latest")

    def __init__(self) -> None:
        # namespace -> name -> the last stamp given less _base: mostly small numbers, which
        # Python does not allocate, and no key tuple per object, so forgetting them frees
        # little (in a fork sharing the cluster's memory, freeing an object copies its page).
        self._last: dict[str, dict[str, int]] = {}
        self._latest = 0
        self._base = 0

    def give(self, namespace: str, name: str, nanos: int) -> int:
        """A stamp for an event about `name` now (`nanos`): `nanos`, or past the last given."""
        if nanos > self._latest:
            self._last.clear()  # every stamp given is past: none can collide
            self._base = nanos
        names = self._last.setdefault(namespace, {})
        last = names.get(name)
        if last is not None and nanos <= last + self._base:
            nanos = last + self._base + 1
        names[name] = nanos - self._base
        self._latest = max(self._latest, nanos)
        return nanos

    def taken(self, namespace: str, name: str, nanos: int) -> None:
        """`nanos` names an event about `name` after all (moved on after a collision)."""
        names = self._last.setdefault(namespace, {})
        last = names.get(name)
        if last is None or nanos > last + self._base:
            names[name] = nanos - self._base
        self._latest = max(self._latest, nanos)


_STAMPS: weakref.WeakKeyDictionary[Clock, NameStamps] = weakref.WeakKeyDictionary()


def name_stamps(clock: Clock) -> NameStamps:
    """The name stamps of the recorders on `clock` (of one cluster), core/v1 and
    events.k8s.io/v1 alike."""
    stamps = _STAMPS.get(clock)
    if stamps is None:
        stamps = _STAMPS[clock] = NameStamps()
    return stamps


async def create_named(
    create: Callable[[Kind, str, Object], Awaitable[T]],
    kind: Kind,
    event: Object,
    stamps: NameStamps,
) -> T:
    """Create a new `event`, built in the form decoding gives, with `create` (a client's
    `create_own` or `record_own`), its name moved on by a nanosecond while the name is taken
    (AlreadyExists), at most NAME_ATTEMPTS times."""
    m = event["metadata"]
    attempts = 1
    while True:
        try:
            return await create(kind, m["namespace"], event)
        except StatusError as e:
            if e.reason != "AlreadyExists" or attempts == NAME_ATTEMPTS:
                raise
        base, _, stamp = m["name"].rpartition(".")
        nanos, attempts = int(stamp, 16) + 1, attempts + 1
        stamps.taken(m["namespace"], base, nanos)
        m["name"] = f"{base}.{nanos:x}"


class EventRecorder:
    """Events from one source: `component` (e.g. "default-scheduler", "kubelet") on `host`."""

    def __init__(self, client: Client, component: str, host: str = "") -> None:
        self._client = client
        self._clock = client.clock
        self._component = component
        self._host = host
        self._correlator = EventCorrelator(client.clock)
        self._queue: deque[Object] = deque()
        self._writer: asyncio.Task[None] | None = None
        self._stamps = name_stamps(client.clock)

    def event(
        self,
        obj: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        field_path: str = "",
    ) -> None:
        """Record that `reason` happened to `obj`: event_type is "Normal" or "Warning"."""
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            log.error("unsupported event type %r; event %s dropped", event_type, reason)
            return
        involved = object_reference(obj, shared(field_path))
        self._queue.append(self._make(involved, event_type, reason, shared(message)))
        if self._writer is None or self._writer.done():
            self._writer = self._clock.loop.create_task(self._write_all())

    async def flush(self) -> None:
        """Wait until every event recorded so far is written (or dropped)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    def _make(self, involved: Object, event_type: str, reason: str, message: str) -> Object:
        now = self._clock.now()  # one reading: the name's stamp and the timestamps agree
        namespace, name = involved.get("namespace") or "default", involved.get("name", "")
        nanos = self._stamps.give(namespace, name, round(now * 1e9))
        stamp = format_time(now)
        source = {"component": self._component}
        if self._host:
            source["host"] = self._host
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            # `<object name>.<nanoseconds, hex>`, as client-go names Events.
            "metadata": {"name": f"{name}.{nanos:x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event_type,
            "source": source,
            "reportingComponent": self._component,
            "reportingInstance": self._host,
        }
        return without_empty(event)  # as decoded: created with `create_own`

    async def _write_all(self) -> None:
        while self._queue:
            event = self._queue.popleft()
            correlated = self._correlator.correlate(event)
            if correlated is None:
                continue
            try:
                written = await self._write(correlated.event, correlated.patch)
            except StatusError as e:
                # client-go logs at V(5) what it expects: a name taken, or a namespace that
                # is going away and its events with it.
                expected = e.code == 409 or namespace_terminating(e)
                log.log(
                    logging.DEBUG if expected else logging.ERROR,
                    "server rejected event %s (will not retry): %s",
                    event["metadata"]["name"],
                    e.message,
                )
                continue
            except Exception as e:  # e.g. the store closing under a server that stops
                # One line, as client-go logs it: an event lost is not worth a traceback.
                log.error(
                    "unable to write event %s: %s: %s",
                    event["metadata"]["name"],
                    type(e).__name__,
                    e,
                )
                continue
            self._correlator.written(written, correlated)

    async def _write(self, event: Object, patch: Object | None) -> Object:
        m = event["metadata"]
        if patch is not None:
            try:
                return await self._client.patch(
                    _EVENTS, m["namespace"], m["name"], patch, PatchType.STRATEGIC_MERGE
                )
            except StatusError as e:
                if e.code != 404:
                    raise
            # gone meanwhile: create it again
            return await self._client.create(_EVENTS, m["namespace"], event)
        return await create_named(self._client.create_own, _EVENTS, event, self._stamps)
