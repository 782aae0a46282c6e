"""What only the etcd store has (the shared contract is tested on every backend): several stores
on one etcd, as several API servers, an etcd that restarts under a store, and a store opened on
an etcd that already holds objects."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from aetcd import rpc
from tests.etcd import EtcdServer, EtcdServers

from pinnace.store import CompactedError, ConflictError, KeyExistsError, StorageError, WatchEvent
from pinnace.store.etcd import EtcdStore, channel_target

Body = Callable[[EtcdServer], Awaitable[None]]
Runner = Callable[[Body, EtcdServer], None]


@pytest.fixture
def etcd(etcd_servers: EtcdServers) -> Iterator[EtcdServer]:
    with etcd_servers.take() as server:
        yield server


@pytest.fixture
def run(etcd_servers: EtcdServers) -> Callable[[Body, EtcdServer], None]:
    return lambda body, etcd: etcd_servers.run(body(etcd))


def test_two_stores_on_one_etcd_see_each_others_writes(etcd: EtcdServer, run: Runner) -> None:
    async def body(etcd: EtcdServer) -> None:
        a, b = await EtcdStore.open([etcd.url]), await EtcdStore.open([etcd.url])
        try:
            watch = b.watch("cm/", 0)
            created = await a.create("cm/ns/x", {"v": 1})
            assert await anext(watch) == WatchEvent("ADDED", "cm/ns/x", created, None, 2)
            with pytest.raises(KeyExistsError):
                await b.create("cm/ns/x", {"v": 2})
            updated = await a.update("cm/ns/x", {"v": 3}, 2)
            # b learns of a's update by a conflict, and reads it at once.
            with pytest.raises(ConflictError) as conflict:
                await b.update("cm/ns/x", {"v": 4}, 2)
            assert conflict.value.current == updated
            assert await b.get("cm/ns/x") == updated
            deleted = await b.delete("cm/ns/x", 3)
            assert (await anext(watch)).object == updated
            assert (await anext(watch)).object == deleted
            # a's copy learns of b's delete through a's own watch of etcd, which may come
            # after b's: a consistent sync waits for it.
            await a.sync()
            assert a.revision == b.revision == 4
            watch.close()
        finally:
            await a.close()
            await b.close()

    run(body, etcd)


def test_a_consistent_read_waits_for_every_write_etcd_has(etcd: EtcdServer, run: Runner) -> None:
    async def body(etcd: EtcdServer) -> None:
        a, b = await EtcdStore.open([etcd.url]), await EtcdStore.open([etcd.url])
        lagging = _lag(b)
        try:
            for n in range(3):
                created = await a.create(f"cm/ns/x{n}", {"v": n})
                await b.sync()
                assert await b.get(f"cm/ns/x{n}") == created
            # A read at a revision another server returned waits for it too.
            created = await a.create("cm/ns/y", {"v": 9})
            await b.sync(5)
            assert await b.get("cm/ns/y", 5) == created
            # A key outside the store takes a revision of etcd's too: the copy reaches it.
            kv = rpc.KVStub(b._channel)
            await kv.Put(rpc.PutRequest(key=b"/elsewhere/k", value=b"x"))
            await b.sync()
            assert b.revision == 6
        finally:
            lagging.cancel()
            await a.close()
            await b.close()

    run(body, etcd)


def _lag(store: EtcdStore) -> asyncio.Task[None]:
    """Have `store` apply etcd's changes 50 ms late, in order, as a busy server would."""
    changes: asyncio.Queue[Any] = asyncio.Queue()
    apply = store._apply
    store._apply = changes.put_nowait  # type: ignore[method-assign,assignment]

    async def late() -> None:
        while True:
            change = await changes.get()
            await asyncio.sleep(0.05)
            apply(change)

    return asyncio.get_running_loop().create_task(late())


def test_a_store_goes_on_when_etcd_restarts(etcd: EtcdServer, run: Runner) -> None:
    async def body(etcd: EtcdServer) -> None:
        store = await EtcdStore.open([etcd.url])
        try:
            watch = store.watch("cm/", 0)
            await store.create("cm/ns/a", {"v": 1})
            etcd.stop(kill=True)
            etcd.start()
            b = await _retried(lambda: store.create("cm/ns/b", {"v": 2}))
            assert b["metadata"]["resourceVersion"] == "3"
            assert [(e.key, e.revision) for e in [await anext(watch), await anext(watch)]] == [
                ("cm/ns/a", 2),
                ("cm/ns/b", 3),
            ]
            assert [o["v"] for o in (await store.list("cm/")).items] == [1, 2]
            watch.close()
        finally:
            await store.close()

    run(body, etcd)


def test_a_store_opened_on_a_used_etcd_starts_at_its_revision(
    etcd: EtcdServer, run: Runner
) -> None:
    async def body(etcd: EtcdServer) -> None:
        first = await EtcdStore.open([etcd.url])
        kept = await first.create("cm/ns/a", {"metadata": {"name": "a"}, "v": 1})
        await first.create("cm/ns/b", {"v": 1})
        await first.delete("cm/ns/b")
        await first.close()

        store = await EtcdStore.open([etcd.url])
        try:
            assert (store.revision, store.compacted_revision) == (4, 4)
            assert await store.get("cm/ns/a") == kept
            assert (await store.list("")).items == [kept]
            with pytest.raises(CompactedError):
                store.watch("cm/", 2)
            await store.update("cm/ns/a", {"v": 2}, 2)
            assert [e.revision for e in [await anext(store.watch("cm/", 4))]] == [5]
        finally:
            await store.close()

    run(body, etcd)


async def _retried(write: Callable[[], Awaitable[dict]]) -> dict:
    """The write, tried again while etcd is not back (the store refuses it meanwhile)."""
    for _ in range(200):
        try:
            return await write()
        except StorageError:
            await asyncio.sleep(0.05)
    return await write()


def test_several_etcd_servers_are_tried_in_turn(etcd: EtcdServer, run: Runner) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"

    async def body(etcd: EtcdServer) -> None:
        store = await EtcdStore.open([closed, etcd.url])
        try:
            assert (await store.create("cm/ns/a", {}))["metadata"]["resourceVersion"] == "2"
        finally:
            await store.close()

    run(body, etcd)


@pytest.mark.parametrize(
    ("urls", "message"),
    [
        (["https://10.0.0.1:2379"], "https://10.0.0.1:2379: only http:// etcd client URLs"),
        (["http://10.0.0.1:2379/v3"], "is not an etcd client URL such as http://127.0.0.1:2379"),
        (["http://a:2379", "http://b:2379"], "several etcd servers must be given by IP address"),
        ([], "no etcd server given"),
    ],
)
def test_etcd_client_urls_are_checked(urls: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        channel_target(urls)


def test_a_store_opens_on_more_than_grpcs_default_message_size(
    etcd: EtcdServer, run: Runner
) -> None:
    """gRPC limits a message to 4 MiB unless told otherwise; kube-apiserver lifts the limit,
    or a list of a large cluster's keys could not be read."""

    async def body(etcd: EtcdServer) -> None:
        store = await EtcdStore.open([etcd.url])
        try:
            for i in range(5):  # 5 MB in all; etcd takes up to 1.5 MiB in one request
                await store.create(f"cm/ns/{i}", {"data": "x" * 1_000_000})
        finally:
            await store.close()
        again = await EtcdStore.open([etcd.url])
        try:
            assert again.count("cm/") == 5
        finally:
            await again.close()

    run(body, etcd)
