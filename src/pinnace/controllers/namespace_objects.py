"""What the ServiceAccount controller and the root CA publisher share: each keeps one object
in every active namespace (pkg/controller/serviceaccount, pkg/controller/certificates/
rootcacertpublisher, v1.32).

A namespace added, or updated while active, is synced; so is one whose object is deleted (or,
for the publisher, changed). A sync creates the object when the informer has none, ignoring an
AlreadyExists and a namespace that is gone or terminating; a failure is retried with back-off.
`start` syncs the namespaces there are before it returns, so what a cluster starts after it
(a scenario's pods) finds them in place.
"""

from __future__ import annotations

import asyncio

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers.controller_utils import WorkQueue, namespace_terminating

NAMESPACES = catalog.kind("", "namespaces")


def terminating_or_gone(e: StatusError) -> bool:
    """A create refused because its namespace is being deleted, or is no more."""
    return e.code == 404 or namespace_terminating(e)


def is_active(ns: Object) -> bool:
    return (ns.get("status") or {}).get("phase") == "Active"


class NamespaceObjectController:
    """Keeps `ensure` done in every namespace; subclasses say which objects they watch and
    what `sync` makes of a namespace."""

    def __init__(self, client: Client, kind: Kind) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._namespaces = Informer(client, NAMESPACES)
        self._objects = Informer(client, kind)
        self._namespaces.add_event_handler(
            on_add=self._namespace_changed,
            on_update=lambda old, new: self._namespace_updated(new),
        )
        self._running: list[asyncio.Task[None]] = []

    def _namespace_changed(self, ns: Object) -> None:
        self._queue.add(ns["metadata"]["name"])

    def _namespace_updated(self, ns: Object) -> None:
        if is_active(ns):
            self._queue.add(ns["metadata"]["name"])

    async def start(self) -> None:
        self._namespaces.start()
        self._objects.start()
        await self._namespaces.wait_for_sync()
        await self._objects.wait_for_sync()
        for ns in self._namespaces.list(""):
            try:
                await self.sync(ns["metadata"]["name"])
            except StatusError:
                self._queue.add(ns["metadata"]["name"])  # retried once running
        self._running.append(self._client.clock.loop.create_task(self._queue.run(self.sync)))

    async def stop(self) -> None:
        await cancel_and_wait(self._running)
        self._running.clear()
        await self._objects.stop()
        await self._namespaces.stop()

    async def sync(self, namespace: str) -> None:
        raise NotImplementedError

    async def _create(self, namespace: str, obj: Object) -> None:
        try:
            await self._client.create(self._objects.kind, namespace, obj)
        except StatusError as e:
            if e.code != 409 and not terminating_or_gone(e):
                raise
