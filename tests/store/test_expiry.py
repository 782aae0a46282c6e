"""Keys under a prefix expire a TTL after their last write (kube-apiserver's --event-ttl)."""

from __future__ import annotations

import asyncio
from typing import Any

from pinnace.clock import VirtualClock
from pinnace.store import KeyNotFoundError, MemoryStore, Store
from pinnace.store.expiry import Expiry
from pinnace.store.interface import ListResult

PREFIX = "core/events/"
TTL = 600.0
WINDOW = 30.0  # a lease is reused for 5% of the TTL (at most 60 s)


async def exists(store: Store, key: str) -> bool:
    try:
        await store.get(key)
    except KeyNotFoundError:
        return False
    return True


def test_a_key_goes_one_ttl_after_its_last_write_and_watchers_see_it_deleted() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()

        async def scenario() -> tuple[list[bool], list[tuple[str, str]]]:
            start = clock.monotonic()
            seen: list[tuple[str, str]] = []

            async def watch_all() -> None:
                async for event in store.watch(PREFIX, 0):
                    seen.append((event.type, event.key))

            watching = asyncio.create_task(watch_all())
            expiry = Expiry(store, clock, PREFIX, TTL)
            await expiry.start()
            await store.create(
                f"{PREFIX}default/once", {"metadata": {"name": "once", "namespace": "default"}}
            )
            await store.create(
                f"{PREFIX}default/again", {"metadata": {"name": "again", "namespace": "default"}}
            )
            await store.create(
                "core/pods/default/p", {"metadata": {"name": "p", "namespace": "default"}}
            )
            await clock.sleep(TTL / 2)
            await store.update(
                f"{PREFIX}default/again",
                {"metadata": {"name": "again", "namespace": "default"}},
                None,
            )
            states = []
            for at in (TTL - 1, TTL + 2 * WINDOW, TTL * 1.5 + 2 * WINDOW):
                await clock.sleep(start + at - clock.monotonic())
                states += [
                    await exists(store, f"{PREFIX}default/once"),
                    await exists(store, f"{PREFIX}default/again"),
                    await exists(store, "core/pods/default/p"),
                ]
            await expiry.stop()
            watching.cancel()
            return states, seen

        states, seen = clock.run(scenario())
        # Before the TTL all stay; after it the key written once goes; the one written again
        # half a TTL later goes half a TTL later; keys outside the prefix never expire.
        assert states == [True, True, True, False, True, True, False, False, True]
        assert ("DELETED", f"{PREFIX}default/once") in seen
        assert ("DELETED", f"{PREFIX}default/again") in seen


def test_keys_stored_before_the_start_get_a_full_ttl_from_then() -> None:
    with VirtualClock() as clock:
        store = MemoryStore()

        async def scenario() -> list[bool]:
            await store.create(
                f"{PREFIX}default/old", {"metadata": {"name": "old", "namespace": "default"}}
            )
            await clock.sleep(TTL * 3)
            expiry = Expiry(store, clock, PREFIX, TTL)
            await expiry.start()
            states = [await exists(store, f"{PREFIX}default/old")]
            await clock.sleep(TTL + 2 * WINDOW)
            states.append(await exists(store, f"{PREFIX}default/old"))
            await expiry.stop()
            return states

        assert clock.run(scenario()) == [True, False]


def test_a_window_deletes_its_keys_in_the_order_they_were_first_written() -> None:
    """A key written twice in a window goes where it was first written (the order of the
    DELETED events watchers see, and of the revisions they take); one written again in a
    later window stays until that window's turn."""
    with VirtualClock() as clock:
        store = MemoryStore()

        def key(name: str) -> str:
            return f"{PREFIX}default/{name}"

        async def write(name: str) -> None:
            obj = {"metadata": {"name": name, "namespace": "default"}}
            try:
                await store.update(key(name), obj, None)
            except KeyNotFoundError:
                await store.create(key(name), obj)

        async def scenario() -> list[str]:
            deleted: list[str] = []

            async def watch_all() -> None:
                async for event in store.watch(PREFIX, 0):
                    if event.type == "DELETED":
                        deleted.append(event.key)

            watching = asyncio.create_task(watch_all())
            expiry = Expiry(store, clock, PREFIX, TTL)
            await expiry.start()
            for name in ("a", "b", "a", "c", "b", "later"):
                await write(name)
            await clock.sleep(WINDOW)
            await write("later")
            await clock.sleep(TTL + WINDOW)
            first = list(deleted)
            await clock.sleep(WINDOW)
            await expiry.stop()
            watching.cancel()
            return [*first, "|", *deleted[len(first) :]]

        assert clock.run(scenario()) == [key("a"), key("b"), key("c"), "|", key("later")]


def test_a_key_written_while_the_start_lists_goes_a_ttl_after_that_write() -> None:
    """A store that reads elsewhere (SQLite's worker thread, etcd) lets writes go on while the
    start lists: the write seen then is the key's last, not the older one the listing read."""
    with VirtualClock() as clock:
        old = f"{PREFIX}default/old"

        def body() -> dict[str, Any]:
            return {"metadata": {"name": "old", "namespace": "default"}}

        class ListingElsewhere(MemoryStore):
            async def list(self, prefix: str, *args: Any, **kwargs: Any) -> ListResult:
                listed = await super().list(prefix, *args, **kwargs)
                await self.update(old, body(), None)  # meanwhile, another writer
                return listed

        store = ListingElsewhere()

        async def scenario() -> list[bool]:
            await store.create(old, body())
            expiry = Expiry(store, clock, PREFIX, TTL)
            await expiry.start()
            await clock.sleep(TTL + 2 * WINDOW)
            gone = not await exists(store, old)
            await expiry.stop()
            return [gone]

        assert clock.run(scenario()) == [True]
