"""Keys that expire a time-to-live after their last write, as the etcd leases kube-apiserver
attaches to Events (--event-ttl, 1 h): without them a long-running cluster's Events would grow
without bound.

As kube-apiserver reuses one lease for the writes of a short window (the lesser of 60 s and 5%
of the TTL) and grants it for the TTL plus that window, writes are grouped in such windows and
a key goes when the lease of the window of its last write does: between one TTL and one TTL
plus a window after that write. Leases do not outlive the process: keys already stored at start
get theirs then.

The windows follow one another from the start on, but one is opened only when a key is written
in it, and the only timer is the expiry of the earliest: a store in which nothing is written
costs nothing however long it runs.

A window keeps each write's key and revision: at its expiry each of its keys goes, in the order
they were first written in it, by a delete conditional on the revision of its last write there;
one written or deleted since (a later lease holds it) stays, without a read first.
"""

from __future__ import annotations

import asyncio
import math
from array import array
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field

from pinnace.clock import Clock, Timer
from pinnace.store.interface import (
    ConflictError,
    KeyNotFoundError,
    Object,
    Store,
    WatchEvent,
)

DEFAULT_EVENT_TTL = 3600.0
"""kube-apiserver's --event-ttl."""
LEASE_REUSE_SECONDS = 60.0
LEASE_REUSE_SHARE = 0.05


@dataclass
class _Window:
    """The writes made while one lease was handed out, from `opened_at` on for the window's
    length: the key and revision of each; it expires at `expires_at`."""

    opened_at: float
    expires_at: float
    keys: list[str] = field(default_factory=list)
    revisions: array[int] = field(default_factory=lambda: array("q"))


class Expiry:
    """Deletes each key under `prefix` of `store` once `ttl` seconds of `clock` time have passed
    since its last write."""

    def __init__(self, store: Store, clock: Clock, prefix: str, ttl: float) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, not {ttl}")
        self._store = store
        self._clock = clock
        self._prefix = prefix
        self._ttl = ttl
        self._window_length = min(LEASE_REUSE_SECONDS, ttl * LEASE_REUSE_SHARE)
        self._windows: deque[_Window] = deque()
        self._origin = 0.0
        """When the first window opened: the others open a whole number of windows later."""
        self._stop_observing: Callable[[], None] | None = None
        self._timer: Timer | None = None
        self._expiring: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Every key stored now goes into the first window, and each write from now on into
        the window open when it commits (the store's observer sees it then, as a lease is
        attached to the write itself)."""
        self._origin = self._clock.now()
        window = self._current_window()
        self._stop_observing = self._store.observe(self._record)
        items = (await self._store.list(self._prefix)).items
        # A store that reads elsewhere (SQLite's thread, etcd) lets writes go on while it
        # lists: the listed keys go before those writes, which are their last.
        window.keys[:0] = [self._key(obj) for obj in items]
        window.revisions[:0] = array("q", [int(o["metadata"]["resourceVersion"]) for o in items])

    async def stop(self) -> None:
        if self._stop_observing is not None:
            self._stop_observing()
            self._stop_observing = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._expiring is not None:
            self._expiring.cancel()
            await asyncio.gather(self._expiring, return_exceptions=True)

    def _key(self, obj: Object) -> str:
        metadata = obj["metadata"]
        return f"{self._prefix}{metadata.get('namespace') or ''}/{metadata['name']}"

    def _current_window(self) -> _Window:
        """The window open now, opened now if none is."""
        now, length = self._clock.now(), self._window_length
        if self._windows and now < self._windows[-1].opened_at + length:
            return self._windows[-1]
        opened = self._origin + math.floor((now - self._origin) / length) * length
        if opened + length <= now:  # rounding
            opened += length
        window = _Window(opened, opened + self._ttl + length)
        self._windows.append(window)
        if self._timer is None and (self._expiring is None or self._expiring.done()):
            self._arm()
        return window

    def _arm(self) -> None:
        """The timer at the earliest window's expiry, if there is a window."""
        if self._windows:
            self._timer = self._clock.call_at(self._windows[0].expires_at, self._due)

    def _record(self, event: WatchEvent) -> None:
        if event.type != "DELETED" and event.key.startswith(self._prefix):
            window = self._current_window()
            window.keys.append(event.key)
            window.revisions.append(event.revision)

    def _due(self) -> None:
        self._timer = None
        if self._expiring is None or self._expiring.done():
            self._expiring = self._clock.loop.create_task(self._expire())

    async def _expire(self) -> None:
        windows = self._windows
        while windows and windows[0].expires_at <= self._clock.now():
            window = windows.popleft()
            # Each key once, where it was first written, with the revision of its last write.
            last_writes = dict(zip(window.keys, window.revisions, strict=True))
            for key, revision in last_writes.items():
                with suppress(KeyNotFoundError, ConflictError):  # deleted or written since
                    await self._store.delete(key, revision)
        if self._timer is None:
            self._arm()
