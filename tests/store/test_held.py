"""The latest change of a live key, held as written once it leaves the recent changes: read back
as the object written, replayed by watches and listed at every revision as before, bounded (the
key written longest ago is packed first, and settles as compaction would have left it), and let
go when its key is deleted."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pinnace.clock import VirtualClock
from pinnace.store import MemoryStore, Watch, WatchEvent
from pinnace.store.mvcc import MvccState


def _write(state: MvccState, type: Any, key: str, n: int) -> dict[str, Any]:
    obj = {"kind": "Pod", "n": n}
    state.apply(WatchEvent(type, key, obj, None, state.revision + 1))
    return obj


def _filler(state: MvccState, n: int) -> None:
    """Changes of keys written once, which push the others out of the recent ones."""
    for _ in range(n):
        _write(state, "ADDED", f"events/ns/e{state.revision + 1}", state.revision + 1)


def test_a_live_keys_latest_change_is_read_as_written_long_after_it_left_the_recent_ones() -> None:
    state = MvccState(recent_versions=2, held_versions=100)
    pod = _write(state, "ADDED", "pods/ns/a", 2)
    _filler(state, 50)
    assert state.get("pods/ns/a", state.revision) is pod
    latest = state.latest("pods/ns/a")
    assert latest is not None and latest.object is pod
    # Replaced, it is packed: each read of it now is a copy.
    bound = _write(state, "MODIFIED", "pods/ns/a", state.revision + 1)
    _filler(state, 5)
    before = state.get("pods/ns/a", 2)
    assert before == pod and before is not pod
    assert state.get("pods/ns/a", state.revision) is bound


def test_past_the_bound_the_key_written_longest_ago_is_packed_and_settles() -> None:
    state = MvccState(recent_versions=1, held_versions=3, block=1, segment_bytes=256)
    written = {f"pods/ns/p{i}": _write(state, "ADDED", f"pods/ns/p{i}", i + 2) for i in range(6)}
    _write(state, "ADDED", "configmaps/ns/c", 8)
    assert state.held_versions == 3
    for key, obj in written.items():
        got = state.get(key, state.revision)
        # p0..p2 were written longest ago: packed, read as a copy.
        assert got == obj and (got is obj) == (key >= "pods/ns/p3")
    state.compact(state.revision)
    while state.settle():
        pass
    # p0..p2, and p3, which the configmap's change took the place of as it left the recent.
    assert state._settled.count("pods/", None) == 4
    # More keys written: the held ones compaction has passed are packed and settle.
    _filler(state, 4)
    while state.settle():
        pass
    assert state.held_versions == 3
    assert state._settled.count("pods/", None) == 6
    assert [o["n"] for o in state.list("pods/", state.revision, 0, None).items] == list(range(2, 8))
    assert state.get("pods/ns/p5", state.revision) == written["pods/ns/p5"]


def test_a_deleted_keys_change_is_let_go() -> None:
    state = MvccState(recent_versions=1, held_versions=10)
    a = _write(state, "ADDED", "pods/ns/a", 2)
    _write(state, "ADDED", "pods/ns/b", 3)
    _filler(state, 2)
    assert state.held_versions == 3  # a, b and the first filler; the second is recent
    deleted_at = state.revision + 1
    state.apply(WatchEvent("DELETED", "pods/ns/a", a, None, deleted_at))
    assert state.held_versions == 3  # a let go, the second filler held
    _filler(state, 3)  # the tombstone leaves the recent ones: not held either
    assert state.held_versions == 5
    assert state.get("pods/ns/a", deleted_at - 1) == a
    assert state.get("pods/ns/a", state.revision) is None
    state.compact(state.revision)
    while state.settle():
        pass
    assert "pods/ns/a" not in state._history and "pods/ns/a" not in state._held
    assert state.list("pods/", state.revision, 0, None).items == [{"kind": "Pod", "n": 3}]


@pytest.mark.parametrize("seed", range(4))
def test_watches_from_old_revisions_and_lists_at_them_see_what_was_written(seed: int) -> None:
    """Random writes to few keys, most of them held, some past the bound, with compactions:
    a watch from any retained revision replays every change after it (objects and previous
    objects as written) and a list at any retained revision gives the objects then."""
    rng = random.Random(seed)
    keys = [f"pods/ns/p{i}" for i in range(12)]

    async def body(store: MemoryStore) -> None:
        events: list[WatchEvent] = []  # as a watch from the start would have seen them
        live: dict[str, dict[str, Any]] = {}
        snapshots: dict[int, list[dict[str, Any]]] = {}
        for step in range(300):
            key = rng.choice(keys)
            if key in live and rng.random() < 0.2:
                obj = await store.delete(key)
                events.append(WatchEvent("DELETED", key, obj, live.pop(key), store.revision))
            elif key in live:
                obj = await store.update(key, {"n": step}, None)
                events.append(WatchEvent("MODIFIED", key, obj, live[key], store.revision))
                live[key] = obj
            else:
                obj = await store.create(key, {"n": step})
                events.append(WatchEvent("ADDED", key, obj, None, store.revision))
                live[key] = obj
            snapshots[store.revision] = [live[k] for k in sorted(live)]
            if step % 97 == 96:
                await store.compact(store.revision - rng.randrange(20))
        for revision in range(store.compacted_revision, store.revision + 1, 7):
            if revision in snapshots:
                listed = await store.list("pods/", revision)
                assert listed.items == snapshots[revision]
            expected = [e for e in events if e.revision > revision]
            assert await _take(store.watch("pods/", revision), len(expected)) == expected

    with VirtualClock() as clock:
        store = MemoryStore(recent_versions=2, held_versions=5, settled_block=1, segment_bytes=256)
        clock.run(body(store))


async def _take(watch: Watch, n: int) -> list[WatchEvent]:
    try:
        return [await anext(watch) for _ in range(n)]
    finally:
        watch.close()
