"""Watches: history then live changes, in order, no gaps, no duplicates, bounded buffers."""

from __future__ import annotations

import asyncio

import pytest

from pinnace.store import (
    CompactedError,
    Store,
    Watch,
    WatchClosedError,
    WatchEvent,
    WatchWoken,
)


async def take(watch: Watch, n: int) -> list[WatchEvent]:
    return [await anext(watch) for _ in range(n)]


def test_a_watch_replays_history_after_its_revision_then_goes_live(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(5):
            await store.create(f"cm/ns/{i}", {"i": i})  # revisions 2..6
        watch = store.watch("cm/", 3)
        replayed = await take(watch, 3)
        assert [e.revision for e in replayed] == [4, 5, 6]
        assert [e.object["i"] for e in replayed] == [2, 3, 4]
        await store.update("cm/ns/0", {"i": 10}, None)
        live = await anext(watch)
        assert (live.type, live.key, live.revision, live.object["i"]) == (
            "MODIFIED",
            "cm/ns/0",
            7,
            10,
        )
        assert live.prev_object == {"i": 0, "metadata": {"resourceVersion": "2"}}
        watch.close()

    backend.run(body)


def test_events_carry_type_objects_and_revisions_as_the_api_server_needs(backend) -> None:
    async def body(store: Store) -> None:
        watch = store.watch("pods/", store.revision)
        created = await store.create("pods/ns/a", {"metadata": {"name": "a"}, "v": 1})
        updated = await store.update("pods/ns/a", {"metadata": {"name": "a"}, "v": 2}, 2)
        deleted = await store.delete("pods/ns/a")
        added, modified, gone = await take(watch, 3)
        assert added == WatchEvent("ADDED", "pods/ns/a", created, None, 2)
        assert modified == WatchEvent("MODIFIED", "pods/ns/a", updated, created, 3)
        assert gone == WatchEvent("DELETED", "pods/ns/a", deleted, updated, 4)
        assert gone.object["metadata"]["resourceVersion"] == "4"
        assert gone.object["v"] == 2
        watch.close()

    backend.run(body)


def test_a_watch_sees_only_its_prefix(backend) -> None:
    async def body(store: Store) -> None:
        pods = store.watch("pods/default/", 1)
        everything = store.watch("", 1)
        for key in [
            "pods/default/a",
            "pods/other/a",
            "nodes//n",
            "pods/default/b",
            "pods/defaultx/c",
        ]:
            await store.create(key, {})
        assert [e.key for e in await take(pods, 2)] == ["pods/default/a", "pods/default/b"]
        assert [e.revision for e in await take(everything, 5)] == [2, 3, 4, 5, 6]
        await store.create("pods/default/c", {})
        assert (await anext(pods)).key == "pods/default/c"
        pods.close()
        everything.close()

    backend.run(body)


def test_live_changes_reach_every_watch_whose_prefix_they_start_with(backend) -> None:
    """Prefixes of any shape, shorter or longer than a kind's, also ones first watched after
    changes have flowed, and after the last watch of a prefix has gone."""
    keys = ["pods/default/a", "pods/defaultx/b", "pods/other/c", "nodes/n", "loose", "pods/", "x/y"]
    prefixes = ["", "p", "pods/", "pods/default", "pods/default/", "nodes/n", "loose", "x/"]

    async def body(store: Store) -> None:
        async def live(prefix: str) -> Watch:
            watch = store.watch(prefix, store.revision)
            task = asyncio.ensure_future(anext(watch))
            await store.create(f"{prefix}~probe", {})  # the watch is live once it sees this
            await task
            return watch

        first = {prefix: await live(prefix) for prefix in prefixes[:4]}
        await store.create("pods/default/early", {})
        later = {prefix: await live(prefix) for prefix in prefixes[4:]}
        first.pop("p").close()
        watches = {**first, **later}
        start = store.revision
        for key in keys:
            await store.create(key, {})
        for prefix, watch in watches.items():
            wanted = [key for key in keys if key.startswith(prefix)]
            seen: list[str] = []
            while wanted[-1] not in seen:
                event = await anext(watch)
                if event.revision > start:
                    seen.append(event.key)
            assert seen == wanted, prefix
            watch.close()

    backend.run(body)


def test_concurrent_watchers_see_every_change_once_in_the_same_order(backend) -> None:
    writers, writes_each = 8, 25

    async def body(store: Store) -> None:
        early = store.watch("k/", 1)
        mid_revision = store.revision

        async def writer(w: int) -> None:
            for i in range(writes_each):
                key = f"k/{w}/{i % 5}"
                if i < 5:
                    await store.create(key, {"w": w, "i": i})
                elif i % 7 == 0:
                    await store.delete(key)
                    await store.create(key, {"w": w, "i": i})
                else:
                    await store.update(key, {"w": w, "i": i}, None)

        async def consume(watch: Watch) -> list[WatchEvent]:
            events = []
            async for event in watch:
                events.append(event)
                if event.key == "k/~done":
                    return events
            raise AssertionError("watch ended early")

        live = store.watch("k/", mid_revision)
        consumers = [asyncio.ensure_future(consume(w)) for w in (early, live)]
        await asyncio.sleep(0)
        await asyncio.gather(*(writer(w) for w in range(writers)))
        await store.create("k/~done", {})
        final = store.revision
        late = store.watch("k/", 1)  # replays everything from history
        seen = await asyncio.gather(*consumers, consume(late))
        revisions = [e.revision for e in seen[0]]
        assert revisions == list(range(2, final + 1)), "every change, once, in order"
        assert seen[0] == seen[1] == seen[2]

    backend.run(body)


def test_a_slow_watcher_is_closed_while_writers_and_other_watchers_go_on(backend) -> None:
    async def body(store: Store) -> None:
        slow = store.watch("k/", 1)
        fast = store.watch("k/", 1)
        first = asyncio.ensure_future(anext(slow))
        await asyncio.sleep(0)  # slow has caught up and waits for live events
        await store.create("k/first", {})
        assert (await first).key == "k/first"  # then it never reads again
        fast_events = []

        async def read_fast() -> None:
            async for event in fast:
                fast_events.append(event.revision)

        reader = asyncio.ensure_future(read_fast())
        for i in range(100):
            await store.create(f"k/{i}", {"i": i})
        with pytest.raises(WatchClosedError, match="fell 8 events behind"):
            await anext(slow)
        with pytest.raises(WatchClosedError):
            await anext(slow)  # and stays closed
        await asyncio.sleep(0)
        while len(fast_events) < 101:
            await asyncio.sleep(0.001)
        assert fast_events == list(range(2, 103))
        fast.close()
        await reader

    backend.run(body, watch_buffer=8)


def test_close_ends_iteration_and_async_with_closes(backend) -> None:
    async def body(store: Store) -> None:
        watch = store.watch("", 1)
        waiting = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0)
        watch.close()
        with pytest.raises(StopAsyncIteration):
            await waiting
        async with store.watch("", 1) as scoped:
            await store.create("k", {})
            assert (await anext(scoped)).key == "k"
        with pytest.raises(StopAsyncIteration):
            await anext(scoped)

    backend.run(body)


def test_closing_the_store_ends_every_watch(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k/1", {})
        live = store.watch("k/", 1)
        await anext(live)
        waiting = asyncio.ensure_future(anext(live))
        replaying = store.watch("k/", 1)  # not read yet
        await asyncio.sleep(0)
        await store.close()
        with pytest.raises(WatchClosedError):
            await waiting
        with pytest.raises(WatchClosedError):
            await anext(replaying)

    backend.run(body)


def test_ending_the_watches_of_a_prefix_delivers_what_they_hold_first(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k/ns/1", {})
        live = store.watch("k/ns/", 1)
        await anext(live)
        other = store.watch("j/", 1)
        await store.create("k/ns/2", {})
        replaying = store.watch("k/", 1)  # not read yet
        store.end_watches("k/")
        assert (await anext(live)).key == "k/ns/2"
        with pytest.raises(WatchClosedError):
            await anext(live)
        assert [e.key for e in await take(replaying, 2)] == ["k/ns/1", "k/ns/2"]
        with pytest.raises(WatchClosedError):
            await anext(replaying)
        await store.create("j/1", {})
        assert (await anext(other)).key == "j/1"
        later = store.watch("k/", 0)
        await store.create("k/ns/3", {})
        assert (await anext(later)).key == "k/ns/3"

    backend.run(body)


def test_a_watch_from_a_future_revision_starts_after_it(backend) -> None:
    async def body(store: Store) -> None:
        watch = store.watch("", 3)
        for i in range(4):
            await store.create(f"k/{i}", {})  # revisions 2..5
        assert [e.revision for e in await take(watch, 2)] == [4, 5]
        watch.close()

    backend.run(body)


def test_a_watch_from_a_compacted_revision_is_refused(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(5):
            await store.create(f"k/{i}", {})
        await store.compact(4)
        with pytest.raises(CompactedError) as caught:
            store.watch("k/", 3)
        assert (caught.value.requested, caught.value.compacted) == (3, 4)
        watch = store.watch("k/", 4)
        assert [e.revision for e in await take(watch, 2)] == [5, 6]
        watch.close()

    backend.run(body)


def test_a_replaying_watch_overtaken_by_compaction_fails_with_compacted(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(5):
            await store.create(f"k/{i}", {})
        watch = store.watch("k/", 1)
        assert (await anext(watch)).revision == 2
        await store.compact(5)
        with pytest.raises(CompactedError):
            await anext(watch)

    backend.run(body)


def test_a_watch_from_revision_0_starts_now(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(3):
            await store.create(f"k/{i}", {})  # revisions 2..4: history the watch skips
        watch = store.watch("k/", 0)
        await store.update("k/0", {"v": 1}, None)
        event = await anext(watch)
        assert (event.type, event.key, event.revision) == ("MODIFIED", "k/0", 5)
        watch.close()

    backend.run(body)


def test_a_watcher_closed_for_lagging_resumes_from_its_last_revision(backend) -> None:
    async def body(store: Store) -> None:
        watch = store.watch("k/", store.revision)
        seen: list[int] = []
        waiting = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0)  # caught up: now live, with a buffer of 4
        await store.create("k/a", {})
        seen.append((await waiting).revision)
        for i in range(20):
            await store.update("k/a", {"i": i}, None)
        with pytest.raises(WatchClosedError, match="fell 4 events behind"):
            async for event in watch:
                seen.append(event.revision)
        resumed = store.watch("k/", seen[-1])
        seen.extend(e.revision for e in await take(resumed, store.revision - seen[-1]))
        assert seen == list(range(2, store.revision + 1)), "no gap, no duplicate"
        resumed.close()

    backend.run(body, watch_buffer=4)


def test_a_watch_closed_while_replaying_delivers_nothing_more(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(5):
            await store.create(f"k/{i}", {})
        watch = store.watch("k/", 1)
        assert (await anext(watch)).revision == 2
        watch.close()
        watch.close()  # idempotent
        await store.create("k/late", {})
        with pytest.raises(StopAsyncIteration):
            await anext(watch)
        assert [e async for e in watch] == []

    backend.run(body)


def test_ready_takes_buffered_live_events_without_waiting_up_to_a_limit(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k/old", {})
        watch = store.watch("k/", 1)
        assert watch.ready(10) == []  # history is replayed through anext, not taken here
        assert (await anext(watch)).key == "k/old"
        waiting = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0)  # caught up: now live
        for i in range(4):
            await store.create(f"k/{i}", {})
        assert (await waiting).key == "k/0"
        assert [e.key for e in watch.ready(2)] == ["k/1", "k/2"]
        assert [e.key for e in watch.ready(10)] == ["k/3"]
        assert watch.ready(10) == []
        watch.close()

    backend.run(body)


def test_a_woken_watch_gives_its_events_first_then_raises_woken_once(backend) -> None:
    async def body(store: Store) -> None:
        watch = store.watch("w/", store.revision)
        waiting = asyncio.ensure_future(anext(watch))
        await asyncio.sleep(0)
        assert watch.wake()
        with pytest.raises(WatchWoken):
            await waiting
        await store.create("w/a", {})
        assert watch.wake()
        assert (await anext(watch)).key == "w/a"  # what it holds comes first
        with pytest.raises(WatchWoken):
            await anext(watch)
        again = asyncio.ensure_future(anext(watch))  # once: now it waits for events again
        await asyncio.sleep(0)
        assert not again.done()
        await store.create("w/b", {})
        assert (await again).key == "w/b"
        watch.close()

    backend.run(body)
