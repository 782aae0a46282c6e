"""Random operation sequences against a model: results, MVCC snapshots and watch replay."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinnace.store import (
    ConflictError,
    KeyExistsError,
    KeyNotFoundError,
    Store,
    StoreError,
    Watch,
    WatchEvent,
)

KEYS = ["a/1", "a/2", "b/1", "b/22"]

# (operation, key, value, precondition): precondition "none" is unconditional, "read" the
# key's current revision, "stale" an older one.
operations = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "delete"]),
        st.sampled_from(KEYS),
        st.integers(0, 9),
        st.sampled_from(["none", "read", "stale"]),
    ),
    max_size=30,
)
property_settings = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


async def apply(
    store: Store, op: str, key: str, value: int, precondition: str, expected: int | None
) -> dict[str, Any]:
    if precondition == "none":
        expected = None
    elif precondition == "stale" and expected is not None:
        expected -= 1
    if op == "create":
        return await store.create(key, {"k": key, "v": value})
    if op == "update":
        return await store.update(key, {"k": key, "v": value}, expected)
    return await store.delete(key, expected)


def replay(events: list[WatchEvent], start: dict[str, Any] | None = None) -> dict[str, Any]:
    state: dict[str, Any] = dict(start or {})
    for event in events:
        if event.type == "DELETED":
            del state[event.key]
        else:
            state[event.key] = event.object
    return state


async def drain(watch: Watch, until: int) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    while not events or events[-1].revision < until:
        events.append(await anext(watch))
    watch.close()
    return events


# Operations as above, or "compact" to the revision `value` tenths of the way from the
# compacted revision to the current one.
operations_and_compactions = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "delete", "compact"]),
        st.sampled_from(KEYS),
        st.integers(0, 9),
        st.sampled_from(["none", "read", "stale"]),
    ),
    max_size=40,
)


@property_settings
@given(ops=operations_and_compactions)
def test_sequential_operations_match_a_model(backend, ops) -> None:
    """Compactions included: what they keep (settled keys among it) reads as before."""

    async def body(store: Store) -> None:
        model: dict[str, tuple[int, int]] = {}  # key -> (value, revision)
        snapshots = {store.revision: {}}
        for op, key, value, precondition in ops:
            if op == "compact":
                compacted = store.compacted_revision
                await store.compact(compacted + (store.revision - compacted) * value // 9)
                continue
            current = model.get(key)
            expected = current[1] if current else None
            try:
                result = await apply(store, op, key, value, precondition, expected)
            except KeyExistsError:
                assert op == "create" and current is not None
            except KeyNotFoundError:
                assert op != "create" and current is None
            except ConflictError as conflict:
                assert precondition == "stale" and current is not None
                assert conflict.current["v"] == current[0]
            else:
                revision = int(result["metadata"]["resourceVersion"])
                assert revision == store.revision == max(snapshots) + 1
                if op == "create":
                    assert current is None
                else:
                    assert current is not None and precondition != "stale"
                if op == "delete":
                    assert result["v"] == current[0]
                    del model[key]
                else:
                    model[key] = (value, revision)
                snapshots[revision] = {k: v for k, (v, _) in model.items()}

        for revision, snapshot in snapshots.items():
            if revision < store.compacted_revision:
                continue
            listed = await store.list("", revision=revision)
            assert {k: o["v"] for k, o in zip(sorted(snapshot), listed.items, strict=True)} == (
                snapshot
            )
            a_only = await store.list("a/", revision=revision)
            assert [o["v"] for o in a_only.items] == [
                v for k, v in sorted(snapshot.items()) if k.startswith("a/")
            ]
            for prefix in ("", "a/", "b/"):
                await check_pages(store, prefix, revision, snapshot)
        compacted = store.compacted_revision
        if store.revision > compacted:
            everything = await drain(store.watch("", compacted), store.revision)
            assert [e.revision for e in everything] == list(
                range(compacted + 1, store.revision + 1)
            )
            start = {k: {"v": v} for k, v in snapshots[compacted].items()}
            assert {k: o["v"] for k, o in replay(everything, start).items()} == {
                k: v for k, (v, _) in model.items()
            }
        for key in KEYS:
            if key in model:
                assert (await store.get(key))["v"] == model[key][0]
            assert store.revision_of(key) == (model[key][1] if key in model else None)

    backend.run(body)


async def check_pages(store: Store, prefix: str, revision: int, snapshot: dict[str, int]) -> None:
    """Every page of one object, after each possible key: the items and the count left."""
    expected = sorted(k for k in snapshot if k.startswith(prefix))
    for start_after in [None, *KEYS, "a", "b/3"]:
        after = [k for k in expected if start_after is None or k > start_after]
        page = await store.list(prefix, revision=revision, limit=1, start_after=start_after)
        assert [o["k"] for o in page.items] == after[:1]
        assert page.remaining == max(0, len(after) - 1)
        assert page.continue_key == (after[0] if len(after) > 1 else None)
    if revision == store.revision:
        assert store.count(prefix) == len(expected)


@property_settings
@given(rounds=st.lists(operations, max_size=5))
def test_concurrent_operations_are_replayed_exactly_by_watches(backend, rounds) -> None:
    """Writes started together (one group commit for SQLite): every acknowledged write is
    in the watch stream at its revision, nothing else is, and replay gives the final state."""

    async def body(store: Store) -> None:
        acknowledged: dict[int, dict[str, Any]] = {}
        start = store.revision  # 1, but on a shared etcd the revision its writes start after
        watch_a = store.watch("a/", start)
        for ops in rounds:
            read = {o["k"]: o["metadata"]["resourceVersion"] for o in await _latest(store)}
            results = await asyncio.gather(
                *(
                    apply(store, op, key, value, precondition, _int(read.get(key)))
                    for op, key, value, precondition in ops
                ),
                return_exceptions=True,
            )
            for result in results:
                if isinstance(result, dict):
                    acknowledged[int(result["metadata"]["resourceVersion"])] = result
                else:
                    assert isinstance(result, StoreError), result
        assert sorted(acknowledged) == list(range(start + 1, store.revision + 1))
        if store.revision == start:
            return
        events = await drain(store.watch("", start), store.revision)
        assert {e.revision: e.object for e in events} == acknowledged
        final = replay(events)
        assert [final[key] for key in sorted(final)] == await _latest(store)
        a_events = [e for e in events if e.key.startswith("a/")]
        if a_events:
            assert await drain(watch_a, a_events[-1].revision) == a_events

    backend.run(body)


async def _latest(store: Store) -> list[dict[str, Any]]:
    return (await store.list("")).items


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None
