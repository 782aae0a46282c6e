"""An in-process API server on the memory store and a virtual clock, for pipeline tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.server import APIServer
from pinnace.apiserver.service_allocation import ServiceNetwork
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore, Store

T = TypeVar("T")


class Harness:
    """Runs coroutines against one server on one virtual loop."""

    def __init__(self, store: Store | None = None, network: ServiceNetwork | None = None) -> None:
        self.loop = VirtualEventLoop()
        self.server = APIServer(store or MemoryStore(), Clock(self.loop), Randomness(7), network)
        self.run(bootstrap(self.server))

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        return self.run(fn(*args, **kwargs))

    def invalid_causes(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> list[str]:
        """The `field: message` causes of the 422 that `fn(*args)` must answer."""
        with pytest.raises(StatusError) as e:
            self.call(fn, *args)
        assert e.value.code == 422
        assert e.value.details is not None
        return [f"{c['field']}: {c['message']}" for c in e.value.details["causes"]]


@pytest.fixture
def api() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)
