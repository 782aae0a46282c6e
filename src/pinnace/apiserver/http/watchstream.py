"""A watch as an HTTP stream: one JSON `{"type": ..., "object": ...}` per line, each object
in the representation the client negotiated (a one-row Table for `kubectl get -w`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson

from pinnace.api.status import StatusError
from pinnace.apiserver.http.negotiation import Output
from pinnace.apiserver.http.responses import Encoder
from pinnace.apiserver.objects import Object

OBJECT_EVENTS = ("ADDED", "MODIFIED", "DELETED")


async def watch_stream(events: AsyncIterator[Object], encoder: Encoder) -> AsyncIterator[bytes]:
    """The encoded events; a failure once the stream has begun ends it with an ERROR event
    carrying the Status, as kube-apiserver reports errors inside a watch."""
    first = True
    try:
        async for event in events:
            obj = event["object"]
            if event["type"] in OBJECT_EVENTS:
                obj = encoder.convert_object(obj, no_headers=not first)
                first = False
            elif encoder.negotiated.output is Output.PARTIAL and event["type"] == "BOOKMARK":
                obj = encoder.convert_object(obj)
            yield orjson.dumps({"type": event["type"], "object": obj}) + b"\n"
    except StatusError as e:
        yield orjson.dumps({"type": "ERROR", "object": e.status()}) + b"\n"
