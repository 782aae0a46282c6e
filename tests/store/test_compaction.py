"""Compaction: what stays readable, what is refused, and that history stays bounded."""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
import tracemalloc

import pytest

from pinnace.clock import VirtualClock
from pinnace.store import (
    CompactedError,
    Compactor,
    ConflictError,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    MemoryStore,
    Store,
    base,
)
from pinnace.store.codec import LEARN_AT


async def write_history(store: Store) -> dict[int, list[tuple[str, int]]]:
    """A few keys through creates, updates and deletes; the list at every revision."""
    script = [
        ("create", "k/a", 1),
        ("create", "k/b", 1),
        ("update", "k/a", 2),
        ("delete", "k/b", 0),
        ("create", "k/c", 1),
        ("update", "k/a", 3),
        ("create", "k/b", 2),
        ("delete", "k/c", 0),
        ("update", "k/b", 3),
    ]
    snapshots = {}
    for op, key, value in script:
        if op == "create":
            await store.create(key, {"v": value})
        elif op == "update":
            await store.update(key, {"v": value}, None)
        else:
            await store.delete(key)
        snapshots[store.revision] = await listing(store, store.revision)
    return snapshots


async def listing(store: Store, revision: int) -> list[tuple[str, int]]:
    result = await store.list("k/", revision=revision)
    return [(o["metadata"]["resourceVersion"], o["v"]) for o in result.items]


@pytest.mark.parametrize("compact_to", [2, 5, 6, 9, 10])
def test_everything_at_or_after_the_compacted_revision_reads_as_before(
    backend, compact_to: int
) -> None:
    async def body(store: Store) -> None:
        snapshots = await write_history(store)
        await store.compact(compact_to)
        assert store.compacted_revision == compact_to
        for revision, expected in snapshots.items():
            if revision >= compact_to:
                assert await listing(store, revision) == expected
                page = await store.list("k/", revision=revision, limit=1)
                assert page.remaining == max(0, len(expected) - 1)
            else:
                with pytest.raises(CompactedError) as caught:
                    await store.list("k/", revision=revision)
                assert (caught.value.requested, caught.value.compacted) == (revision, compact_to)
                with pytest.raises(CompactedError):
                    await store.get("k/a", revision)
                with pytest.raises(CompactedError):
                    store.watch("k/", revision)
        assert (await store.get("k/a"))["v"] == 3
        with pytest.raises(KeyNotFoundError):
            await store.get("k/c")
        assert store.count("k/") == len(snapshots[store.revision])

    backend.run(body)


def test_compaction_keeps_each_keys_latest_however_old(backend) -> None:
    async def body(store: Store) -> None:
        old = await store.create("k/old", {"v": 1})
        for i in range(20):
            await store.update("k/hot", {"v": i}, None) if i else await store.create(
                "k/hot", {"v": i}
            )
        await store.compact(store.revision)
        assert await store.get("k/old") == old
        assert (await store.get("k/hot"))["v"] == 19
        assert store.retained_versions == 2

    backend.run(body)


def test_keys_unchanged_since_the_compacted_revision_are_read_written_and_watched_as_before(
    backend,
) -> None:
    async def body(store: Store) -> None:
        a = await store.create("k/a", {"v": 1})
        b = await store.create("k/b", {"v": 2})
        await store.create("other/c", {})
        compacted = store.revision
        await store.compact(compacted)
        with pytest.raises(KeyExistsError):
            await store.create("k/a", {})
        with pytest.raises(ConflictError):
            await store.update("k/a", {"v": 3}, rv(b))
        watch = store.watch("k/", compacted)
        updated = await store.update("k/a", {"v": 3}, rv(a))
        await store.delete("k/b", rv(b))
        changes = [await anext(watch), await anext(watch)]
        watch.close()
        assert [(c.type, c.key, c.prev_object) for c in changes] == [
            ("MODIFIED", "k/a", a),
            ("DELETED", "k/b", b),
        ]
        assert await store.get("k/a", compacted) == a
        assert (await store.list("k/", compacted)).items == [a, b]
        assert (await store.list("k/")).items == [updated]
        assert store.count("k/") == 1
        await store.compact(store.revision)
        assert await store.get("k/a") == updated
        with pytest.raises(KeyNotFoundError):
            await store.get("k/b")

    backend.run(body)


def test_compactions_and_writes_running_together_keep_every_key(backend, monkeypatch) -> None:
    """Compactions interleave their steps and the settling of what they leave with each other
    and with writes (small steps, each followed by a turn of the loop, make them interleave
    often)."""
    monkeypatch.setattr(base, "COMPACTION_STEP", 40)
    monkeypatch.setattr(base, "COMPACTION_SLICE", 0.0)

    async def body(store: Store) -> None:
        values = {f"k/{i:04}": i for i in range(700)}
        for key, value in values.items():
            await store.create(key, {"v": value})
        first = store.revision
        for key in list(values)[::3]:
            values[key] = -values[key]
            await store.update(key, {"v": values[key]}, None)
        changed = list(values)[1::7]
        for key in changed:
            values[key] += 1000
        await asyncio.gather(
            store.compact(first),
            store.compact(store.revision),
            *(store.update(key, {"v": values[key]}, None) for key in changed),
        )
        assert [o["v"] for o in (await store.list("k/")).items] == list(values.values())
        await store.compact(store.revision)
        assert store.retained_versions == len(values)
        for key in list(values)[::50]:
            assert (await store.get(key))["v"] == values[key]
        assert [o["v"] for o in (await store.list("k/")).items] == list(values.values())

    backend.run(body)


def test_on_the_virtual_clock_no_task_sees_a_compaction_halfway_however_slow_the_machine(
    monkeypatch,
) -> None:
    """A simulation must not depend on the machine's speed: a compaction on the virtual loop
    runs to its end before any other task runs, even when it takes long in real time (here a
    wall clock that jumps a second each time it is read)."""
    monkeypatch.setattr(base, "COMPACTION_STEP", 40)
    reads = itertools.count()
    wall = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: wall() + next(reads))

    async def body() -> list[int]:
        store = MemoryStore()
        for i in range(400):
            await store.create(f"k/{i}", {})
        seen = []

        async def look() -> None:
            for _ in range(20):
                seen.append(store.compacted_revision)
                await asyncio.sleep(0)

        await asyncio.gather(store.compact(store.revision), look())
        return sorted(set(seen))

    with VirtualClock() as clock:
        assert clock.run(body()) == [401]


def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_compaction_forgets_deleted_keys(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(10):
            await store.create(f"k/{i}", {})
        for i in range(10):
            await store.delete(f"k/{i}")
        assert store.retained_versions == 20
        await store.compact(store.revision)
        assert store.retained_versions == 0
        assert (await store.list("k/")).items == []
        assert store.count("k/") == 0
        await store.create("k/5", {})
        assert store.count("k/") == 1

    backend.run(body)


def test_compacting_backwards_does_nothing_and_forwards_too_far_is_refused(backend) -> None:
    async def body(store: Store) -> None:
        await write_history(store)
        await store.compact(6)
        await store.compact(3)
        assert store.compacted_revision == 6
        with pytest.raises(FutureRevisionError):
            await store.compact(store.revision + 1)
        await store.compact(store.revision)
        assert store.compacted_revision == store.revision

    backend.run(body)


def test_a_long_compaction_runs_in_steps_and_watches_resume_after_it(
    backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pinnace.store.base.COMPACTION_STEP", 7)

    async def body(store: Store) -> None:
        for i in range(60):
            await store.create(f"k/{i % 6}", {"i": i}) if i < 6 else await store.update(
                f"k/{i % 6}", {"i": i}, None
            )
        await store.compact(50)
        assert store.compacted_revision == 50
        assert store.retained_versions == 6 + 11
        watch = store.watch("k/", 50)
        assert [(await anext(watch)).object["i"] for _ in range(11)] == list(range(49, 60))
        watch.close()

    backend.run(body)


async def packed_what_it_was_handed(store: Store) -> None:
    """Wait for a store that packs on a thread ("ahead") to have packed every change handed to
    it: on a loaded machine the thread falls behind, and its queue holds objects the store has
    already let go, which a memory sample would count."""
    packer = getattr(store, "_packer", None)
    if packer is not None:
        await asyncio.sleep(0)  # this turn's changes handed over
        await asyncio.wrap_future(packer._executor.submit(lambda: None))


_HELD_BY_THE_STORE = (
    tracemalloc.Filter(True, "*/pinnace/store/*"),
    tracemalloc.Filter(True, __file__),
)


def held_by_the_store() -> int:
    """The bytes traced to the store's code and this file's (the objects it stores), with the
    garbage in cycles collected: not what other threads a test worker still runs allocate (a
    gRPC client's, left by another test file), which made the test fail now and then in CI."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(_HELD_BY_THE_STORE)
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_history_stays_bounded_under_steady_writes_with_compaction(backend) -> None:
    keys, per_round, rounds = 50, 500, 6
    # A kind of its own, traced from before it has a packing dictionary: it learns one once,
    # and later only replaces it (the one replaced must be traced to count as freed).
    kind = f"BoundedHistory{backend.name}"

    def obj(v: int) -> dict:
        return {"kind": kind, "v": v, "pad": "x" * 200}

    async def body(store: Store) -> None:
        tracemalloc.start()
        try:
            for _ in range(min(LEARN_AT)):
                store.codec.pack(obj(0))
            for k in range(keys):
                await store.create(f"k/{k}", obj(0))
            sizes = []
            for r in range(rounds):
                for _ in range(per_round // keys):
                    await asyncio.gather(
                        *(store.update(f"k/{k}", obj(r), None) for k in range(keys))
                    )
                await store.compact(store.revision - per_round)
                await packed_what_it_was_handed(store)
                sizes.append(held_by_the_store())
        finally:
            tracemalloc.stop()
        # Memory after the first rounds stays flat: later rounds add nothing lasting.
        assert max(sizes[2:]) < sizes[1] * 1.1 + 50_000, sizes
        assert store.retained_versions <= keys + per_round

    backend.run(body)


def test_the_compactor_follows_kube_apiservers_schedule_on_virtual_time() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()
        compactor = Compactor(store, clock, interval=300)
        seen: list[tuple[float, int, int]] = []

        async def writer() -> None:
            await store.create("k", {"v": 0})
            for i in range(1, 3600):
                await clock.sleep(1)
                await store.update("k", {"v": i}, None)
                if i % 300 == 1:
                    seen.append((i, store.revision, store.compacted_revision))

        clock.run(compactor.start())
        clock.run(writer())
        clock.run(compactor.stop())
        # Each run compacts to the revision the run before saw (at t=300: 301, the create
        # and 299 updates), so one interval of history is kept.
        assert seen[:3] == [(1, 3, 1), (301, 303, 1), (601, 603, 301)]
        assert store.retained_versions <= 601
        assert store.revision - store.compacted_revision <= 600


def test_the_compactor_with_keep_retains_that_many_revisions() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()
        compactor = Compactor(store, clock, interval=60, keep=10)

        async def writer() -> None:
            for i in range(100):
                await store.create(f"k/{i}", {})
            await clock.sleep(61)

        clock.run(compactor.start())
        clock.run(writer())
        clock.run(compactor.stop())
        assert store.compacted_revision == store.revision - 10
