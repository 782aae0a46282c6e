"""An in-process API server on the memory store and a virtual clock, for pipeline tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

T = TypeVar("T")


class Harness:
    """Runs coroutines against one server on one virtual loop."""

    def __init__(self) -> None:
        self.loop = VirtualEventLoop()
        self.server = APIServer(MemoryStore(), Clock(self.loop), Randomness(7))
        self.run(bootstrap(self.server))

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return self.run(fn(*args, **kwargs))


@pytest.fixture
def api() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)
