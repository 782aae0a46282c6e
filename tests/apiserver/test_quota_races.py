"""ResourceQuota under concurrent writes: however creates, updates and deletes of pods
interleave, no more pods are stored than the quota allows and its `status.used` ends equal to
what is stored, as with kube-apiserver (its quota admission charges usage with a
resourceVersion precondition before the object is stored).

Every store operation here first yields to the loop a seeded number of times, so the requests
interleave at their awaits as they do over a real store."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Iterator
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.keys import list_prefix, object_key
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

PODS = catalog.kind("", "pods")
QUOTAS = catalog.kind("", "resourcequotas")


class InterleavingStore(MemoryStore):
    """A memory store whose reads and writes suspend first, 0 to 3 times (seeded)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._random = random.Random(seed)

    async def _pause(self) -> None:
        for _ in range(self._random.randrange(4)):
            await asyncio.sleep(0)

    async def create(self, key: str, obj: Any) -> Any:
        await self._pause()
        return await super().create(key, obj)

    async def update(self, key: str, obj: Any, expected_revision: int | None) -> Any:
        await self._pause()
        return await super().update(key, obj, expected_revision)

    async def delete(self, key: str, expected_revision: int | None = None) -> Any:
        await self._pause()
        return await super().delete(key, expected_revision)

    async def get(self, key: str, revision: int | None = None) -> Any:
        await self._pause()
        return await super().get(key, revision)

    async def list(self, prefix: str, revision: int | None = None, **kwargs: Any) -> Any:
        await self._pause()
        return await super().list(prefix, revision, **kwargs)


@pytest.fixture
def loop() -> Iterator[VirtualEventLoop]:
    loop = VirtualEventLoop()
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


def server_on(loop: VirtualEventLoop, seed: int) -> APIServer:
    server = APIServer(InterleavingStore(seed), Clock(loop), Randomness(seed))
    loop.run_until_complete(bootstrap(server))
    return server


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


def quota(pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "pod-demo"},
        "spec": {"hard": {"pods": str(pods)}},
    }


async def outcome(call: Awaitable[Any]) -> Any:
    try:
        return await call
    except StatusError as e:
        return e


async def together(calls: list[Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*calls))


async def relabel(server: APIServer, name: str, value: str) -> Any:
    def mutate(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"]["round"] = value
        del obj["metadata"]["resourceVersion"]  # unconditional, as a label edit is
        return obj

    return await outcome(server.modify(PODS, "default", name, mutate))


def used_pods(server: APIServer, loop: VirtualEventLoop, revision: int | None = None) -> int:
    key = object_key(QUOTAS, "default", "pod-demo")
    stored = loop.run_until_complete(server.store.get(key, revision))
    return int(stored["status"]["used"]["pods"])


def stored_pods(server: APIServer, loop: VirtualEventLoop, revision: int | None = None) -> int:
    listed = loop.run_until_complete(server.store.list(list_prefix(PODS, "default"), revision))
    return len(listed.items)


def history(server: APIServer, loop: VirtualEventLoop, since: int) -> list[tuple[int, int]]:
    """(pods stored, quota's used pods) at every revision from `since` on."""
    return [
        (stored_pods(server, loop, r), used_pods(server, loop, r))
        for r in range(since, server.store.revision + 1)
    ]


@pytest.mark.parametrize("seed", range(12))
def test_concurrent_creates_admit_exactly_what_the_quota_allows(
    loop: VirtualEventLoop, seed: int
) -> None:
    server = server_on(loop, seed)
    loop.run_until_complete(server.create(QUOTAS, "default", quota(2)))
    start = server.store.revision
    creates = [outcome(server.create(PODS, "default", pod(f"p{i}"))) for i in range(8)]

    results = loop.run_until_complete(together(creates))

    refused = [r for r in results if isinstance(r, StatusError)]
    assert len(results) - len(refused) == 2
    assert {(e.code, e.reason) for e in refused} == {(403, "Forbidden")}
    assert all(
        e.message.endswith(
            "is forbidden: exceeded quota: pod-demo, requested: pods=1, used: pods=2, "
            "limited: pods=2"
        )
        for e in refused
    )
    assert all(stored <= 2 and used <= 2 for stored, used in history(server, loop, start))
    assert used_pods(server, loop) == stored_pods(server, loop) == 2


@pytest.mark.parametrize("seed", range(12))
def test_pod_updates_and_deletes_between_creates_never_let_the_quota_be_exceeded(
    loop: VirtualEventLoop, seed: int
) -> None:
    server = server_on(loop, seed)
    loop.run_until_complete(server.create(QUOTAS, "default", quota(3)))
    for name in ("old-1", "old-2"):
        loop.run_until_complete(server.create(PODS, "default", pod(name)))
    start = server.store.revision
    calls = [outcome(server.create(PODS, "default", pod(f"p{i}"))) for i in range(6)]
    calls[1:1] = [relabel(server, "old-1", str(i)) for i in range(3)]
    calls.insert(5, outcome(server.delete(PODS, "default", "old-2")))
    calls.append(relabel(server, "old-1", "last"))

    results = loop.run_until_complete(together(calls))

    assert not [r for r in results if isinstance(r, StatusError) and r.code != 403]
    assert all(stored <= 3 and used <= 3 for stored, used in history(server, loop, start))
    assert used_pods(server, loop) == stored_pods(server, loop)


def test_a_create_refused_after_its_charge_gives_the_usage_back(loop: VirtualEventLoop) -> None:
    server = server_on(loop, 0)
    loop.run_until_complete(server.create(QUOTAS, "default", quota(2)))
    loop.run_until_complete(server.create(PODS, "default", pod("a")))

    again = loop.run_until_complete(outcome(server.create(PODS, "default", pod("a"))))

    assert isinstance(again, StatusError) and again.reason == "AlreadyExists"
    assert used_pods(server, loop) == stored_pods(server, loop) == 1
    loop.run_until_complete(server.create(PODS, "default", pod("b")))
