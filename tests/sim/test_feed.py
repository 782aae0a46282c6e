"""The commit feed (pinnace.sim.feed): what a kind's list holds, then every later commit of
that kind, each exactly once and in order, even when writes land while the list is read."""

from __future__ import annotations

from typing import Any

from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.apiserver.server import APIServer
from pinnace.client.local import LocalClient
from pinnace.sim.feed import CommitFeed

PODS = catalog.kind("", "pods")
CONFIG_MAPS = catalog.kind("", "configmaps")


def pod(name: str) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
    }


class WritesWhileListing(LocalClient):
    """Creates pod `before` just ahead of reading the list, and pod `after` once it is read
    but before the list is returned: a write that lands while a feed starts, either side."""

    def __init__(self, server: APIServer) -> None:
        super().__init__(server)

    async def list(self, kind: Kind, namespace: str = "", **options: Any) -> Object:
        await self.create(PODS, "default", pod("before"))
        listed = await super().list(kind, namespace, **options)
        await self.create(PODS, "default", pod("after"))
        return listed


def test_a_feed_lists_then_hands_on_every_later_commit_of_its_kind_once(api: Harness) -> None:
    client = LocalClient(api.server)
    api.call(client.create, PODS, "default", pod("old"))
    seen: list[tuple[str, str]] = []
    feed = CommitFeed(
        api.server.store,
        WritesWhileListing(api.server),
        PODS,
        lambda change, obj: seen.append((change, obj["metadata"]["name"])),
    )
    api.run(feed.start())
    api.call(client.delete, PODS, "default", "old")
    api.call(client.create, CONFIG_MAPS, "default", {"metadata": {"name": "other-kind"}})
    feed.stop()
    api.call(client.create, PODS, "default", pod("too-late"))
    assert seen == [
        ("ADDED", "before"),  # listed (in key order), not handed on again
        ("ADDED", "old"),
        ("ADDED", "after"),  # committed after the list was read: handed on after it
        ("MODIFIED", "old"),  # its deletionTimestamp, as a watch shows it
        ("DELETED", "old"),
    ]
