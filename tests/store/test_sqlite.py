"""What only the SQLite store promises: durability, reopening, group commit, bounded disk."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pinnace.store import (
    KeyExistsError,
    SQLiteStore,
    StorageError,
    Store,
    StoreError,
    WatchEvent,
    mvcc,
)
from pinnace.store.codec import Codec
from pinnace.store.sqlitelog import SQLiteLog


def run(main: Any) -> Any:
    return asyncio.run(asyncio.wait_for(main, timeout=30))


async def everything(store: Store) -> tuple[int, int, list[Any], list[WatchEvent], list[int]]:
    """All a client can observe: revisions, the objects, the retained history."""
    events = []
    if store.revision > store.compacted_revision:
        watch = store.watch("", store.compacted_revision)
        while not events or events[-1].revision < store.revision:
            events.append(await anext(watch))
        watch.close()
    counts = [store.count(prefix) for prefix in ("", "pods/", "nodes/")]
    return store.revision, store.compacted_revision, (await store.list("")).items, events, counts


def test_reopening_restores_revisions_objects_and_history(tmp_path: Path) -> None:
    path = tmp_path / "db"

    async def write() -> Any:
        store = SQLiteStore(path)
        for i in range(20):
            await store.create(f"pods/ns/{i}", {"metadata": {"name": str(i)}, "spec": {"i": i}})
        for i in range(0, 20, 2):
            await store.update(f"pods/ns/{i}", {"metadata": {"name": str(i)}, "spec": {}}, None)
        for i in range(0, 20, 3):
            await store.delete(f"pods/ns/{i}")
        await store.create("pods/ns/0", {"again": True})
        await store.compact(25)
        await store.create("nodes//n", {})
        seen = await everything(store)
        old = await store.list("pods/", revision=30)
        await store.close()
        return seen, old

    async def reopen() -> Any:
        store = SQLiteStore(path)
        seen = await everything(store)
        old = await store.list("pods/", revision=30)
        with pytest.raises(KeyExistsError):
            await store.create("pods/ns/1", {})
        after = await store.create("pods/ns/new", {})
        await store.close()
        return seen, old, after

    before, old_before = run(write())
    after, old_after, created = run(reopen())
    assert after == before
    assert old_after == old_before
    assert after[1] == 25
    assert created["metadata"]["resourceVersion"] == str(before[0] + 1)


def test_reopening_after_compacting_away_the_last_change_keeps_the_revision(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db"

    async def write() -> int:
        store = SQLiteStore(path)
        await store.create("k", {})
        await store.delete("k")
        await store.compact(store.revision)
        assert store.retained_versions == 0
        await store.close()
        return store.revision

    async def reopen() -> tuple[int, int]:
        store = SQLiteStore(path)
        await store.close()
        return store.revision, store.compacted_revision

    assert run(reopen()) == (1, 1), "a new file is a new, empty store"
    revision = run(write())
    assert run(reopen()) == (revision, revision) == (3, 3)


def test_reopening_settles_a_large_compacted_history_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys unchanged since the compacted revision come back settled, a few at a time (small
    batches and blocks here, to cross many of both), beside keys changed since."""
    monkeypatch.setattr(mvcc, "RESTORE_BATCH", 7)
    path = tmp_path / "db"

    async def write() -> tuple[Any, ...]:
        store = SQLiteStore(path)
        for i in range(300):
            await store.create(f"pods/p{i:03}", {"v": i})
        await store.delete("pods/p007")
        await store.compact(store.revision)
        await store.update("pods/p100", {"v": "changed"}, None)
        await store.create("nodes/n", {})
        seen = await everything(store)
        await store.close()
        return seen

    async def reopen() -> tuple[Any, ...]:
        store = SQLiteStore(path, settled_block=2)
        seen = await everything(store)
        assert (await store.get("pods/p299"))["v"] == 299
        page = await store.list("pods/", limit=50, start_after="pods/p099")
        assert [o["v"] for o in page.items][:2] == ["changed", 101]
        assert page.remaining == 200 - 50  # p100 to p299, less the page
        await store.close()
        return seen

    written = run(write())
    assert run(reopen()) == written


def test_compaction_deletes_rows_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "db"

    async def main() -> None:
        store = SQLiteStore(path)
        await store.create("k", {"v": 0})
        for i in range(1, 100):
            await store.update("k", {"v": i}, None)
        await store.compact(store.revision)
        await store.close()

    run(main())
    log = SQLiteLog(str(path))
    assert [row[0] for row in log.rows()] == [101]
    assert log.compacted_revision() == 101
    log.close()


KILLED_WRITER = """
import asyncio, sys
from pinnace.store import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])

    async def writer(w):
        for i in range(1_000_000):
            key = f"k/{w}/{i}"
            await store.create(key, {"w": w, "i": i, "pad": "x" * 100})
            sys.stdout.write(key + "\\n")
            sys.stdout.flush()

    async def compactor():
        while True:
            await asyncio.sleep(0.005)
            await store.compact(max(store.compacted_revision, store.revision - 50))

    await asyncio.gather(compactor(), *(writer(w) for w in range(4)))

asyncio.run(main())
"""


def test_every_acknowledged_write_survives_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "db"
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    acknowledged = []
    try:
        while len(acknowledged) < 400:
            line = child.stdout.readline()
            assert line, child.stderr.read().decode() if child.stderr else "writer died"
            acknowledged.append(line)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate()
    acknowledged.extend(rest.splitlines(keepends=True))
    keys = [line.decode().strip() for line in acknowledged if line.endswith(b"\n")]
    assert child.returncode == -signal.SIGKILL

    async def check() -> None:
        store = SQLiteStore(path)
        for key in keys:
            _, w, i = key.split("/")
            obj = await store.get(key)
            assert (obj["w"], obj["i"]) == (int(w), int(i))
        # Nothing torn, nothing out of order: each key was created once and never changed, so
        # the objects hold every revision up to the last committed one, each intact; and each
        # writer waited for a write before the next, so its writes present have no gap.
        stored = (await store.list("k/")).items
        assert len(stored) >= len(keys)
        assert all(o["pad"] == "x" * 100 for o in stored)
        revisions = sorted(int(o["metadata"]["resourceVersion"]) for o in stored)
        assert revisions == list(range(2, store.revision + 1))
        for w in range(4):
            written = sorted(o["i"] for o in stored if o["w"] == w)
            assert written == list(range(len(written)))
        await store.close()

    run(check())


BATCH_THEN_KILLED = """
import asyncio, sys, time
from pinnace.store import SQLiteStore

async def main():
    store = SQLiteStore(sys.argv[1])
    await store.create("k/first", {"i": -1})
    # Started in one iteration of the loop: they join one transaction (or a few).
    await asyncio.gather(*(store.create(f"k/{i:03}", {"i": i}) for i in range(200)))
    sys.stdout.write(f"{store.commits}\\n")
    sys.stdout.flush()
    time.sleep(60)  # killed here, the store never closed

asyncio.run(main())
"""


def test_the_acknowledged_writes_of_a_batch_all_survive_kill_9(tmp_path: Path) -> None:
    path = tmp_path / "db"
    child = subprocess.Popen(
        [sys.executable, "-c", BATCH_THEN_KILLED, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    try:
        line = child.stdout.readline()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        _, errors = child.communicate()
    assert line, errors.decode()
    commits = int(line)
    assert commits <= 4, "the 200 writes shared transactions"

    async def check() -> None:
        store = SQLiteStore(path)
        stored = (await store.list("k/")).items
        assert sorted(o["i"] for o in stored) == list(range(-1, 200))
        assert store.revision == 202
        await store.close()

    run(check())


def test_concurrent_writes_are_group_committed_without_locking_errors(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")
        results = await asyncio.gather(
            *(store.create(f"k/{i:04}", {"i": i}) for i in range(1000)),
            *(store.create(f"k/{i:04}", {"dup": i}) for i in range(0, 1000, 10)),
            return_exceptions=True,
        )
        stored = results[:1000]
        assert all(isinstance(r, dict) for r in stored), [
            r for r in stored if not isinstance(r, dict)
        ]
        assert all(isinstance(r, KeyExistsError) for r in results[1000:])
        assert sorted(int(r["metadata"]["resourceVersion"]) for r in stored) == list(range(2, 1002))
        assert store.commits <= 3, "writes started together share transactions"
        assert store.count("k/") == 1000
        await store.close()

    run(main())


class _ThreadNoting(Codec):
    """A codec that notes which threads pack."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def pack_json(self, data: bytes, kind: str | None = None, head: bytes = b"") -> bytes:
        self.threads.add(threading.get_ident())
        return super().pack_json(data, kind, head)


def test_objects_are_packed_off_the_event_loop_and_read_back_as_written(tmp_path: Path) -> None:
    codec = _ThreadNoting()

    async def main() -> None:
        store = SQLiteStore(tmp_path / "db", recent_versions=4, codec=codec)
        written = [
            await store.create(f"pods/ns/{i}", {"kind": "Pod", "metadata": {"name": f"<{i}>"}})
            for i in range(20)
        ]
        deleted = await store.delete("pods/ns/0")
        for obj in written:  # all but the last four changes are kept packed now
            revision = int(obj["metadata"]["resourceVersion"])
            name = obj["metadata"]["name"]
            assert await store.get(f"pods/ns/{name[1:-1]}", revision=revision) == obj
        history = store.watch("pods/", store.compacted_revision)
        events = [await anext(history) for _ in range(21)]
        assert [e.object for e in events] == [*written, deleted]
        history.close()
        await store.close()

    run(main())
    assert threading.get_ident() not in codec.threads


def test_an_informer_keeping_packed_objects_gets_the_writer_threads_packing(
    tmp_path: Path,
) -> None:
    """What the writer thread packed before the write was published is what the process's
    informers that keep objects packed (sharing the store's codec) are handed: the event loop
    does not deflate the object again."""
    codec = _ThreadNoting()

    async def main() -> None:
        store = SQLiteStore(tmp_path / "db", codec=codec)
        written = await store.create("pods/ns/a", {"kind": "Pod", "metadata": {"name": "a"}})
        assert codec.threads and threading.get_ident() not in codec.threads
        assert codec.unpack(codec.pack(written)) == written
        assert threading.get_ident() not in codec.threads
        await store.close()

    run(main())


def test_an_error_that_depends_on_a_pending_write_waits_until_it_is_durable(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")

        async def second() -> Any:
            try:
                await store.create("k", {"n": 2})
            except KeyExistsError:
                # The winner's write must be visible to anyone told that it exists.
                return await store.get("k")
            raise AssertionError("two creates of one key both won")

        first, seen = await asyncio.gather(store.create("k", {"n": 1}), second())
        assert seen == first
        await store.close()

    run(main())


def test_objects_that_are_not_json_are_refused_and_change_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")
        await store.create("a", {})
        with pytest.raises(TypeError):
            await store.create("b", {"bad": object()})
        with pytest.raises(TypeError):
            await store.update("a", {"bad": {1, 2}}, None)
        assert store.revision == 2
        assert (await store.create("b", {}))["metadata"]["resourceVersion"] == "3"
        await store.close()

    run(main())


def test_a_failed_commit_fails_its_writes_and_the_store_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_append = SQLiteLog.append
    failures = iter([True])

    def flaky_append(self: SQLiteLog, rows: Any) -> None:
        if next(failures, False):
            raise OSError("disk on fire")
        real_append(self, rows)

    monkeypatch.setattr(SQLiteLog, "append", flaky_append)

    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")
        watch = store.watch("", 1)
        results = await asyncio.gather(
            store.create("a", {}), store.update("a", {"v": 2}, None), return_exceptions=True
        )
        assert all(isinstance(r, StoreError) and "disk on fire" in str(r) for r in results)
        assert store.revision == 1
        assert (await store.list("")).items == []
        created = await store.create("a", {"v": 3})
        assert created["metadata"]["resourceVersion"] == "2"
        event = await anext(watch)
        assert (event.revision, event.object) == (2, created)
        watch.close()
        await store.close()

    run(main())
    reopened = SQLiteStore(tmp_path / "db")
    assert reopened.revision == 2
    run(reopened.close())


def test_close_finishes_pending_writes(tmp_path: Path) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")
        writes = [asyncio.ensure_future(store.create(f"k/{i}", {})) for i in range(50)]
        await asyncio.sleep(0)
        await store.close()
        assert all(w.done() and not w.exception() for w in writes)

    run(main())
    reopened = SQLiteStore(tmp_path / "db")
    assert reopened.count("k/") == 50
    run(reopened.close())


def test_a_second_store_cannot_open_a_file_in_use(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "db")
    with pytest.raises(StoreError, match="in use"):
        SQLiteStore(tmp_path / "db")
    run(first.close())
    run(SQLiteStore(tmp_path / "db").close())


def test_disk_use_stays_bounded_under_steady_writes_with_compaction(tmp_path: Path) -> None:
    path = tmp_path / "db"
    keys, per_round, rounds = 50, 1000, 8

    def on_disk() -> int:
        return sum(p.stat().st_size for p in tmp_path.iterdir() if p.name.startswith("db"))

    async def main() -> list[int]:
        store = SQLiteStore(path)
        await asyncio.gather(*(store.create(f"k/{k}", {}) for k in range(keys)))
        sizes = []
        for r in range(rounds):
            for _ in range(per_round // keys):
                await asyncio.gather(
                    *(
                        store.update(f"k/{k}", {"r": r, "pad": "x" * 2000}, None)
                        for k in range(keys)
                    )
                )
            await store.compact(store.revision - 100)
            sizes.append(on_disk())
        await store.close()
        return sizes

    sizes = run(main())
    assert max(sizes[3:]) <= sizes[2] * 1.2, sizes


def test_changes_a_failed_compaction_left_on_disk_go_when_the_store_reopens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_compact = SQLiteLog.compact
    failures = iter([True])

    def flaky_compact(self: SQLiteLog, revision: int, dropped: Any) -> None:
        if next(failures, False):
            raise OSError("disk on fire")
        real_compact(self, revision, dropped)

    monkeypatch.setattr(SQLiteLog, "compact", flaky_compact)
    path = tmp_path / "db"

    async def write_and_compact() -> tuple[Any, ...]:
        store = SQLiteStore(path)
        await store.create("k/a", {"v": 1})
        await store.create("k/b", {"v": 1})
        await store.update("k/a", {"v": 2}, None)
        await store.delete("k/b")
        with pytest.raises(OSError):
            await store.compact(store.revision)
        await store.create("k/c", {"v": 1})
        await store.compact(store.revision)
        seen = await everything(store)
        await store.close()
        return seen

    async def reopen() -> tuple[Any, ...]:
        store = SQLiteStore(path)
        seen = (*await everything(store), store.retained_versions)
        await store.close()
        return seen

    before = run(write_and_compact())
    assert run(reopen()) == (*before, 2)
    log = SQLiteLog(str(path))
    assert [row[1] for row in log.rows()] == ["k/a", "k/c"]
    log.close()


def limit_pages(store: SQLiteStore, pages: int | None) -> None:
    """Let the store's file grow to `pages` pages (its size now, when None): a full disk,
    without root. The limit is per connection, so it is set on the store's own, on its
    thread."""
    db = store._log._db

    def limit() -> None:
        count = pages or db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count={count}")

    store._executor.submit(limit).result()


def test_a_full_disk_refuses_writes_in_sqlites_words_until_space_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        store = SQLiteStore(tmp_path / "db")
        await store.create("a", {"v": 1})
        limit_pages(store, None)
        with pytest.raises(StorageError) as e:
            await store.create("b", {"big": "x" * 100_000})
        assert str(e.value) == "sqlite: database or disk is full"
        assert await store.write_failure() == "sqlite: database or disk is full"
        assert (await store.list("")).items == [await store.get("a")]
        limit_pages(store, 1_000_000)
        assert await store.write_failure() is None
        await store.create("b", {"big": "x" * 100_000})
        await store.close()

    run(main())
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "1 writes not committed: sqlite: database or disk is full"
    ]
    assert not any(r.exc_info for r in caplog.records)
    reopened = SQLiteStore(tmp_path / "db")
    assert reopened.count("") == 2
    run(reopened.close())
