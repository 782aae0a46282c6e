"""Every behavioural store test runs against each backend, on the loop that backend runs on:
MemoryStore on the virtual loop (no threads, no real waiting), SQLiteStore on a real one. The
"packed" backend is a MemoryStore that keeps only the latest change unpacked, so that reads and
watch replays go through the packed form, and settles keys in blocks of one or two, so that
blocks split and merge often."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pinnace.clock import VirtualClock
from pinnace.store import MemoryStore, SQLiteStore, Store

T = TypeVar("T")


class Backend:
    def __init__(self, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        self._paths = itertools.count()

    def new_path(self) -> Path:
        return self.directory / f"store-{next(self._paths)}.db"

    def open(self, path: Path | None = None, **options: Any) -> Store:
        if self.name == "memory":
            return MemoryStore(**options)
        if self.name == "packed":
            return MemoryStore(recent_versions=1, settled_block=1, segment_bytes=256, **options)
        return SQLiteStore(path or self.new_path(), **options)

    def run(self, body: Callable[[Store], Awaitable[T]], **options: Any) -> T:
        """Run `body` against a fresh store, closing it afterwards."""
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

        if self.name != "sqlite":
            with VirtualClock() as clock:
                return clock.run(wrapped())
        return asyncio.run(asyncio.wait_for(wrapped(), timeout=30))


@pytest.fixture(params=["memory", "packed", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request.param, tmp_path)
