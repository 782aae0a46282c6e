"""A watch as an HTTP stream: one JSON `{"type": ..., "object": ...}` per line, each object
in the representation the client negotiated (a one-row Table for `kubectl get -w`).

A change reaches every watch of its kind, so the line of an event sent as JSON is made once
(the object at the version served, then encoded) and shared by every watch of that kind and
version; events already at hand go out as one chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.apiserver.http.negotiation import Output
from pinnace.apiserver.http.responses import Encoder, encode_json
from pinnace.apiserver.watching import WatchEvents, batches, bookmark

OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")
BOOKMARK_FREQUENCY = 60.0
"""Seconds between a watch's bookmarks (the cacher's bookmarkFrequency)."""
BOOKMARK_BEFORE_TIMEOUT = 2.0
"""How long before its timeout a watch gets its last bookmark."""
BOOKMARK_RETRY = 1.0
"""How soon a bookmark due while events were on their way is tried again (the cacher
dispatches bookmarks once a second)."""
SHARED_LINES = 1024
"""Encoded events kept for other watches: enough for every watch of a burst of changes (each
entry also keeps its object alive)."""


class SharedLines:
    """Encoded event lines by (type, object identity, the kind and version served). Each entry
    holds its object, kind and version, so no identity can be reused while the entry lives;
    stored objects are read-only, so a line stays true to its object. Only for JSON, where
    what goes out depends on nothing else (a Table's rows depend on the time)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lines: dict[tuple[str, int, int, int], tuple[Object, Encoder, bytes]] = {}

    def line(self, event_type: str, obj: Object, encoder: Encoder) -> bytes:
        key = (event_type, id(obj), id(encoder.kind), id(encoder.conversion))
        entry = self._lines.get(key)
        if (
            entry is not None
            and entry[0] is obj
            and entry[1].kind is encoder.kind
            and entry[1].conversion is encoder.conversion
        ):
            return entry[2]
        line = _line(event_type, encoder.convert_object(obj))
        lines = self._lines
        lines[key] = (obj, encoder, line)
        if len(lines) > self._size:
            del lines[next(iter(lines))]
        return line


_shared = SharedLines(SHARED_LINES)


async def watch_stream(
    events: AsyncIterator[Object], encoder: Encoder, bookmarks_for: float | None = None
) -> AsyncIterator[bytes]:
    """The encoded events, in chunks of whole lines; a failure once the stream has begun ends
    it with an ERROR event carrying the Status, as kube-apiserver reports errors inside a
    watch. `bookmarks_for`: the watch asked for bookmarks and lasts this many seconds."""
    first = True
    output = encoder.negotiated.output
    partial, shared = output is Output.PARTIAL, output is Output.JSON
    chunk: list[bytes] = []
    source = batches(events)
    if bookmarks_for is not None and isinstance(events, WatchEvents):
        source = _with_bookmarks(source, events, encoder.kind, bookmarks_for)
    try:
        async for batch in source:
            for event in batch:
                event_type = event["type"]
                obj = event["object"]
                if event_type in OBJECT_EVENTS:
                    if shared:
                        chunk.append(_shared.line(event_type, obj, encoder))
                        continue
                    obj = encoder.convert_object(obj, no_headers=not first)
                    first = False
                elif partial and event_type == "BOOKMARK":
                    obj = encoder.convert_object(obj)
                chunk.append(_line(event_type, obj))
            yield b"".join(chunk)
            chunk.clear()
    except StatusError as e:
        chunk.append(_line("ERROR", e.status()))
        yield b"".join(chunk)


async def _with_bookmarks(
    source: AsyncIterator[list[Object]], events: WatchEvents, kind: Kind, lasts: float
) -> AsyncIterator[list[Object]]:
    """`source`'s batches, and between them the BOOKMARKs kube-apiserver's cacher sends a
    watch that asked for them: one a minute, and one 2 s before the watch times out, at the
    revision the watch has caught up with (cacheWatcher.nextBookmarkTime).

    A timer wakes the watch when a bookmark is due (`WatchEvents.wake`), which then hands over
    an empty batch: waiting for events costs nothing more than without bookmarks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + lasts
    timer: asyncio.TimerHandle | None = None

    def ring() -> None:
        if not events.wake():  # no store watch yet: its initial events are being listed
            arm(loop.time() + BOOKMARK_RETRY)

    def arm(when: float | None) -> None:
        nonlocal timer
        if timer is not None:
            timer.cancel()
        timer = None if when is None or when >= deadline else loop.call_at(when, ring)

    try:
        arm(_next_bookmark(loop.time(), deadline))
        async for batch in source:
            if batch:
                yield batch
                continue
            revision = events.bookmark_revision()
            now = loop.time()
            if revision is None:  # events on their way: once they are out
                arm(now + BOOKMARK_RETRY)
                continue
            yield [bookmark(kind, revision)]
            arm(_next_bookmark(now, deadline))
    finally:
        arm(None)


def _next_bookmark(now: float, deadline: float) -> float | None:
    due = min(now + BOOKMARK_FREQUENCY, deadline - BOOKMARK_BEFORE_TIMEOUT)
    return due if due > now else None


def _line(event_type: str, obj: Object) -> bytes:
    return encode_json({"type": event_type, "object": obj})
