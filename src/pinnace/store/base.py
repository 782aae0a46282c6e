"""What MemoryStore and SQLiteStore share: reads, watches, counts and compaction served from an
in-memory `MvccState`. Subclasses decide how a write becomes committed (`_write`)."""

from __future__ import annotations

import asyncio
import builtins
from abc import abstractmethod
from collections.abc import Callable

from pinnace.store import changes
from pinnace.store.codec import Codec
from pinnace.store.interface import (
    KeyNotFoundError,
    ListResult,
    Object,
    Selection,
    Store,
    StoreError,
    Watch,
    WatchClosedError,
    WatchEvent,
)
from pinnace.store.mvcc import HELD_VERSIONS, RECENT_VERSIONS, MvccState, PackedAhead
from pinnace.store.segments import SEGMENT_BYTES
from pinnace.store.settled import BLOCK
from pinnace.store.watch import DEFAULT_WATCH_BUFFER, WatchHub

COMPACTION_STEP = 10_000
"""Compaction drops at most this many revisions per step."""
COMPACTION_SLICE = 0.02
"""Seconds compaction works before it lets the loop run. Yielding after every step starved it
while a start kept the loop busy: each turn of the loop took long, the compaction many turns,
and history piled up until the next (a compaction begun 2 minutes into a start ended with it,
3 minutes later). The seconds are the event loop's: real ones on a real loop, and on the
virtual loop (whose time stands still while anything runs) none pass, so a simulation's
compaction runs to its end in one go, whatever the machine's speed, and cannot change what
runs when."""

Build = Callable[[changes.Change | None, int], WatchEvent]
"""Checks a write against the key's latest change and builds it at the given revision."""


class MvccStore(Store):
    def __init__(
        self,
        *,
        watch_buffer: int = DEFAULT_WATCH_BUFFER,
        recent_versions: int = RECENT_VERSIONS,
        settled_block: int = BLOCK,
        segment_bytes: int = SEGMENT_BYTES,
        codec: Codec | None = None,
        settle_keys: bool = True,
        held_versions: int = HELD_VERSIONS,
    ) -> None:
        """`recent_versions`: how many of the latest changes keep their objects as written
        (see `MvccState`), and `held_versions` how many live keys' latest changes past them
        at most; the rest are kept packed, by `codec` (a new one by default).
        `settled_block`: keys per block of the keys compaction settles (see `SettledKeys`);
        `settle_keys`: whether it settles any (see `MvccState`). `segment_bytes`: the size of
        a mapping of the packed changes compaction has not reached (see `Segments`)."""
        self.codec = codec if codec is not None else Codec()
        self._state = MvccState(
            recent_versions, settled_block, segment_bytes, self.codec, settle_keys, held_versions
        )
        self._hub = WatchHub(self._state, watch_buffer)
        self._observers: list[Callable[[WatchEvent], None]] = []
        self._reaching: list[tuple[int, asyncio.Future[None]]] = []
        """The `sync` calls waiting for a revision, and what wakes each."""
        self._closed = False

    @property
    def revision(self) -> int:
        return self._state.revision

    @property
    def compacted_revision(self) -> int:
        return self._state.compacted_revision

    @property
    def retained_versions(self) -> int:
        """Object versions and tombstones held, for metrics: bounded by compaction."""
        return self._state.retained_versions

    async def create(self, key: str, obj: Object) -> Object:
        return await self._write(key, lambda latest, rev: changes.created(key, obj, rev, latest))

    async def update(self, key: str, obj: Object, expected_revision: int | None) -> Object:
        return await self._write(
            key, lambda latest, rev: changes.updated(key, obj, expected_revision, rev, latest)
        )

    async def delete(self, key: str, expected_revision: int | None = None) -> Object:
        return await self._write(
            key, lambda latest, rev: changes.deleted(key, expected_revision, rev, latest)
        )

    @abstractmethod
    async def _write(self, key: str, build: Build) -> Object:
        """Build the change against the key's latest state, commit it, return its object."""

    def _commit(self, event: WatchEvent, packed: PackedAhead = None) -> bool:
        """Make a durable change visible to readers and watchers; True if watchers lag.
        `packed`: the object as the codec packs it, if that was done (or is being done)
        ahead."""
        self._state.apply(event, packed)
        for observer in self._observers:
            observer(event)
        if self._reaching:
            self._wake_reached()
        return self._hub.publish(event)

    async def sync(self, revision: int | None = None) -> None:
        """This store is its storage's only writer: a consistent read has nothing to wait
        for; a later `revision`, until this store's writes reach it (the caller bounds the
        wait)."""
        if revision is None or revision <= self.revision:
            return
        waiter = (revision, asyncio.get_running_loop().create_future())
        self._reaching.append(waiter)
        try:
            await waiter[1]
        finally:
            self._reaching.remove(waiter)

    def _wake_reached(self) -> None:
        for revision, reached in self._reaching:
            if revision <= self.revision and not reached.done():
                reached.set_result(None)

    def observe(self, observer: Callable[[WatchEvent], None]) -> Callable[[], None]:
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def text(self, event: WatchEvent) -> bytes:
        return self._state.text(event)

    async def get(self, key: str, revision: int | None = None) -> Object:
        self._check_open()
        state = self._state
        obj = state.get(key, state.read_revision(revision))
        if obj is None:
            raise KeyNotFoundError(key)
        return obj

    def revision_of(self, key: str) -> int | None:
        self._check_open()
        return self._state.revision_of(key)

    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int = 0,
        start_after: str | None = None,
        select: Selection | None = None,
    ) -> ListResult:
        self._check_open()
        if limit < 0:
            raise ValueError(f"limit must not be negative, not {limit}")
        state = self._state
        return state.list(prefix, state.read_revision(revision), limit, start_after, select)

    def watch(
        self, prefix: str, from_revision: int, wanted: Callable[[WatchEvent], bool] | None = None
    ) -> Watch:
        self._check_open()
        return self._hub.watch(prefix, from_revision, wanted)

    def end_watches(self, prefix: str) -> None:
        if not self._closed:
            self._hub.end(prefix, WatchClosedError(f"the watched resource {prefix!r} changed"))

    def count(self, prefix: str) -> int:
        self._check_open()
        return self._state.count(prefix)

    async def compact(self, revision: int) -> None:
        self._check_open()
        self._state.read_revision(max(revision, self.compacted_revision))
        step = self.compacted_revision
        loop = asyncio.get_running_loop()
        until = loop.time() + COMPACTION_SLICE
        while step < revision:
            step = min(step + COMPACTION_STEP, revision)
            if step <= self.compacted_revision:  # another compaction got further
                continue
            dropped = self._state.compact(step)
            await self._compacted(step, dropped)
            until = await _slice_done(loop, until)
        while self._state.settle():
            until = await _slice_done(loop, until)

    async def _compacted(self, revision: int, dropped: builtins.list[int]) -> None:
        """Compaction reached `revision`, dropping the changes made at `dropped`."""

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def _close_watches(self) -> None:
        self._closed = True
        self._hub.close_all(WatchClosedError("the store is closed"))


async def _slice_done(loop: asyncio.AbstractEventLoop, until: float) -> float:
    """Let the loop run if the slice that ends at `until` (the loop's time) is over; when the
    next one ends."""
    if loop.time() < until:
        return until
    await asyncio.sleep(0)
    return loop.time() + COMPACTION_SLICE
