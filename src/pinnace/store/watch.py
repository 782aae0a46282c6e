"""Watches over an `MvccState`: replay of retained history, then live fan-out.

A new watch first replays the state's log from its start revision, reading events straight
from the log, and joins the live fan-out only when it has caught up: the catch-up check and the
registration happen in one step of the event loop, as do a commit and its fan-out, so no
change falls between replay and live delivery. Live events go to a bounded per-watch buffer; a
watch whose buffer overflows is ended with WatchClosedError, so a slow consumer can neither
block writers nor grow memory. A watch that says which changes it wants (the API server's
watches with selectors) gets only those: the others neither wake it nor take buffer room.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from pinnace.store.interface import (
    CompactedError,
    StoreError,
    Watch,
    WatchClosedError,
    WatchEvent,
    WatchWoken,
)
from pinnace.store.mvcc import MvccState

DEFAULT_WATCH_BUFFER = 10_000
"""Live events a watch may hold undelivered before it is ended."""
MAX_ROUTES = 1024
"""Key starts whose watches a hub remembers (the API server's keys have one per kind)."""


class WatchHub:
    """The live watches of one store, and the fan-out of each committed change to them."""

    def __init__(self, state: MvccState, buffer: int = DEFAULT_WATCH_BUFFER) -> None:
        if buffer < 1:
            raise ValueError(f"watch buffer must be at least 1, not {buffer}")
        self._state = state
        self._buffer = buffer
        # Live watches by prefix; dicts as ordered sets, so a simulation wakes watchers in
        # the same order on every run.
        self._live: dict[str, dict[BufferedWatch, None]] = {}
        # By the start of a key up to its second "/" (a kind's prefix, "core/pods/"), the live
        # watches whose prefix may match keys starting so, in the order of `_live`: a change
        # is offered to those, not to every prefix watched. Rebuilt when prefixes come or go.
        self._routes: dict[str, tuple[tuple[str, dict[BufferedWatch, None]], ...]] = {}
        self._overflowed: list[BufferedWatch] = []
        self.closed: StoreError | None = None
        self.endings = 0
        """How many times `end` has ended watches: a watch started before the latest one
        checks, while it replays, whether that ending was meant for it."""
        self._ended: dict[str, tuple[int, int, StoreError]] = {}

    def watch(
        self, prefix: str, from_revision: int, wanted: Callable[[WatchEvent], bool] | None = None
    ) -> BufferedWatch:
        if from_revision == 0:
            from_revision = self._state.revision
        if from_revision < self._state.compacted_revision:
            raise CompactedError(from_revision, self._state.compacted_revision)
        return BufferedWatch(self, self._state, prefix, from_revision, self._buffer, wanted)

    def publish(self, event: WatchEvent) -> bool:
        """Hand a committed change to every live watch of its key. True when some watch's
        buffer is more than half full: the writer should let consumers run."""
        congested = False
        key = event.key
        start = key[: key.find("/", key.find("/") + 1) + 1] or key
        routes = self._routes.get(start)
        if routes is None:
            if len(self._routes) >= MAX_ROUTES:  # keys not shaped as the API server's
                self._routes.clear()
            routes = self._routes[start] = tuple(
                (prefix, watches)
                for prefix, watches in self._live.items()
                if prefix.startswith(start) or start.startswith(prefix)
            )
        for prefix, watches in routes:
            if key.startswith(prefix):
                for watch in watches:
                    congested |= watch._push(event)
        if self._overflowed:
            for watch in self._overflowed:
                self.unregister(watch)
            self._overflowed.clear()
        return congested

    def close_all(self, error: StoreError) -> None:
        """End every watch, live or still replaying, with `error`."""
        self.closed = error
        for watches in list(self._live.values()):
            for watch in list(watches):
                watch._end(error)
        self._live.clear()
        self._routes.clear()

    def end(self, prefix: str, error: StoreError) -> None:
        """End every watch of keys under `prefix` with `error` once it has delivered the
        changes made so far: the live ones after the events they hold, those still replaying
        their history when they reach the current revision."""
        self.endings += 1
        self._ended[prefix] = (self.endings, self._state.revision, error)
        for watched in [p for p in self._live if p.startswith(prefix)]:
            for watch in self._live.pop(watched):
                watch._end(error, drain=True)
        self._routes.clear()

    def ended(self, prefix: str, since: int) -> tuple[int, StoreError] | None:
        """The revision and error of an `end` after the `since`-th one that covers a watch
        of `prefix`."""
        for ended, (at, revision, error) in self._ended.items():
            if at > since and prefix.startswith(ended):
                return revision, error
        return None

    def register(self, watch: BufferedWatch) -> None:
        watches = self._live.get(watch.prefix)
        if watches is None:
            watches = self._live[watch.prefix] = {}
            self._routes.clear()
        watches[watch] = None

    def unregister(self, watch: BufferedWatch) -> None:
        watches = self._live.get(watch.prefix)
        if watches is None:
            return
        watches.pop(watch, None)
        if not watches:
            del self._live[watch.prefix]
            self._routes.clear()

    def overflowed(self, watch: BufferedWatch) -> None:
        self._overflowed.append(watch)


class BufferedWatch(Watch):
    def __init__(
        self,
        hub: WatchHub,
        state: MvccState,
        prefix: str,
        from_revision: int,
        buffer: int,
        wanted: Callable[[WatchEvent], bool] | None = None,
    ) -> None:
        self.prefix = prefix
        self._wanted = wanted
        self._hub = hub
        self._state = state
        self._from = from_revision
        self._next = from_revision + 1  # next revision to replay from the log
        self._live = False
        self._buffer: deque[WatchEvent] = deque()
        self._limit = buffer
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._endings = hub.endings
        self._woken = False

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._error is not None:
                # A stored error is raised again on every call (and the store's closing error
                # by every watch): drop the previous traceback so it does not keep growing.
                raise self._error.with_traceback(None)
            if not self._live:
                event = self._replay()
                if event is not None:
                    return event
                continue
            if self._woken:
                self._woken = False
                raise WatchWoken
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def wake(self) -> bool:
        self._woken = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        return True

    def ready(self, limit: int) -> list[WatchEvent]:
        """Live events already buffered (none while the watch still replays its history)."""
        buffer = self._buffer
        if len(buffer) <= limit:
            taken = list(buffer)
            buffer.clear()
            return taken
        return [buffer.popleft() for _ in range(limit)]

    def caught_up(self) -> bool:
        """Live, nothing held and not ended: a commit and its fan-out happen in one step of
        the event loop, so nothing up to the current revision is still to come."""
        return self._live and not self._buffer and self._error is None

    def _replay(self) -> WatchEvent | None:
        """The next matching event from the log, or None after joining the live fan-out."""
        if self._hub.closed is not None:
            self._end(self._hub.closed)
            return None
        state = self._state
        prefix = self.prefix
        ending = self._hub.ended(prefix, self._endings) if self._hub.endings else None
        last = state.revision if ending is None else min(state.revision, ending[0])
        while self._next <= last:
            if self._next <= state.compacted_revision:
                error = CompactedError(self._next - 1, state.compacted_revision)
                self._error = error
                raise error
            event = state.event_at(self._next)
            self._next += 1
            if event is not None and event.key.startswith(prefix):
                return event
        if ending is not None:
            self._end(ending[1])
            return None
        self._live = True
        self._hub.register(self)
        return None

    def _push(self, event: WatchEvent) -> bool:
        if event.revision <= self._from:
            return False
        if self._wanted is not None and not self._wanted(event):
            return False
        buffer = self._buffer
        if len(buffer) >= self._limit:
            self._hub.overflowed(self)
            self._end(
                WatchClosedError(
                    f"watch on {self.prefix!r} fell {self._limit} events behind; "
                    "list again and watch from the list's revision"
                ),
            )
            return False
        buffer.append(event)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        return len(buffer) * 2 > self._limit

    def _end(self, error: BaseException, *, drain: bool = False) -> None:
        if self._error is None:
            self._error = error
        if not drain:
            self._buffer.clear()
        self._live = True  # never replay again
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        if self._error is None:
            self._hub.unregister(self)
            self._end(StopAsyncIteration())
        self._buffer.clear()  # what an ended watch still held
