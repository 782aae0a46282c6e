"""An in-process API server on the memory store and a virtual clock, and a client of it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

import pytest
from tests.support import cancel_the_rest

from pinnace.api import catalog
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.server import APIServer
from pinnace.client import LocalClient
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

T = TypeVar("T")


PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
EVENTS = catalog.kind("", "events")
CONFIG_MAPS = catalog.kind("", "configmaps")
DEPLOYMENTS = catalog.kind("apps", "deployments")


def pod(name: str, namespace: str = "default", node: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def config_map(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


class Cluster:
    """One server, one virtual loop, and a LocalClient of the server."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.loop = VirtualEventLoop()
        self.store = store or MemoryStore()
        self.server = APIServer(self.store, Clock(self.loop), Randomness(7))
        self.client = LocalClient(self.server)
        self.run(bootstrap(self.server))

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        """Cancel what is still running (informers a failed test left behind), then close."""
        self.run(cancel_the_rest())
        self.loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.close()
