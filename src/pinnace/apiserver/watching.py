"""Watch streams as kube-apiserver sends them.

A watch without a resourceVersion (or with "0") starts with an ADDED event for every existing
object, then follows live changes; one from resourceVersion N delivers every change after N.
An object that stops matching the watch's selectors is reported as DELETED (its last matching
state, at the revision of the change), one that starts matching as ADDED.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from pinnace.api.kind import Kind
from pinnace.apiserver.filters import Filter
from pinnace.apiserver.keys import list_prefix
from pinnace.apiserver.objects import Object
from pinnace.apiserver.options import ListOptions, parse_resource_version
from pinnace.store import CompactedError, WatchClosedError, WatchEvent

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


async def watch_events(
    server: APIServer, kind: Kind, namespace: str, options: ListOptions, selected: Filter
) -> AsyncIterator[Object]:
    prefix = list_prefix(kind, namespace)
    initial = options.resource_version in ("", "0") or bool(options.send_initial_events)
    if initial:
        listed = await server.list(
            kind,
            namespace,
            ListOptions(
                label_selector=options.label_selector,
                field_selector=options.field_selector,
                resource_version=(options.resource_version if options.send_initial_events else ""),
            ),
        )
        start = int(listed["metadata"]["resourceVersion"])
        for item in listed["items"]:
            yield {"type": "ADDED", "object": item}
        if options.send_initial_events and options.allow_watch_bookmarks:
            yield _bookmark(kind, start, {INITIAL_EVENTS_END_ANNOTATION: "true"})
    else:
        start = parse_resource_version(options.resource_version)
    try:
        stream = server.store.watch(prefix, start)
    except CompactedError as e:
        yield _expired(e)
        return
    try:
        async for event in stream:
            out = _translate(event, selected)
            if out is not None:
                yield out
    except CompactedError as e:
        yield _expired(e)
    except WatchClosedError:
        return  # the watcher fell behind; the client re-lists and watches again
    finally:
        stream.close()


def _translate(event: WatchEvent, selected: Filter) -> Object | None:
    if selected.everything:
        return {"type": event.type, "object": event.object}
    now = event.type != "DELETED" and selected.matches(event.object)
    before = event.prev_object is not None and selected.matches(event.prev_object)
    if event.type == "DELETED":
        return {"type": "DELETED", "object": event.object} if before else None
    if now and before:
        return {"type": "MODIFIED", "object": event.object}
    if now:
        return {"type": "ADDED", "object": event.object}
    if before:
        assert event.prev_object is not None
        gone = dict(event.prev_object)
        gone["metadata"] = {
            **event.prev_object.get("metadata", {}),
            "resourceVersion": str(event.revision),
        }
        return {"type": "DELETED", "object": gone}
    return None


def _bookmark(kind: Kind, revision: int, annotations: dict[str, str]) -> Object:
    metadata: dict[str, Any] = {"resourceVersion": str(revision)}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "type": "BOOKMARK",
        "object": {"kind": kind.kind, "apiVersion": kind.api_version, "metadata": metadata},
    }


def _expired(e: CompactedError) -> Object:
    return {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"too old resource version: {e.requested} ({e.compacted})",
            "reason": "Expired",
            "code": 410,
        },
    }
