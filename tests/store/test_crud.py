"""Create, get, update, delete: revisions, errors, and that an error changes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pinnace.store import (
    ConflictError,
    KeyExistsError,
    KeyNotFoundError,
    Store,
    StoreError,
)


def pod(name: str, **fields: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, **fields}


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_a_new_store_is_at_revision_1_and_empty(backend) -> None:
    async def body(store: Store) -> None:
        assert store.revision == 1
        assert store.compacted_revision == 1
        result = await store.list("")
        assert (result.items, result.revision, result.continue_key) == ([], 1, None)
        assert store.count("") == 0

    backend.run(body)


def test_every_write_takes_the_next_revision_and_stamps_it(backend) -> None:
    async def body(store: Store) -> None:
        created = await store.create("pods/default/a", pod("a"))
        assert rv(created) == 2 == store.revision
        assert created["metadata"] == {
            "name": "a",
            "namespace": "default",
            "resourceVersion": "2",
        }
        await store.create("pods/default/b", pod("b"))
        updated = await store.update("pods/default/a", pod("a", spec={"x": 1}), 2)
        assert rv(updated) == 4
        assert await store.get("pods/default/a") == updated
        deleted = await store.delete("pods/default/a")
        assert rv(deleted) == 5 == store.revision
        assert deleted["spec"] == {"x": 1}, "a deletion returns the last state"
        with pytest.raises(KeyNotFoundError):
            await store.get("pods/default/a")

    backend.run(body)


def test_the_store_sets_resource_version_whatever_the_caller_sent(backend) -> None:
    async def body(store: Store) -> None:
        obj = pod("a")
        obj["metadata"]["resourceVersion"] = "999"
        assert rv(await store.create("pods/default/a", obj)) == 2
        assert rv(await store.create("k", {})) == 3, "an object without metadata gets some"

    backend.run(body)


def test_a_metadata_dict_shared_with_an_older_object_is_left_alone(backend) -> None:
    async def body(store: Store) -> None:
        first = await store.create("pods/default/a", pod("a"))
        # A careless caller: shallow copy, same metadata dict as the stored object.
        second = dict(first)
        await store.update("pods/default/a", second, rv(first))
        assert rv(first) == 2, "the object handed out earlier never changes"
        assert rv(await store.get("pods/default/a", revision=2)) == 2

    backend.run(body)


def test_create_of_an_existing_key_fails_and_changes_nothing(backend) -> None:
    async def body(store: Store) -> None:
        original = await store.create("pods/default/a", pod("a", spec={"v": 1}))
        with pytest.raises(KeyExistsError) as caught:
            await store.create("pods/default/a", pod("a", spec={"v": 2}))
        assert caught.value.key == "pods/default/a"
        assert store.revision == 2
        assert await store.get("pods/default/a") == original

    backend.run(body)


def test_a_deleted_key_can_be_created_again(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("pods/default/a", pod("a"))
        await store.delete("pods/default/a")
        again = await store.create("pods/default/a", pod("a", spec={"second": True}))
        assert rv(again) == 4
        assert (await store.get("pods/default/a"))["spec"] == {"second": True}

    backend.run(body)


@pytest.mark.parametrize("operation", ["update", "delete"])
def test_update_or_delete_of_a_missing_key_is_not_found(backend, operation: str) -> None:
    async def body(store: Store) -> None:
        await store.create("pods/default/gone", pod("gone"))
        await store.delete("pods/default/gone")
        for key in ["pods/default/never", "pods/default/gone"]:
            with pytest.raises(KeyNotFoundError) as caught:
                if operation == "update":
                    await store.update(key, pod("x"), None)
                else:
                    await store.delete(key)
            assert caught.value.key == key
        assert store.revision == 3

    backend.run(body)


@pytest.mark.parametrize("operation", ["update", "delete"])
def test_a_stale_expected_revision_is_a_conflict_carrying_the_current_object(
    backend, operation: str
) -> None:
    async def body(store: Store) -> None:
        await store.create("pods/default/a", pod("a"))
        current = await store.update("pods/default/a", pod("a", spec={"v": 2}), 2)
        with pytest.raises(ConflictError) as caught:
            if operation == "update":
                await store.update("pods/default/a", pod("a", spec={"v": 3}), 2)
            else:
                await store.delete("pods/default/a", expected_revision=2)
        assert caught.value.key == "pods/default/a"
        assert caught.value.current == current
        assert store.revision == 3
        assert await store.get("pods/default/a") == current

    backend.run(body)


def test_unconditional_update_and_delete_ignore_the_revision(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("pods/default/a", pod("a"))
        await store.update("pods/default/a", pod("a", spec={"v": 2}), None)
        assert (await store.update("pods/default/a", pod("a", spec={"v": 3}), None))["spec"] == {
            "v": 3
        }
        assert rv(await store.delete("pods/default/a", expected_revision=4)) == 5

    backend.run(body)


def test_of_two_concurrent_updates_from_the_same_revision_exactly_one_wins(backend) -> None:
    async def body(store: Store) -> None:
        read = rv(await store.create("pods/default/a", pod("a")))
        results = await asyncio.gather(
            store.update("pods/default/a", pod("a", spec={"by": "one"}), read),
            store.update("pods/default/a", pod("a", spec={"by": "two"}), read),
            return_exceptions=True,
        )
        winners = [r for r in results if isinstance(r, dict)]
        losers = [r for r in results if isinstance(r, ConflictError)]
        assert len(winners) == 1 and len(losers) == 1
        assert losers[0].current == winners[0] == await store.get("pods/default/a")
        assert store.revision == 3

    backend.run(body)


def test_of_many_concurrent_creates_of_one_key_exactly_one_wins(backend) -> None:
    async def body(store: Store) -> None:
        results = await asyncio.gather(
            *(store.create("pods/default/a", pod("a", spec={"n": n})) for n in range(10)),
            return_exceptions=True,
        )
        assert sum(isinstance(r, dict) for r in results) == 1
        assert sum(isinstance(r, KeyExistsError) for r in results) == 9
        assert store.revision == 2

    backend.run(body)


def test_count_counts_live_keys_under_a_prefix(backend) -> None:
    async def body(store: Store) -> None:
        for key in ["pods/a/1", "pods/a/2", "pods/b/1", "nodes//n1"]:
            await store.create(key, {})
        await store.delete("pods/a/2")
        assert store.count("pods/") == 2
        assert store.count("pods/a/") == 1
        assert store.count("nodes/") == 1
        assert store.count("") == 3
        assert store.count("services/") == 0

    backend.run(body)


def test_a_closed_store_refuses_everything(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k", {})
        await store.close()
        for call in [store.get("k"), store.create("j", {}), store.list(""), store.delete("k")]:
            with pytest.raises(StoreError, match="closed"):
                await call
        with pytest.raises(StoreError, match="closed"):
            store.watch("", 1)

    backend.run(body)


def test_a_write_after_a_read_reports_the_object_it_replaced(backend) -> None:
    """A write reads the key's latest object again (for its event's previous object): as read
    just before, packed, settled by a compaction, or written again in between."""

    async def body(store: Store) -> None:
        replaced: list[Any] = []
        store.observe(lambda event: replaced.append(event.prev_object))
        await store.create("pods/default/a", pod("a", spec={"v": 1}))
        await store.create("pods/default/b", pod("b"))
        first = await store.get("pods/default/a")
        await store.update("pods/default/a", pod("a", spec={"v": 2}), rv(first))
        assert replaced[-1] == first
        stale = await store.get("pods/default/a")
        second = await store.update("pods/default/b", pod("b", spec={"v": 2}), None)
        assert replaced[-1]["metadata"]["resourceVersion"] == "3"
        await store.update("pods/default/a", pod("a", spec={"v": 3}), None)
        assert replaced[-1] == stale
        await store.compact(store.revision)
        settled = await store.get("pods/default/b")
        assert settled == second
        await store.delete("pods/default/b", rv(settled))
        assert replaced[-1] == settled
        await store.get("pods/default/a")
        written = await store.update("pods/default/a", pod("a", spec={"v": 4}), None)
        await store.update("pods/default/a", pod("a", spec={"v": 5}), None)
        assert replaced[-1] == written

    backend.run(body)
