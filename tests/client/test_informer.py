"""Informers on the virtual loop: the cache and the handlers follow the API, in order, through
disconnects and compaction."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, PODS, Cluster, config_map, pod

from pinnace.api.kind import Kind
from pinnace.api.labels import parse_selector, selector_from_dict
from pinnace.api.objects import Object, clone
from pinnace.api.options import DeleteOptions
from pinnace.apiserver.server import APIServer
from pinnace.client import LocalClient, PatchType
from pinnace.client.factory import InformerFactory
from pinnace.client.informer import NAMESPACE_INDEX, Informer
from pinnace.store.codec import Codec

SETTLE = 5.0
"""Virtual seconds that let every informer catch up (no wall-clock time passes)."""


class Calls:
    """What the handlers were told, as (what, name, resourceVersion or data)."""

    def __init__(self, informer: Informer) -> None:
        self.seen: list[tuple[str, ...]] = []
        informer.add_event_handler(self.add, self.update, self.delete)

    def add(self, obj: Object) -> None:
        self.seen.append(("add", obj["metadata"]["name"], _data(obj)))

    def update(self, old: Object, new: Object) -> None:
        self.seen.append(("update", new["metadata"]["name"], _data(old), _data(new)))

    def delete(self, obj: Object) -> None:
        self.seen.append(("delete", obj["metadata"]["name"], _data(obj)))

    def take(self) -> list[tuple[str, ...]]:
        seen, self.seen = self.seen, []
        return seen


def _data(obj: Object) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((obj.get("data") or {}).items()))


@pytest.mark.parametrize("packed", [False, True])
def test_informer_sees_adds_updates_and_deletes_in_order(cluster: Cluster, packed: bool) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default", codec=Codec() if packed else None)
    calls = Calls(informer)

    async def scenario() -> None:
        await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        await client.create(CONFIG_MAPS, "kube-system", config_map("x", "kube-system"))
        informer.start()
        await informer.wait_for_sync()
        assert informer.has_synced
        assert calls.take() == [("add", "a", "v=1")]

        await client.create(CONFIG_MAPS, "default", config_map("b", v="1"))
        await client.patch(CONFIG_MAPS, "default", "a", {"data": {"v": "2"}}, PatchType.MERGE)
        await client.delete(CONFIG_MAPS, "default", "b")
        await client.patch(CONFIG_MAPS, "default", "a", {"data": {"v": "3"}}, PatchType.MERGE)
        await asyncio.sleep(SETTLE)
        assert calls.take() == [
            ("add", "b", "v=1"),
            ("update", "a", "v=1", "v=2"),
            ("delete", "b", "v=1"),
            ("update", "a", "v=2", "v=3"),
        ]
        latest = await client.get(CONFIG_MAPS, "default", "a")
        assert informer.get("default", "a") == latest
        assert informer.keys() == ["default/a"]
        assert informer.last_sync_resource_version == latest["metadata"]["resourceVersion"]
        await informer.stop()

    cluster.run(scenario())


def test_the_places_of_the_keys_follow_the_cache_as_keys_come_and_go(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")

    def places() -> tuple[list[str], dict[str, int]]:
        order, place_of = informer.places()
        assert order == informer.keys()
        assert place_of == {key: i for i, key in enumerate(order)}
        return order, place_of

    async def scenario() -> None:
        for name in "abc":
            await client.create(CONFIG_MAPS, "default", config_map(name, v="1"))
        informer.start()
        await informer.wait_for_sync()
        before = places()
        assert before[0] == ["default/a", "default/b", "default/c"]
        await client.patch(CONFIG_MAPS, "default", "b", {"data": {"v": "2"}}, PatchType.MERGE)
        await asyncio.sleep(SETTLE)
        assert places() == before  # an update moves no key
        await client.delete(CONFIG_MAPS, "default", "a")
        await client.create(CONFIG_MAPS, "default", config_map("a", v="3"))
        await asyncio.sleep(SETTLE)
        assert places()[0] == ["default/b", "default/c", "default/a"]
        await informer.stop()

    cluster.run(scenario())


class FlakyClient(LocalClient):
    """A LocalClient behind a network that can go down: `disconnect()` ends every watch, and
    watches asked for while it is down wait until `reconnect()`."""

    def __init__(self, server: APIServer) -> None:
        super().__init__(server)
        self._cut: asyncio.Future[None] | None = None
        self._up: asyncio.Future[None] | None = None

    def disconnect(self) -> None:
        loop = asyncio.get_running_loop()
        if self._cut is not None:
            self._cut.set_result(None)
        self._up = loop.create_future()

    def reconnect(self) -> None:
        assert self._up is not None
        self._up.set_result(None)
        self._up = None

    async def watch(  # type: ignore[override]
        self, kind: Kind, namespace: str = "", **options: Any
    ) -> AsyncIterator[Object]:
        if self._up is not None:
            await self._up
        cut = self._cut = asyncio.get_running_loop().create_future()
        events = super().watch(kind, namespace, **options)
        while True:
            following = asyncio.ensure_future(anext(events))  # type: ignore[arg-type]
            try:
                await asyncio.wait({following, cut}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not following.done():
                    following.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await following
            if cut.done():
                return
            try:
                event = following.result()
            except StopAsyncIteration:
                return
            yield event


@pytest.mark.parametrize("packed", [False, True])
def test_informer_recovers_from_compaction_while_disconnected(
    cluster: Cluster, packed: bool
) -> None:
    client = FlakyClient(cluster.server)
    informer = Informer(client, CONFIG_MAPS, "default", codec=Codec() if packed else None)
    calls = Calls(informer)

    async def scenario() -> None:
        for name in ("same", "changed", "vanished"):
            await client.create(CONFIG_MAPS, "default", config_map(name, v="1"))
        informer.start()
        await informer.wait_for_sync()
        assert [c[1] for c in calls.take()] == ["changed", "same", "vanished"]

        client.disconnect()
        await asyncio.sleep(SETTLE)
        await client.patch(CONFIG_MAPS, "default", "changed", {"data": {"v": "2"}}, PatchType.MERGE)
        await client.delete(CONFIG_MAPS, "default", "vanished")
        await client.create(CONFIG_MAPS, "default", config_map("new", v="1"))
        await cluster.store.compact(cluster.store.revision)
        await asyncio.sleep(SETTLE)
        assert calls.take() == []  # nothing heard while disconnected

        client.reconnect()  # the watch from the old resourceVersion gets a 410: list again
        await asyncio.sleep(SETTLE)
        assert calls.take() == [
            ("update", "changed", "v=1", "v=2"),
            ("add", "new", "v=1"),
            ("delete", "vanished", "v=1"),
        ]
        listed = await client.list(CONFIG_MAPS, "default")
        assert sorted(informer.list(), key=lambda o: o["metadata"]["name"]) == listed["items"]

        await client.patch(CONFIG_MAPS, "default", "same", {"data": {"v": "2"}}, PatchType.MERGE)
        await asyncio.sleep(SETTLE)
        assert calls.take() == [("update", "same", "v=1", "v=2")]
        await informer.stop()

    cluster.run(scenario())


def test_a_listener_keeps_in_step_with_the_cache_through_a_relist(cluster: Cluster) -> None:
    """A listener hears each change to the cache as (key, old, new), the objects cached before
    it came as added, so what it keeps from them is what the cache holds."""
    client = FlakyClient(cluster.server)
    informer = Informer(client, CONFIG_MAPS, "default", codec=Codec())
    kept: dict[str, str] = {}

    def listen(key: str, old: Object | None, new: Object | None) -> None:
        assert (old is None) == (key not in kept)
        if old is not None:
            assert kept.pop(key) == _data(old)
        if new is not None:
            kept[key] = _data(new)

    def cached() -> dict[str, str]:
        return {f"default/{o['metadata']['name']}": _data(o) for o in informer.list()}

    async def scenario() -> None:
        for name in ("same", "changed", "vanished"):
            await client.create(CONFIG_MAPS, "default", config_map(name, v="1"))
        informer.start()
        await informer.wait_for_sync()
        informer.add_listener(listen)
        assert kept == cached() != {}
        await client.patch(CONFIG_MAPS, "default", "same", {"data": {"v": "2"}}, PatchType.MERGE)
        client.disconnect()
        await asyncio.sleep(SETTLE)
        await client.patch(CONFIG_MAPS, "default", "changed", {"data": {"v": "2"}}, PatchType.MERGE)
        await client.delete(CONFIG_MAPS, "default", "vanished")
        await client.create(CONFIG_MAPS, "default", config_map("new", v="1"))
        await cluster.store.compact(cluster.store.revision)
        client.reconnect()
        await asyncio.sleep(SETTLE)
        assert kept == cached()
        assert kept == {
            "default/same": "v=2",
            "default/changed": "v=2",
            "default/new": "v=1",
        }
        await informer.stop()

    cluster.run(scenario())


def test_a_broken_watch_resumes_from_the_last_resource_version(cluster: Cluster) -> None:
    """Without compaction nothing is listed again: every change made while disconnected
    arrives as it happened, intermediate states included."""
    client = FlakyClient(cluster.server)
    informer = Informer(client, CONFIG_MAPS, "default")
    calls = Calls(informer)

    async def scenario() -> None:
        await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await informer.wait_for_sync()
        calls.take()
        client.disconnect()
        await asyncio.sleep(SETTLE)
        for v in ("2", "3"):
            await client.patch(CONFIG_MAPS, "default", "a", {"data": {"v": v}}, PatchType.MERGE)
        await client.create(CONFIG_MAPS, "default", config_map("b", v="1"))
        await client.delete(CONFIG_MAPS, "default", "b")
        client.reconnect()
        await asyncio.sleep(SETTLE)
        assert calls.take() == [
            ("update", "a", "v=1", "v=2"),
            ("update", "a", "v=2", "v=3"),
            ("add", "b", "v=1"),
            ("delete", "b", "v=1"),
        ]
        await informer.stop()

    cluster.run(scenario())


def _node_name(obj: Object) -> list[str]:
    return [obj["spec"].get("nodeName") or ""]


def _names(objs: list[Object]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


@pytest.mark.parametrize("packed", [False, True])
def test_index_pods_by_node_name(cluster: Cluster, packed: bool) -> None:
    client = cluster.client
    informer = Informer(client, PODS, codec=Codec() if packed else None)
    informer.add_indexer("nodeName", _node_name)

    async def scenario() -> None:
        await client.create(PODS, "default", pod("a", node="n1"))
        await client.create(PODS, "kube-system", pod("b", "kube-system", node="n1", app="web"))
        pending = await client.create(PODS, "default", pod("c"))
        informer.start()
        await informer.wait_for_sync()
        assert _names(informer.by_index("nodeName", "n1")) == ["a", "b"]
        assert _names(informer.by_index("nodeName", "")) == ["c"]
        assert _names(informer.by_index("namespace", "default")) == ["a", "c"]
        assert _names(informer.list("default", selector_from_dict({"matchLabels": {}}))) == [
            "a",
            "c",
        ]
        assert _names(informer.list(selector=parse_selector("app in (web)"))) == ["b"]

        await client.bind(pending, "n2")
        await client.delete(PODS, "kube-system", "b", DeleteOptions(grace_period_seconds=0))
        await asyncio.sleep(SETTLE)
        assert _names(informer.by_index("nodeName", "n1")) == ["a"]
        assert _names(informer.by_index("nodeName", "n2")) == ["c"]
        assert informer.by_index("nodeName", "") == []
        assert informer.by_index("namespace", "kube-system") == []
        await informer.stop()

    cluster.run(scenario())


@pytest.mark.parametrize("packed", [False, True])
def test_an_update_that_keeps_an_objects_index_values_keeps_its_place(
    cluster: Cluster, packed: bool
) -> None:
    """As client-go's updateIndices, an index whose values an update leaves alone is left
    alone: the object stays where it was filed, and is read in its new version."""
    client = cluster.client
    informer = Informer(client, PODS, codec=Codec() if packed else None)
    informer.add_indexer("nodeName", _node_name)

    async def scenario() -> None:
        for name in ("a", "b"):
            await client.create(PODS, "default", pod(name, node="n1"))
        informer.start()
        await informer.wait_for_sync()
        patch = {"metadata": {"labels": {"app": "web"}}}
        await client.patch(PODS, "default", "a", patch, PatchType.MERGE)
        await asyncio.sleep(SETTLE)
        filed = informer.by_index("nodeName", "n1")
        assert [p["metadata"]["name"] for p in filed] == ["a", "b"]
        assert filed[0]["metadata"]["labels"] == {"app": "web"}
        assert [p["metadata"]["name"] for p in informer.by_index("namespace", "default")] == [
            "a",
            "b",
        ]
        await informer.stop()

    cluster.run(scenario())


def test_field_selector_on_node_name_follows_pods_onto_and_off_the_node(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, PODS, field_selector="spec.nodeName=n1")
    seen: list[tuple[str, str]] = []
    informer.add_event_handler(
        on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
        on_update=lambda old, new: seen.append(("update", new["metadata"]["name"])),
        on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])),
    )

    async def scenario() -> None:
        await client.create(PODS, "default", pod("elsewhere", node="n2"))
        first = await client.create(PODS, "default", pod("a"))
        informer.start()
        await informer.wait_for_sync()
        assert informer.list() == []

        await client.bind(first, "n1")  # starts matching: an add
        await client.patch(PODS, "default", "a", {"metadata": {"labels": {"x": "1"}}})
        await client.create(PODS, "default", pod("b", node="n2"))
        await client.delete(PODS, "default", "a", DeleteOptions(grace_period_seconds=0))
        await asyncio.sleep(SETTLE)
        # Nothing about the pods on n2; a pod deleted may first show as Terminating (an update).
        assert {name for _, name in seen} == {"a"}
        assert seen[:2] == [("add", "a"), ("update", "a")]
        assert seen[-1] == ("delete", "a")
        assert informer.list() == []
        await informer.stop()

    cluster.run(scenario())


def test_selecting_handlers_see_pods_leave_the_queue_when_bound(cluster: Cluster) -> None:
    """As kube-scheduler's queue and cache split pods by spec.nodeName on one pod informer."""
    client = cluster.client
    informer = Informer(client, PODS)
    unassigned: list[tuple[str, str]] = []
    assigned: list[tuple[str, str]] = []
    for seen, wanted in ((unassigned, False), (assigned, True)):
        informer.add_event_handler(
            on_add=lambda o, seen=seen: seen.append(("add", o["metadata"]["name"])),
            on_update=lambda old, new, seen=seen: seen.append(("update", new["metadata"]["name"])),
            on_delete=lambda o, seen=seen: seen.append(("delete", o["metadata"]["name"])),
            selects=lambda o, wanted=wanted: bool(o["spec"].get("nodeName")) == wanted,
        )

    async def scenario() -> None:
        await client.create(PODS, "default", pod("running", node="n1"))
        pending = await client.create(PODS, "default", pod("pending"))
        informer.start()
        await informer.wait_for_sync()
        await client.patch(PODS, "default", "pending", {"metadata": {"labels": {"try": "2"}}})
        await client.bind(pending, "n2")
        await asyncio.sleep(SETTLE)
        assert unassigned == [("add", "pending"), ("update", "pending"), ("delete", "pending")]
        assert assigned == [("add", "running"), ("add", "pending")]
        await informer.stop()

    cluster.run(scenario())


def test_factory_shares_one_informer_per_selection(cluster: Cluster) -> None:
    client = cluster.client
    factory = InformerFactory(client)
    pods = factory.informer(PODS)
    assert factory.informer(PODS) is pods
    on_node = factory.informer(PODS, field_selector="spec.nodeName=n1")
    assert on_node is not pods
    assert factory.informer(CONFIG_MAPS, "default") is not factory.informer(CONFIG_MAPS)

    async def scenario() -> None:
        await client.create(PODS, "default", pod("a", node="n1"))
        await client.create(PODS, "default", pod("b"))
        factory.start()
        await factory.wait_for_sync()
        assert _names(pods.list()) == ["a", "b"]
        assert _names(on_node.list()) == ["a"]
        late = factory.informer(CONFIG_MAPS, "kube-system")  # started because the factory is
        await late.wait_for_sync()
        assert late.has_synced
        await factory.stop()

    cluster.run(scenario())


def test_a_handler_added_late_first_hears_of_every_cached_object(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")

    async def scenario() -> None:
        await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await informer.wait_for_sync()
        calls = Calls(informer)
        await client.patch(CONFIG_MAPS, "default", "a", {"data": {"v": "2"}}, PatchType.MERGE)
        await asyncio.sleep(SETTLE)
        assert calls.take() == [("add", "a", "v=1"), ("update", "a", "v=1", "v=2")]
        await informer.stop()

    cluster.run(scenario())


def test_async_handlers_are_awaited_one_notification_at_a_time(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")
    log: list[str] = []

    async def slow_add(obj: Object) -> None:
        log.append(f"start {obj['metadata']['name']}")
        await asyncio.sleep(10)
        log.append(f"end {obj['metadata']['name']}")

    def failing_update(old: Object, new: Object) -> None:
        raise RuntimeError("a handler bug must not stop the informer")

    informer.add_event_handler(on_add=slow_add, on_update=failing_update)
    informer.add_event_handler(on_add=lambda o: log.append(f"sync {o['metadata']['name']}"))

    async def scenario() -> None:
        informer.start()
        await informer.wait_for_sync()
        await client.create(CONFIG_MAPS, "default", config_map("a"))
        await client.create(CONFIG_MAPS, "default", config_map("b"))
        await client.patch(CONFIG_MAPS, "default", "a", {"data": {"v": "2"}}, PatchType.MERGE)
        await client.create(CONFIG_MAPS, "default", config_map("c"))
        await asyncio.sleep(60)
        assert log == [
            "start a",
            "end a",
            "sync a",
            "start b",
            "end b",
            "sync b",
            "start c",
            "end c",
            "sync c",
        ]
        assert informer.get("default", "a")["data"] == {"v": "2"}  # type: ignore[index]
        await informer.stop()

    cluster.run(scenario())


def test_resync_hands_every_object_to_on_update_again(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default", resync_period=30)
    calls = Calls(informer)

    async def scenario() -> None:
        await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await informer.wait_for_sync()
        calls.take()
        await asyncio.sleep(29)
        assert calls.take() == []
        await asyncio.sleep(2)
        assert calls.take() == [("update", "a", "v=1", "v=1")]
        await asyncio.sleep(30)
        assert calls.take() == [("update", "a", "v=1", "v=1")]
        await informer.stop()

    cluster.run(scenario())


def test_cache_objects_are_the_stored_ones_not_copies(cluster: Cluster) -> None:
    """Shared and read-only, as the client documents: a change needs a clone."""
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")

    async def scenario() -> None:
        created = await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await informer.wait_for_sync()
        cached = informer.get("default", "a")
        assert cached is not None and cached == created
        wanted = clone(cached)
        wanted["data"]["v"] = "2"
        await client.update(CONFIG_MAPS, wanted)
        assert cached["data"] == {"v": "1"}
        await informer.stop()

    cluster.run(scenario())


def test_a_packed_cache_hands_out_copies(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default", codec=Codec())

    async def scenario() -> None:
        created = await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await informer.wait_for_sync()
        cached = informer.get("default", "a")
        assert cached == created
        assert cached is not informer.get("default", "a")
        assert informer.list() == [created]
        await informer.stop()

    cluster.run(scenario())


def test_a_packed_cache_lends_its_bytes_of_the_version_asked_for(cluster: Cluster) -> None:
    """`packed(obj)` gives the bytes of obj's version: those of the object a handler is handed,
    even once the cache holds a later version, and the cache's for any copy of the version it
    holds, in a handler or not; nothing for a version it no longer holds."""
    client = cluster.client
    codec = Codec()
    informer = Informer(client, CONFIG_MAPS, "default", codec=codec)
    updated_meanwhile = asyncio.Event()
    lent: list[tuple[str, bool]] = []

    async def took(obj: Object) -> None:
        if obj["data"]["v"] == "1":
            await updated_meanwhile.wait()  # the cache moves on to version 2 meanwhile
        packed = informer.packed(obj)
        assert packed is not None and codec.unpack(packed) == obj
        lent.append((obj["data"]["v"], informer.packed(clone(obj)) is packed))

    informer.add_event_handler(took, lambda old, new: took(new))

    async def scenario() -> None:
        created = await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        informer.start()
        await asyncio.sleep(SETTLE)
        await client.update(CONFIG_MAPS, {**created, "data": {"v": "2"}})
        await asyncio.sleep(SETTLE)
        updated_meanwhile.set()
        await informer.wait_for_sync()
        await asyncio.sleep(SETTLE)
        # Version 1's bytes while it was handed over; a copy of it: none, the cache holds 2.
        assert lent == [("1", False), ("2", True)]
        cached = informer._cache["default/a"]
        assert informer.packed(informer.get("default", "a")) is cached
        assert informer.packed(informer.list()[0]) is cached
        assert informer.packed(created) is None
        await informer.stop()

    cluster.run(scenario())


def test_a_cache_without_a_namespace_index_still_lists_by_namespace(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, codec=Codec(), namespace_index=False)

    async def scenario() -> None:
        a = await client.create(CONFIG_MAPS, "default", config_map("a", v="1"))
        b = await client.create(CONFIG_MAPS, "kube-system", config_map("b", "kube-system"))
        informer.start()
        await informer.wait_for_sync()
        assert informer.list("default") == [a]
        assert informer.list("kube-system") == [b]
        assert informer.list() == [a, b]
        with pytest.raises(KeyError):
            informer.by_index(NAMESPACE_INDEX, "default")
        await informer.stop()

    cluster.run(scenario())


def test_a_restarted_informer_has_synced_once_it_has_listed_anew(cluster: Cluster) -> None:
    """A controller started again waits for its informers to sync: it must not act on what
    they held when they stopped."""
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")

    async def scenario() -> None:
        informer.start()
        await informer.wait_for_sync()
        await informer.stop()
        assert not informer.has_synced
        await client.create(CONFIG_MAPS, "default", config_map("made-while-stopped", v="1"))
        informer.start()
        await informer.wait_for_sync()
        assert [o["metadata"]["name"] for o in informer.list()] == ["made-while-stopped"]
        await informer.stop()

    cluster.run(scenario())
