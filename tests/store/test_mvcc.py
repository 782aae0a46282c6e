"""Reads at past revisions, and paginated lists that all read at one revision."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from pinnace.store import CompactedError, FutureRevisionError, KeyNotFoundError, Store, WatchEvent


def test_get_at_a_past_revision_sees_the_object_as_it_was(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("cm/default/a", {"data": 1})  # 2
        await store.update("cm/default/a", {"data": 2}, None)  # 3
        await store.create("cm/default/b", {"data": "b"})  # 4
        await store.delete("cm/default/a")  # 5
        await store.create("cm/default/a", {"data": 3})  # 6
        seen = {}
        for revision in range(1, 7):
            try:
                seen[revision] = (await store.get("cm/default/a", revision))["data"]
            except KeyNotFoundError:
                seen[revision] = None
        assert seen == {1: None, 2: 1, 3: 2, 4: 2, 5: None, 6: 3}
        old = await store.get("cm/default/a", 3)
        assert old["metadata"]["resourceVersion"] == "3"
        with pytest.raises(KeyNotFoundError):
            await store.get("cm/default/b", 3)

    backend.run(body)


def test_list_at_a_past_revision_sees_the_state_then(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("pods/ns/a", {"v": "a1"})  # 2
        await store.create("pods/ns/b", {"v": "b1"})  # 3
        await store.update("pods/ns/a", {"v": "a2"}, None)  # 4
        await store.delete("pods/ns/b")  # 5
        await store.create("pods/ns/c", {"v": "c1"})  # 6

        async def values(revision: int | None) -> list[str]:
            result = await store.list("pods/", revision=revision)
            assert result.revision == (revision or store.revision)
            return [item["v"] for item in result.items]

        assert await values(1) == []
        assert await values(3) == ["a1", "b1"]
        assert await values(4) == ["a2", "b1"]
        assert await values(5) == ["a2"]
        assert await values(None) == ["a2", "c1"]

    backend.run(body)


def test_reads_after_the_current_revision_are_refused(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k", {})
        with pytest.raises(FutureRevisionError) as caught:
            await store.get("k", 3)
        assert (caught.value.requested, caught.value.current) == (3, 2)
        with pytest.raises(FutureRevisionError):
            await store.list("", revision=100)

    backend.run(body)


def test_lists_are_in_key_order_and_select_by_prefix(backend) -> None:
    async def body(store: Store) -> None:
        keys = ["pods/b/x", "pods/a/z", "pods/a/y", "pods/ab/q", "podsx/a/a", "nodes//n", "pods/"]
        for key in keys:
            await store.create(key, {"key": key})

        async def listed(prefix: str) -> list[str]:
            return [item["key"] for item in (await store.list(prefix)).items]

        assert await listed("pods/") == ["pods/", "pods/a/y", "pods/a/z", "pods/ab/q", "pods/b/x"]
        assert await listed("pods/a/") == ["pods/a/y", "pods/a/z"]
        assert await listed("") == sorted(keys)
        assert await listed("services/") == []

    backend.run(body)


def test_pages_share_one_revision_while_writes_go_on(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(10):
            await store.create(f"pods/ns/p{i}", {"i": i})
        first = await store.list("pods/", limit=4)
        assert [item["i"] for item in first.items] == [0, 1, 2, 3]
        assert (first.continue_key, first.remaining) == ("pods/ns/p3", 6)

        # Meanwhile: one later object is deleted, one updated, a new one created.
        await store.delete("pods/ns/p5")
        await store.update("pods/ns/p6", {"i": 60}, None)
        await store.create("pods/ns/p45", {"i": 45})

        pages = [first]
        while pages[-1].continue_key is not None:
            pages.append(
                await store.list(
                    "pods/",
                    revision=first.revision,
                    limit=4,
                    start_after=pages[-1].continue_key,
                )
            )
        assert [page.revision for page in pages] == [first.revision] * 3
        assert [[item["i"] for item in page.items] for page in pages] == [
            [0, 1, 2, 3],
            [4, 5, 6, 7],
            [8, 9],
        ]
        assert [page.remaining for page in pages] == [6, 2, 0]
        assert (await store.list("pods/", limit=100)).remaining == 0

    backend.run(body)


def test_a_page_limit_counts_live_objects_only(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(6):
            await store.create(f"k/{i}", {"i": i})
        for i in (0, 2, 3):
            await store.delete(f"k/{i}")
        page = await store.list("k/", limit=2)
        assert [item["i"] for item in page.items] == [1, 4]
        assert (page.continue_key, page.remaining) == ("k/4", 1)
        last = await store.list("k/", limit=2, start_after="k/4")
        assert ([item["i"] for item in last.items], last.continue_key) == ([5], None)
        exact = await store.list("k/", limit=3)
        assert (exact.continue_key, exact.remaining) == (None, 0)

    backend.run(body)


def test_start_after_a_key_outside_the_prefix(backend) -> None:
    async def body(store: Store) -> None:
        for key in ["a/1", "b/1", "b/2", "c/1"]:
            await store.create(key, {"key": key})
        before = await store.list("b/", start_after="a/9")
        assert [item["key"] for item in before.items] == ["b/1", "b/2"]
        after = await store.list("b/", start_after="b/9")
        assert after.items == []

    backend.run(body)


def test_a_negative_limit_is_refused(backend) -> None:
    async def body(store: Store) -> None:
        with pytest.raises(ValueError):
            await store.list("", limit=-1)

    backend.run(body)


def test_revision_0_reads_the_latest_state(backend) -> None:
    async def body(store: Store) -> None:
        await store.create("k/a", {"v": 1})
        await store.update("k/a", {"v": 2}, None)
        assert (await store.get("k/a", 0))["v"] == 2
        listed = await store.list("k/", revision=0)
        assert (listed.revision, [o["v"] for o in listed.items]) == (3, [2])

    backend.run(body)


def test_continuing_a_list_whose_revision_was_compacted_is_refused(backend) -> None:
    async def body(store: Store) -> None:
        for i in range(6):
            await store.create(f"k/{i}", {"i": i})
        first = await store.list("k/", limit=2)
        await store.update("k/0", {"i": 10}, None)
        await store.compact(store.revision)
        with pytest.raises(CompactedError) as caught:
            await store.list("k/", revision=first.revision, limit=2, start_after=first.continue_key)
        assert (caught.value.requested, caught.value.compacted) == (7, 8)

    backend.run(body)


class Team:
    """Selects the objects of one team, and tells the store the texts that lack it."""

    def __init__(self, team: str) -> None:
        self.team = team
        self.text = b'"team":"%s"' % team.encode()

    def matches(self, obj: dict[str, Any]) -> bool:
        return bool(obj.get("team") == self.team)

    def may_match(self, text: bytes) -> bool:
        return self.text in text


def test_a_selected_list_returns_what_the_selection_matches_and_its_limit_counts_those(
    backend,
) -> None:
    async def body(store: Store) -> None:
        for i in range(12):
            await store.create(f"k/{i:02}", {"i": i, "team": "a" if i % 3 == 0 else "b"})
        # Its text holds the team "a" wants, but it is team "b"'s.
        await store.create("k/12", {"i": 12, "team": "b", "note": {"team": "a"}})
        await store.delete("k/03")
        await store.compact(store.revision - 4)  # settles the first keys
        await store.update("k/06", {"i": 6, "team": "b"}, None)

        whole = await store.list("k/", select=Team("a"))
        assert ([o["i"] for o in whole.items], whole.continue_key, whole.remaining) == (
            [0, 9],
            None,
            0,
        )
        before = await store.list("k/", revision=whole.revision - 1, select=Team("a"))
        assert [o["i"] for o in before.items] == [0, 6, 9]

        pages = [await store.list("k/", limit=2, select=Team("b"))]
        while pages[-1].continue_key is not None:
            pages.append(
                await store.list(
                    "k/", pages[0].revision, 2, pages[-1].continue_key, select=Team("b")
                )
            )
        assert [[o["i"] for o in page.items] for page in pages] == [
            [1, 2],
            [4, 5],
            [6, 7],
            [8, 10],
            [11, 12],
        ]
        assert [(p.continue_key, p.remaining) for p in pages[:2]] == [
            ("k/02", None),
            ("k/05", None),
        ]
        assert (pages[-1].continue_key, pages[-1].remaining) == (None, 0)
        # A page that fills before the last key continues even when no later key matches.
        last_a = await store.list("k/", limit=2, select=Team("a"))
        assert ([o["i"] for o in last_a.items], last_a.continue_key) == ([0, 9], "k/09")
        rest = await store.list("k/", whole.revision, 2, "k/09", select=Team("a"))
        assert (rest.items, rest.continue_key) == ([], None)

    backend.run(body)


def test_an_observers_text_of_each_commit_is_its_objects_json_and_reads_stay_right(
    backend,
) -> None:
    async def body(store: Store) -> None:
        texts: dict[int, bytes] = {}
        expected: dict[int, bytes] = {}

        def observe(event: WatchEvent) -> None:
            texts[event.revision] = store.text(event)
            expected[event.revision] = orjson.dumps(event.object)

        stop = store.observe(observe)
        for i in range(3):
            await store.create(f"cm/default/{i}", {"kind": "ConfigMap", "data": {"n": i}})
        await store.update("cm/default/0", {"kind": "ConfigMap", "data": {"n": 9}}, None)
        await store.delete("cm/default/1")
        stop()
        assert texts == expected
        # The changes, packed from that text once they left the recent ones, read back.
        for revision, text in texts.items():
            watch = store.watch("cm/", revision - 1)
            event = await anext(watch)
            watch.close()
            assert orjson.dumps(event.object) == text

    backend.run(body)
