"""Every behavioural store test runs against each backend, on the loop that backend runs on:
MemoryStore on the virtual loop (no threads, no real waiting), SQLiteStore and EtcdStore on a
real one. Each test starts an etcd of its own, so that its first store starts at revision 1; the
stores a test opens one after another there (one per example of a property) each have a key
prefix of their own. The
"packed" backend is a MemoryStore that keeps only the latest change unpacked and holds no key's
past it, so that reads and watch replays go through the packed form, and settles keys in blocks
of one or two, so that blocks split and merge often; the "unsettled" one packs as often but
holds one key's latest change (the one written last, of those past the recent one) and settles
no key (the simulated mode's store); the "ahead" one packs as often, on a thread of its own as
objects are written (`pinnace up --in-memory`'s store), on a real loop."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.etcd import EtcdServer, EtcdServers

from pinnace.clock import VirtualClock
from pinnace.store import MemoryStore, SQLiteStore, Store
from pinnace.store.etcd import EtcdStore, KeyLayout

T = TypeVar("T")


class Backend:
    def __init__(self, name: str, directory: Path, etcds: EtcdServers | None = None) -> None:
        self.name = name
        self._etcds = etcds
        self.directory = directory
        self._paths = itertools.count()
        self._etcd: EtcdServer | None = None

    def new_path(self) -> Path:
        return self.directory / f"store-{next(self._paths)}.db"

    def open(self, path: Path | None = None, **options: Any) -> Store:
        if self.name == "memory":
            return MemoryStore(**options)
        if self.name == "packed":
            return MemoryStore(
                recent_versions=1, held_versions=0, settled_block=1, segment_bytes=256, **options
            )
        if self.name == "ahead":
            return MemoryStore(
                pack_ahead=True,
                recent_versions=1,
                held_versions=0,
                settled_block=1,
                segment_bytes=256,
                **options,
            )
        if self.name == "unsettled":
            return MemoryStore(
                recent_versions=1, held_versions=1, segment_bytes=256, settle_keys=False, **options
            )
        return SQLiteStore(path or self.new_path(), **options)

    def run(self, body: Callable[[Store], Awaitable[T]], **options: Any) -> T:
        """Run `body` against a fresh store, closing it afterwards."""
        if self.name == "etcd":
            return self._run_on_etcd(body, **options)
        store = self.open(**options)

        async def main() -> T:
            try:
                return await body(store)
            finally:
                await store.close()

        return self.run_loop(main)

    def run_loop(self, main: Callable[[], Awaitable[T]]) -> T:
        async def wrapped() -> T:
            return await main()

        if self.name not in ("sqlite", "ahead"):
            with VirtualClock() as clock:
                return clock.run(wrapped())
        return asyncio.run(asyncio.wait_for(wrapped(), timeout=30))

    def _run_on_etcd(self, body: Callable[[Store], Awaitable[T]], **options: Any) -> T:
        if self._etcd is None:
            assert self._etcds is not None
            self._etcd = self._etcds.take()
        url = self._etcd.url
        layout = KeyLayout(f"/registry-{next(self._paths)}/")

        async def main() -> T:
            store = await EtcdStore.open([url], layout=layout, **options)
            try:
                return await body(store)
            finally:
                await store.close()

        return self._etcds.run(main())

    def close(self) -> None:
        if self._etcd is not None:
            self._etcd.close()


@pytest.fixture(scope="session")
def etcd_servers() -> Iterator[EtcdServers]:
    servers = EtcdServers()
    yield servers
    servers.close()


@pytest.fixture(params=["memory", "packed", "unsettled", "ahead", "sqlite", "etcd"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    etcds = request.getfixturevalue("etcd_servers") if request.param == "etcd" else None
    backend = Backend(request.param, tmp_path, etcds)
    yield backend
    backend.close()
