"""Informers on the virtual loop: the cache and the handlers follow the API, in order, through
disconnects and compaction."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests.client.conftest import CONFIG_MAPS, Cluster, config_map

from pinnace.api.kind import Kind
from pinnace.apiserver.objects import Object
from pinnace.apiserver.server import APIServer
from pinnace.client import LocalClient, PatchType
from pinnace.client.informer import Informer

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


def test_informer_sees_adds_updates_and_deletes_in_order(cluster: Cluster) -> None:
    client = cluster.client
    informer = Informer(client, CONFIG_MAPS, "default")
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
        informer.stop()

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
            await asyncio.wait({following, cut}, return_when=asyncio.FIRST_COMPLETED)
            if not following.done():
                following.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await following
                return
            try:
                event = following.result()
            except StopAsyncIteration:
                return
            yield event


def test_informer_recovers_from_compaction_while_disconnected(cluster: Cluster) -> None:
    client = FlakyClient(cluster.server)
    informer = Informer(client, CONFIG_MAPS, "default")
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
        informer.stop()

    cluster.run(scenario())
