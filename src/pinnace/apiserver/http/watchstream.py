"""A watch as an HTTP stream: one JSON `{"type": ..., "object": ...}` per line, each object
in the representation the client negotiated (a one-row Table for `kubectl get -w`).

A change reaches every watch of its kind, so the line of an event whose object goes out as
stored is encoded once and shared by all of them; events already at hand go out as one chunk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.apiserver.http.negotiation import Output
from pinnace.apiserver.http.responses import Encoder, encode_json
from pinnace.apiserver.watching import batches

OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")
SHARED_LINES = 1024
"""Encoded events kept for other watches: enough for every watch of a burst of changes (each
entry also keeps its object alive)."""


class SharedLines:
    """Encoded event lines by (type, object identity). Each entry holds its object, so the
    identity cannot be reused while the entry lives; stored objects are read-only, so a line
    stays true to its object."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._lines: dict[tuple[str, int], tuple[Object, bytes]] = {}

    def line(self, event_type: str, obj: Object) -> bytes:
        key = (event_type, id(obj))
        entry = self._lines.get(key)
        if entry is not None and entry[0] is obj:
            return entry[1]
        line = _line(event_type, obj)
        lines = self._lines
        lines[key] = (obj, line)
        if len(lines) > self._size:
            del lines[next(iter(lines))]
        return line


_shared = SharedLines(SHARED_LINES)


async def watch_stream(events: AsyncIterator[Object], encoder: Encoder) -> AsyncIterator[bytes]:
    """The encoded events, in chunks of whole lines; a failure once the stream has begun ends
    it with an ERROR event carrying the Status, as kube-apiserver reports errors inside a
    watch."""
    first = True
    partial = encoder.negotiated.output is Output.PARTIAL
    chunk: list[bytes] = []
    try:
        async for batch in batches(events):
            for event in batch:
                event_type = event["type"]
                obj = event["object"]
                if event_type in OBJECT_EVENTS:
                    converted = encoder.convert_object(obj, no_headers=not first)
                    first = False
                    if converted is obj:
                        chunk.append(_shared.line(event_type, obj))
                        continue
                    obj = converted
                elif partial and event_type == "BOOKMARK":
                    obj = encoder.convert_object(obj)
                chunk.append(_line(event_type, obj))
            yield b"".join(chunk)
            chunk.clear()
    except StatusError as e:
        chunk.append(_line("ERROR", e.status()))
        yield b"".join(chunk)


def _line(event_type: str, obj: Object) -> bytes:
    return encode_json({"type": event_type, "object": obj})
