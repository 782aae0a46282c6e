"""The namespace controller: empties a terminating namespace, then lets it go.

When a namespace is deleted it turns Terminating and keeps the `kubernetes` finalizer in
spec.finalizers. This controller deletes every namespaced object in it (pods gracefully, as any
client would), retries until nothing is left, then removes the finalizer through
namespaces/finalize, and the namespace disappears.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pinnace.api import catalog
from pinnace.api.meta import FINALIZER_KUBERNETES
from pinnace.api.status import StatusError
from pinnace.apiserver.objects import Object
from pinnace.apiserver.options import ListOptions

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0


class NamespaceController:
    def __init__(self, server: APIServer) -> None:
        self._server = server
        self._namespaces = catalog.by_resource("", "namespaces")
        self._busy: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Follow namespaces forever; cancel the task to stop."""
        kind = self._namespaces
        assert kind is not None
        revision = ""
        while True:
            async for event in self._server.watch(kind, "", ListOptions(resource_version=revision)):
                obj = event["object"]
                if event["type"] == "ERROR":
                    revision = ""
                    break
                revision = obj["metadata"]["resourceVersion"]
                if event["type"] != "DELETED" and _terminating(obj):
                    self._start(obj["metadata"]["name"])

    def _start(self, name: str) -> None:
        if name in self._busy:
            return
        self._busy.add(name)
        task = asyncio.get_running_loop().create_task(self._finalize(name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finalize(self, name: str) -> None:
        try:
            while not await self._empty(name):
                await self._server.clock.sleep(RETRY_SECONDS)
            await self._remove_finalizer(name)
        except StatusError as e:
            if e.code != 404:
                log.warning("finalizing namespace %s: %s", name, e.message)
        finally:
            self._busy.discard(name)

    async def _empty(self, namespace: str) -> bool:
        """Delete everything in the namespace; True when nothing was left to delete."""
        empty = True
        for kind in catalog.kinds():
            if not kind.namespaced or "delete" not in kind.verbs:
                continue
            listed = await self._server.list(kind, namespace)
            for item in listed["items"]:
                empty = False
                if not item["metadata"].get("deletionTimestamp"):
                    try:
                        await self._server.delete(kind, namespace, item["metadata"]["name"])
                    except StatusError as e:
                        if e.code not in (404, 409):
                            raise
        return empty

    async def _remove_finalizer(self, name: str) -> None:
        kind = self._namespaces
        assert kind is not None

        def drop(ns: Object) -> Object:
            spec = ns.setdefault("spec", {})
            spec["finalizers"] = [
                f for f in spec.get("finalizers") or [] if f != FINALIZER_KUBERNETES
            ]
            return ns

        await self._server.modify(kind, "", name, drop, subresource="finalize")


def _terminating(ns: Object) -> bool:
    return bool(ns["metadata"].get("deletionTimestamp")) and FINALIZER_KUBERNETES in (
        (ns.get("spec") or {}).get("finalizers") or []
    )
