"""The durable store for live mode: MVCC state in memory, an SQLite log on disk.

Reads and watches are served from memory, exactly as in MemoryStore; SQLite is only the
durable log, read back in full on open. One writer thread owns the file, so it can never be
"locked". Writes are group-committed: every write made while a commit is in flight (or in the
same loop iteration as the first) joins the next transaction, and each writer resumes only
after its transaction has committed. A write becomes visible to readers and watchers only
then, in revision order. Once committed, the writer thread also packs the batch's objects
(`Codec`, mostly deflate, which runs without the GIL) for when they leave the recent changes:
the event loop, which every request waits for, would otherwise spend about 20 us a pod on it.

The writer thread takes the next batch itself as soon as it has committed one, as etcd's
backend commits what gathered while it wrote the last: it never waits for the event loop,
busy answering requests, to get round to a commit's outcome before starting the next. The
loop learns of each commit through one callback, in commit order, and each writer waits on a
future of its own (no executor future chained to an asyncio one, no shield per write): fewer
turns of the loop between a commit and its answers, and less of the loop's work a write.

A write is checked against the latest state including writes still waiting to commit (so of
two writers from the same revision exactly one wins), but a failure that depends on such a
pending write waits for that write to commit and is then checked again: nobody learns of a
write, not even through an error, before it is durable.

A commit the file refuses (a full disk, an I/O error) fails its writes with a StorageError in
SQLite's words, logged in one line; the store goes on, and says it cannot write (`write_failure`)
until a commit, or a probe of one as large, works again.

A writer whose task is cancelled while it waits may still have its write committed, as with an
etcd client that times out. Objects must be JSON-serialisable; a write of one that is not
raises TypeError and changes nothing.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from pinnace.store import rows
from pinnace.store.base import Build, MvccStore
from pinnace.store.codec import Codec
from pinnace.store.interface import Object, StorageError, StoreError, WatchEvent
from pinnace.store.mvcc import INITIAL_REVISION, RECENT_VERSIONS
from pinnace.store.segments import SEGMENT_BYTES
from pinnace.store.settled import BLOCK
from pinnace.store.sqlitelog import Row, SQLiteLog
from pinnace.store.watch import DEFAULT_WATCH_BUFFER

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Batch:
    """Writes committed together in one transaction. The writer thread reads `rows` and
    `events` once it has taken the batch (the event loop appends to them only before, under
    the store's lock); `waiters`, the futures to settle with the commit's outcome, are the
    loop's alone."""

    rows: list[Row] = field(default_factory=list)
    events: list[WatchEvent] = field(default_factory=list)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    def settled(self, error: BaseException | None = None) -> None:
        """Tell every waiter still waiting the commit's outcome."""
        for waiter in self.waiters:
            if not waiter.done():
                if error is None:
                    waiter.set_result(None)
                else:
                    waiter.set_exception(error)


@dataclass(slots=True)
class _Pending:
    """A key's latest write that is not yet committed."""

    event: WatchEvent
    batch: _Batch
    create_revision: int


class SQLiteStore(MvccStore):
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        watch_buffer: int = DEFAULT_WATCH_BUFFER,
        recent_versions: int = RECENT_VERSIONS,
        settled_block: int = BLOCK,
        segment_bytes: int = SEGMENT_BYTES,
        codec: Codec | None = None,
    ) -> None:
        """Open (or create) the store at `path`, reading its whole log into memory."""
        super().__init__(
            watch_buffer=watch_buffer,
            recent_versions=recent_versions,
            settled_block=settled_block,
            segment_bytes=segment_bytes,
            codec=codec,
        )
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="pinnace-sqlite")
        with _collector_paused():
            try:
                self._log, loaded, compacted = self._executor.submit(
                    _open, os.fspath(path), synchronous
                ).result()
            except BaseException:
                self._executor.shutdown()
                raise
            versions, self._created = rows.from_rows(loaded, self.codec)
            revision = loaded[-1][0] if loaded else INITIAL_REVISION
            stale = self._state.restore(versions, revision, compacted)
            del loaded, versions
        if stale:
            # What a compaction failed to delete; if it fails again, the next opening retries.
            try:
                self._executor.submit(self._log.compact, compacted, stale).result()
            except Exception as e:
                log.warning("could not delete %d compacted changes: %s", len(stale), e)
        self._pending: dict[str, _Pending] = {}
        self._assigned = self._state.revision  # the last revision given to a write
        self._lock = threading.Lock()
        """Guards `_open_batch` and `_writing`, which the writer thread reads and changes."""
        self._open_batch: _Batch | None = None
        self._writing = False
        """Whether the writer thread has the open batch to take (a job of it queued or
        running), or is halted by a failed commit the event loop has not yet answered."""
        self._taken: deque[_Batch] = deque()
        """The batches the writer thread has taken whose outcome the loop has not yet had."""
        self._closing = False
        self._commits = 0
        self._write_failure: str | None = None
        """What the file said of the last commit it refused, until one works again."""
        self._refused_bytes = 0
        """The size of that commit's objects: a probe writes as much."""

    @property
    def commits(self) -> int:
        """Transactions committed so far, for metrics."""
        return self._commits

    async def _write(self, key: str, build: Build) -> Object:
        while True:
            self._check_open()
            if self._closing:
                raise StoreError("the store is closing")
            pending = self._pending.get(key)
            latest = pending.event if pending is not None else self._state.latest(key)
            try:
                event = build(latest, self._assigned + 1)
            except StoreError:
                if pending is None:
                    raise
                await _settled(pending.batch)
                continue
            break
        if event.type == "ADDED":
            created = event.revision
        elif pending is not None:
            created = pending.create_revision
        else:
            created = self._created[key]
        row = rows.to_row(event, created, latest.revision if latest is not None else 0)
        self._assigned = event.revision
        loop = asyncio.get_running_loop()
        with self._lock:
            batch = self._open_batch
            if batch is None:
                batch = self._open_batch = _Batch()
                start = not self._writing
                self._writing = True
            else:
                start = False
            batch.rows.append(row)
            batch.events.append(event)
        if start:
            # Not at once: writes made later in this loop iteration join the batch.
            loop.call_soon(self._executor.submit, self._commit_next, loop)
        self._pending[key] = _Pending(event, batch, created)
        # A future of its own, not the batch's: a writer cancelled while it waits cancels
        # nobody else's wait.
        committed = loop.create_future()
        batch.waiters.append(committed)
        await committed
        return event.object

    def _commit_next(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the writer thread: commit the open batch, tell the loop, and queue the same for
        the batch opened meanwhile, if any (behind whatever else waits for the thread, such as
        a compaction step). A failed commit halts the writer until the loop has failed every
        write checked against the batch (`_failed`)."""
        with self._lock:
            batch = self._open_batch
            self._open_batch = None
            if batch is None:
                self._writing = False
                return
            self._taken.append(batch)
        try:
            packed = self._append(batch.rows, batch.events)
        except BaseException as error:
            loop.call_soon_threadsafe(self._failed, batch, error)
            return
        loop.call_soon_threadsafe(self._committed, batch, packed)
        with self._lock:
            if self._open_batch is None:
                self._writing = False
                return
        self._executor.submit(self._commit_next, loop)

    def _append(self, rows: list[Row], events: list[WatchEvent]) -> list[bytes]:
        """Commit `rows`, then pack their objects (on the writer thread) from the rows' text:
        before the events are published, so that the process's informers that keep packed
        objects find them packed (`Codec.pack`)."""
        self._log.append(rows)
        pack = self.codec.pack
        return [pack(event.object, row[5]) for row, event in zip(rows, events, strict=True)]

    def _committed(self, batch: _Batch, packed: list[bytes]) -> None:
        self._taken.popleft()
        self._commits += 1
        self._writable()
        for event, packed_object in zip(batch.events, packed, strict=True):
            key = event.key
            if event.type == "ADDED":
                self._created[key] = event.revision
            elif event.type == "DELETED":
                del self._created[key]
            pending = self._pending.get(key)
            if pending is not None and pending.event is event:
                del self._pending[key]
            self._commit(event, packed_object)
        batch.settled()

    def _failed(self, failed: _Batch, error: BaseException) -> None:
        """Fail the batch whose commit failed and every write checked against it (the batch
        opened since, which the halted writer thread has left), and let the writer go on."""
        self._taken.popleft()
        refused: StoreError
        if isinstance(error, sqlite3.Error | OSError):
            refused = StorageError(f"sqlite: {error}")
            log.error("%d writes not committed: %s", len(failed.rows), refused)
            self._write_failure = str(refused)
            self._refused_bytes = sum(len(row[5]) for row in failed.rows)
        else:
            refused = StoreError(f"write not committed: {type(error).__name__}: {error}")
        with self._lock:
            checked, self._open_batch = self._open_batch, None
            self._writing = False
        for batch in (failed, checked):
            if batch is not None:
                batch.settled(refused)
        self._pending.clear()
        self._assigned = self._state.revision

    def _writable(self) -> None:
        if self._write_failure is not None:
            log.warning("the store can write again")
            self._write_failure = None

    async def write_failure(self) -> str | None:
        if self._write_failure is None or self._closing:
            return self._write_failure
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self._log.probe, self._refused_bytes
            )
        except (sqlite3.Error, OSError):
            return self._write_failure
        self._writable()
        return None

    async def _compacted(self, revision: int, dropped: list[int]) -> None:
        self._check_open()
        await asyncio.get_running_loop().run_in_executor(
            self._executor, self._log.compact, revision, dropped
        )

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        while (batch := self._open_batch or (self._taken[-1] if self._taken else None)) is not None:
            await _settled(batch)
        self._close_watches()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._log.close)
        self._executor.shutdown()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector. Loading a log allocates millions of objects
    that live on and form no cycles; the collector would traverse the growing heap again and
    again, which took most of the load time."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _open(path: str, synchronous: str) -> tuple[SQLiteLog, list[Row], int]:
    log = SQLiteLog(path, synchronous)
    try:
        loaded = list(log.rows())
        compacted = log.compacted_revision()
    except BaseException:
        log.close()
        raise
    return log, loaded, compacted if compacted is not None else INITIAL_REVISION


async def _settled(batch: _Batch) -> None:
    """Wait for a batch to commit or fail, whichever."""
    done = asyncio.get_running_loop().create_future()
    batch.waiters.append(done)
    await asyncio.wait([done])
