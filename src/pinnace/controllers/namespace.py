"""The namespace controller: empties a terminating namespace, then lets it go.

When a namespace is deleted it turns Terminating and keeps the `kubernetes` finalizer in
spec.finalizers. This controller, a client of the API following namespaces with an informer,
deletes every namespaced object in it (pods gracefully, as any client would), looks again
every second until nothing is left, then removes the finalizer through namespaces/finalize, and
the namespace disappears. All it goes by is in the API, so a restart carries on where it was.

Meanwhile it reports in the namespace's status the five conditions kube-controller-manager's
namespace deleter keeps (v1.32): what remains (`pods. has 2 resource instances`), which
finalizers hold it, and whether deletions failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.meta import FINALIZER_KUBERNETES
from pinnace.api.objects import Object, clone
from pinnace.api.options import BACKGROUND
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers.controller_utils import RateLimiter, WorkQueue

RETRY_SECONDS = 1.0
MAX_FAILURE_BACKOFF = 60.0
"""A namespace whose deletion fails is tried again at least this often (nsControllerRateLimiter)."""
CONDITIONS = (
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
)
"""Each condition the deleter keeps, with the reason and message of its False ("all well")."""
NAMESPACES = catalog.kind("", "namespaces")


class NamespaceController:
    def __init__(
        self, client: Client, kinds: Callable[[], tuple[Kind, ...]] = catalog.kinds
    ) -> None:
        """`kinds`: every kind served now (the custom resources' among them, in the API
        server's process), as the deleter asks discovery."""
        self._client = client
        self._kinds = kinds
        self._queue = WorkQueue(client.clock, RateLimiter(client.clock, cap=MAX_FAILURE_BACKOFF))
        self._running: list[asyncio.Task[None]] = []
        self._namespaces = Informer(client, NAMESPACES)
        self._namespaces.add_event_handler(
            on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new)
        )

    async def start(self) -> None:
        self._running.append(self._client.clock.loop.create_task(self.run()))

    async def stop(self) -> None:
        await cancel_and_wait(self._running)
        self._running.clear()

    async def run(self) -> None:
        """Empty terminating namespaces forever; cancel the task to stop."""
        self._namespaces.start()
        try:
            await self._namespaces.wait_for_sync()
            await self._queue.run(self.sync)
        finally:
            await self._namespaces.stop()

    def _enqueue(self, ns: Object) -> None:
        if _terminating(ns):
            self._queue.add(ns["metadata"]["name"])

    async def sync(self, name: str) -> None:
        ns = self._namespaces.get("", name)
        if ns is None or not _terminating(ns):
            return
        content = await self._delete_content(name)
        ns = await self._update_conditions(ns, content)
        if content.errors:
            raise content.errors[0]  # retried with backoff
        if content.remaining:
            self._queue.add_after(name, RETRY_SECONDS)
        else:
            await self._remove_finalizer(ns)

    async def _delete_content(self, namespace: str) -> _Content:
        """Delete everything in the namespace; what is left (being deleted, or held by
        finalizers) is counted."""
        content = _Content()
        for kind in self._kinds():
            if not kind.namespaced or "delete" not in kind.verbs:
                continue
            try:
                listed = await self._client.list(kind, namespace)
            except StatusError as e:
                content.errors.append(e)
                continue
            for item in listed["items"]:
                left = await self._delete(kind, item, content)
                if left is None:
                    continue
                resource = f"{kind.plural}.{kind.group}"
                content.remaining[resource] = content.remaining.get(resource, 0) + 1
                for finalizer in left["metadata"].get("finalizers") or []:
                    content.finalizers[finalizer] = content.finalizers.get(finalizer, 0) + 1
        return content

    async def _delete(self, kind: Kind, item: Object, content: _Content) -> Object | None:
        """Delete `item` unless it is being deleted already; what is left of it, None if it
        went at once."""
        if item["metadata"].get("deletionTimestamp"):
            return item
        try:
            left = await self._client.delete(
                kind, item["metadata"]["namespace"], item["metadata"]["name"], BACKGROUND
            )
        except StatusError as e:
            if e.code == 404:
                return None
            if e.code != 409:
                content.errors.append(e)
            return item
        marked = left.get("kind") != "Status" and left["metadata"].get("deletionTimestamp")
        return left if marked else None

    async def _update_conditions(self, ns: Object, content: _Content) -> Object:
        """Write the conditions that changed (a transition restamps lastTransitionTime);
        the namespace as written."""
        wanted = {t: ("False", reason, message) for t, reason, message in CONDITIONS}
        if content.errors:
            failures = [e.message for e in content.errors]
            wanted["NamespaceDeletionContentFailure"] = (
                "True",
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(failures)} remaining: "
                + (failures[0] if len(failures) == 1 else f"[{', '.join(failures)}]"),
            )
        if content.remaining:
            counts = sorted(f"{r} has {n} resource instances" for r, n in content.remaining.items())
            wanted["NamespaceContentRemaining"] = (
                "True",
                "SomeResourcesRemain",
                f"Some resources are remaining: {', '.join(counts)}",
            )
        if content.finalizers:
            counts = sorted(f"{f} in {n} resource instances" for f, n in content.finalizers.items())
            wanted["NamespaceFinalizersRemaining"] = (
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " + ", ".join(counts),
            )
        updated = clone(ns)
        status = updated.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        by_type = {c.get("type"): c for c in conditions}
        changed = False
        for condition_type, (state, reason, message) in wanted.items():
            old = by_type.get(condition_type)
            if old is None:
                old = {"type": condition_type}
                conditions.append(old)
            elif (old.get("status"), old.get("reason"), old.get("message")) == (
                state,
                reason,
                message,
            ):
                continue
            if old.get("status") != state:
                old["lastTransitionTime"] = self._client.clock.now_rfc3339()
            old.update(status=state, reason=reason, message=message)
            changed = True
        if not changed:
            return ns
        try:
            return await self._client.update_status(NAMESPACES, updated)
        except StatusError as e:
            if e.code not in (404, 409):
                raise
            return ns  # gone, or changed meanwhile: the next sync writes them

    async def _remove_finalizer(self, ns: Object) -> None:
        """A stale cached namespace fails with a conflict, and the sync is retried."""
        finalized = clone(ns)
        spec = finalized.setdefault("spec", {})
        if FINALIZER_KUBERNETES not in spec.get("finalizers") or ():
            return  # held by others' finalizers only: theirs to remove
        spec["finalizers"] = [f for f in spec["finalizers"] if f != FINALIZER_KUBERNETES]
        try:
            await self._client.update_finalize(NAMESPACES, finalized)
        except StatusError as e:
            if e.code != 404:
                raise


@dataclass
class _Content:
    remaining: dict[str, int] = field(default_factory=dict)
    """resource.group -> instances left."""
    finalizers: dict[str, int] = field(default_factory=dict)
    """finalizer -> instances it holds."""
    errors: list[StatusError] = field(default_factory=list)


def _terminating(ns: Object) -> bool:
    """Deleted, and not finalized: any finalizer left in spec.finalizers, not only this
    controller's, has it emptied (the deleter's `finalized` check)."""
    return bool(ns["metadata"].get("deletionTimestamp")) and bool(
        (ns.get("spec") or {}).get("finalizers")
    )
