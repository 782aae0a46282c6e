"""Watch streams as kube-apiserver sends them.

A watch without a resourceVersion (or with "0") starts with an ADDED event for every existing
object, then follows live changes; one from resourceVersion N delivers every change after N.
`sendInitialEvents` decides the initial events when given: false starts from N, or from now
(cacher.go's getAllEventsSinceLocked).
An object that stops matching the watch's selectors is reported as DELETED (its last matching
state, at the revision of the change), one that starts matching as ADDED.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import ListOptions, parse_resource_version
from pinnace.apiserver.filters import Filter
from pinnace.apiserver.keys import list_prefix
from pinnace.store import (
    CompactedError,
    Store,
    Watch,
    WatchClosedError,
    WatchEvent,
    WatchWoken,
)

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


BATCH = 256
"""Events a watch hands over at most at once: a burst of changes goes to the client in few
writes, without one watch holding the event loop for long."""


class _Progress:
    """How far a watch's store stream has delivered, once it has one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.stream: Watch | None = None

    def revision(self) -> int | None:
        stream = self.stream
        return self.store.revision if stream is not None and stream.caught_up() else None


class WatchEvents:
    """A watch's events: one at a time (`async for`), or as `batches()` of those already at
    hand, which the HTTP stream writes at once."""

    def __init__(
        self, batches: AsyncGenerator[list[Object], None], progress: _Progress | None = None
    ) -> None:
        self._batches = batches
        self._pending: deque[Object] = deque()
        self._progress = progress

    def bookmark_revision(self) -> int | None:
        """The revision a BOOKMARK may carry now: every event up to it that this watch is to
        send has been taken from it. None while some are still on their way, and for events
        not from a store's watch (no `progress`)."""
        if self._pending or self._progress is None:
            return None
        return self._progress.revision()

    def wake(self) -> bool:
        """Have `batches()` yield an empty batch as soon as it has no event at hand: a
        consumer's own time has come (a bookmark is due). False while there is no store
        watch to wake (the initial events are still being listed, or the events are not from
        a store's watch)."""
        stream = None if self._progress is None else self._progress.stream
        return stream is not None and stream.wake()

    def __aiter__(self) -> WatchEvents:
        return self

    async def __anext__(self) -> Object:
        while not self._pending:
            self._pending.extend(await anext(self._batches))
        return self._pending.popleft()

    def batches(self) -> AsyncIterator[list[Object]]:
        if not self._pending:
            return self._batches
        return self._after_pending()

    async def _after_pending(self) -> AsyncIterator[list[Object]]:
        yield list(self._pending)
        self._pending.clear()
        async for batch in self._batches:
            yield batch

    async def aclose(self) -> None:
        await self._batches.aclose()


def batches(events: AsyncIterator[Object]) -> AsyncIterator[list[Object]]:
    """The events in batches: those of a `WatchEvents` as it has them at hand, any others one
    at a time."""
    return events.batches() if isinstance(events, WatchEvents) else _one_by_one(events)


async def _one_by_one(events: AsyncIterator[Object]) -> AsyncIterator[list[Object]]:
    async for event in events:
        yield [event]


def watch_events(
    server: APIServer, kind: Kind, namespace: str, options: ListOptions, selected: Filter
) -> WatchEvents:
    progress = _Progress(server.store)
    return WatchEvents(
        _watch_batches(server, kind, namespace, options, selected, progress), progress
    )


async def _watch_batches(
    server: APIServer,
    kind: Kind,
    namespace: str,
    options: ListOptions,
    selected: Filter,
    progress: _Progress,
) -> AsyncGenerator[list[Object], None]:
    prefix = list_prefix(kind, namespace)
    initial = options.send_initial_events
    if initial is None:
        # Without sendInitialEvents, kept for old clients: "" and "0" start with the state.
        initial = options.resource_version in ("", "0")
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
        items = listed["items"]
        for i in range(0, len(items), BATCH):
            yield [{"type": "ADDED", "object": item} for item in items[i : i + BATCH]]
        if options.send_initial_events and options.allow_watch_bookmarks:
            yield [bookmark(kind, start, {INITIAL_EVENTS_END_ANNOTATION: "true"})]
    else:
        start = parse_resource_version(options.resource_version)
    # Changes the filter leaves out neither wake this watch nor fill its buffer.
    translate: Callable[[WatchEvent], Object | None]
    if selected.everything:
        wanted, translate = None, _as_is
    else:
        translated = _Translated(selected)
        wanted, translate = translated.wanted, translated.out
    try:
        stream = server.store.watch(prefix, start, wanted)
    except CompactedError as e:
        yield [_expired(e)]
        return
    progress.stream = stream
    try:
        while True:
            try:
                event = await anext(stream)
            except WatchWoken:
                yield []  # the consumer's own time (`WatchEvents.wake`)
                continue
            except StopAsyncIteration:
                return
            batch = []
            for change in (event, *stream.ready(BATCH - 1)):
                out = translate(change)
                if out is not None:
                    batch.append(out)
            if batch:
                yield batch
    except CompactedError as e:
        yield [_expired(e)]
    except WatchClosedError:
        return  # the watcher fell behind; the client re-lists and watches again
    finally:
        stream.close()


class _Translated:
    """A selective watch's changes as it sends them (`_translate`), each worked out once: a
    live change when the store offers it (`wanted`), kept until the watch sends it; one the
    watch replays from the store's history when it sends it."""

    def __init__(self, selected: Filter) -> None:
        self._selected = selected
        self._offered: dict[int, Object] = {}
        """By revision, the live changes the watch took and has not sent yet."""

    def wanted(self, change: WatchEvent) -> bool:
        out = _translate(change, self._selected)
        if out is None:
            return False
        self._offered[change.revision] = out
        return True

    def out(self, change: WatchEvent) -> Object | None:
        out = self._offered.pop(change.revision, None)
        return _translate(change, self._selected) if out is None else out


def _as_is(event: WatchEvent) -> Object:
    return {"type": event.type, "object": event.object}


def _translate(event: WatchEvent, selected: Filter) -> Object | None:
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


def bookmark(kind: Kind, revision: int, annotations: dict[str, str] | None = None) -> Object:
    """A BOOKMARK event of `kind` at `revision`."""
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
