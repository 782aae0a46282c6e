"""The namespace controller: empties a terminating namespace, then lets it go.

When a namespace is deleted it turns Terminating and keeps the `kubernetes` finalizer in
spec.finalizers. This controller, a client of the API following namespaces with an informer,
deletes every namespaced object in it (pods gracefully, as any client would), looks again
every second until nothing is left, then removes the finalizer through namespaces/finalize, and
the namespace disappears. All it goes by is in the API, so a restart carries on where it was.
"""

from __future__ import annotations

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.meta import FINALIZER_KUBERNETES
from pinnace.api.status import StatusError
from pinnace.apiserver.objects import Object, clone
from pinnace.client import Client, Informer
from pinnace.controllers.controller_utils import WorkQueue

RETRY_SECONDS = 1.0
_NAMESPACES = catalog.by_resource("", "namespaces")
assert _NAMESPACES is not None
NAMESPACES: Kind = _NAMESPACES


class NamespaceController:
    def __init__(self, client: Client) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._namespaces = Informer(client, NAMESPACES)
        self._namespaces.add_event_handler(
            on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new)
        )

    async def run(self) -> None:
        """Empty terminating namespaces forever; cancel the task to stop."""
        self._namespaces.start()
        try:
            await self._namespaces.wait_for_sync()
            await self._queue.run(self.sync)
        finally:
            self._namespaces.stop()

    def _enqueue(self, ns: Object) -> None:
        if _terminating(ns):
            self._queue.add(ns["metadata"]["name"])

    async def sync(self, name: str) -> None:
        ns = self._namespaces.get("", name)
        if ns is None or not _terminating(ns):
            return
        if await self._empty(name):
            await self._remove_finalizer(ns)
        else:
            self._queue.add_after(name, RETRY_SECONDS)

    async def _empty(self, namespace: str) -> bool:
        """Delete everything in the namespace; True when nothing was left to delete."""
        empty = True
        for kind in catalog.kinds():
            if not kind.namespaced or "delete" not in kind.verbs:
                continue
            listed = await self._client.list(kind, namespace)
            for item in listed["items"]:
                empty = False
                if not item["metadata"].get("deletionTimestamp"):
                    try:
                        await self._client.delete(kind, namespace, item["metadata"]["name"])
                    except StatusError as e:
                        if e.code not in (404, 409):
                            raise
        return empty

    async def _remove_finalizer(self, ns: Object) -> None:
        """A stale cached namespace fails with a conflict, and the sync is retried."""
        finalized = clone(ns)
        spec = finalized.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != FINALIZER_KUBERNETES]
        try:
            await self._client.update_finalize(NAMESPACES, finalized)
        except StatusError as e:
            if e.code != 404:
                raise


def _terminating(ns: Object) -> bool:
    return bool(ns["metadata"].get("deletionTimestamp")) and FINALIZER_KUBERNETES in (
        (ns.get("spec") or {}).get("finalizers") or []
    )
