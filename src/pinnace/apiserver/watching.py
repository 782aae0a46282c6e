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
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import ListOptions, parse_resource_version
from pinnace.apiserver.filters import Filter
from pinnace.apiserver.keys import list_prefix
from pinnace.store import CompactedError, Store, Watch, WatchClosedError, WatchEvent

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

INITIAL_EVENTS_END_ANNOTATION = "k8s.io/initial-events-end"


BATCH = 256
"""Events a watch hands over at most at once: a burst of changes goes to the client in few
writes, without one watch holding the event loop for long."""


Follower = Callable[[list[Object] | None], None]
"""Handed each batch of a followed watch's events as they come, then None once it has ended."""


class _Progress:
    """How far a watch's store stream has delivered, once it has one."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.stream: Watch | None = None

    def revision(self) -> int | None:
        stream = self.stream
        return self.store.revision if stream is not None and stream.caught_up() else None


class WatchEvents:
    """A watch's events: one at a time (`async for`), as `batches()` of those already at hand,
    which the HTTP stream writes at once, or handed to a callback (`follow`)."""

    def __init__(
        self,
        batches: AsyncGenerator[list[Object], None],
        progress: _Progress,
        live: Callable[[], _Live] | None = None,
    ) -> None:
        self._batches = batches
        self._pending: deque[Object] = deque()
        self._progress = progress
        self._open_live = live
        self._following: _Live | None = None

    def bookmark_revision(self) -> int | None:
        """The revision a BOOKMARK may carry now: every event up to it that this watch is to
        send has been taken from it. None while some are still on their way."""
        return None if self._pending else self._progress.revision()

    def __aiter__(self) -> WatchEvents:
        return self

    async def __anext__(self) -> Object:
        self._open_live = None
        while not self._pending:
            self._pending.extend(await anext(self._batches))
        return self._pending.popleft()

    def batches(self) -> AsyncIterator[list[Object]]:
        self._open_live = None
        if not self._pending:
            return self._batches
        return self._after_pending()

    async def _after_pending(self) -> AsyncIterator[list[Object]]:
        yield list(self._pending)
        self._pending.clear()
        async for batch in self._batches:
            yield batch

    def follow(self, follower: Follower) -> bool:
        """Hand the events to `follower` as they come, from a callback of the event loop that
        serves every followed watch of the store at once (`Watch.follow`), rather than to an
        iterating task: for an in-process consumer that takes them without awaiting. Only a
        watch that starts from a resourceVersion without initial events, and has not been
        iterated, can be followed, and only if its start is still in the store's history;
        False otherwise (iterate it instead). `follower` must not raise."""
        open_live, self._open_live = self._open_live, None
        if open_live is None:
            return False
        try:
            live = open_live()
        except CompactedError:
            return False  # iterated, it hands over the 410 as an ERROR event
        self._following = live
        live.follow(follower)
        return True

    async def aclose(self) -> None:
        if self._following is not None:
            self._following.close()
        await self._batches.aclose()


class _Live:
    """A store watch's changes as the events of one watch's selection."""

    def __init__(self, stream: Watch, selected: Filter) -> None:
        self.stream = stream
        self._selected = selected
        self._ended = False

    def take(self) -> list[Object] | None:
        """The events at hand, maybe none; None once the watch has ended."""
        if self._ended:
            return None
        try:
            changes = self.stream.take(BATCH)
        except CompactedError as e:
            self.close()
            return [_expired(e)]
        except (WatchClosedError, StopAsyncIteration):
            self.close()  # fell behind: the client re-lists and watches again
            return None
        selected = self._selected
        return [out for c in changes if (out := _translate(c, selected)) is not None]

    async def wait(self) -> None:
        await self.stream.wait()

    def follow(self, follower: Follower) -> None:
        def ready() -> None:
            batch = self.take()
            if batch:
                follower(batch)
            if self._ended:
                follower(None)

        self.stream.follow(ready)

    def close(self) -> None:
        self._ended = True
        self.stream.close()


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
    batches = _watch_batches(server, kind, namespace, options, selected, progress)
    if _initial_events(options):
        return WatchEvents(batches, progress)
    return WatchEvents(batches, progress, lambda: _open(server, kind, namespace, options, selected))


def _initial_events(options: ListOptions) -> bool:
    if options.send_initial_events is None:
        # Without sendInitialEvents, kept for old clients: "" and "0" start with the state.
        return options.resource_version in ("", "0")
    return options.send_initial_events


def _open(
    server: APIServer, kind: Kind, namespace: str, options: ListOptions, selected: Filter
) -> _Live:
    """The live changes after the watch's resourceVersion; CompactedError if they are gone."""
    start = parse_resource_version(options.resource_version)
    # Changes the filter leaves out neither wake this watch nor fill its buffer.
    wanted = None if selected.everything else selected.touches
    prefix = list_prefix(kind, namespace)
    return _Live(server.store.watch(prefix, start, wanted), selected)


async def _watch_batches(
    server: APIServer,
    kind: Kind,
    namespace: str,
    options: ListOptions,
    selected: Filter,
    progress: _Progress,
) -> AsyncGenerator[list[Object], None]:
    if _initial_events(options):
        listed = await server.list(
            kind,
            namespace,
            ListOptions(
                label_selector=options.label_selector,
                field_selector=options.field_selector,
                resource_version=(options.resource_version if options.send_initial_events else ""),
            ),
        )
        start = listed["metadata"]["resourceVersion"]
        items = listed["items"]
        for i in range(0, len(items), BATCH):
            yield [{"type": "ADDED", "object": item} for item in items[i : i + BATCH]]
        if options.send_initial_events and options.allow_watch_bookmarks:
            yield [bookmark(kind, int(start), {INITIAL_EVENTS_END_ANNOTATION: "true"})]
        options = replace(options, resource_version=start)
    try:
        live = _open(server, kind, namespace, options, selected)
    except CompactedError as e:
        yield [_expired(e)]
        return
    progress.stream = live.stream
    try:
        while (batch := live.take()) is not None:
            if batch:
                yield batch
            else:
                await live.wait()
    finally:
        live.close()


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
