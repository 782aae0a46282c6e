"""One kind's changes, straight from the store's commits: how the simulation's observer
follows the pods without an informer.

An informer of its own costs every change of the kind a watch delivery, a task's turn to take
it and another to hand it to the handlers, and a cached copy, to a reader that only records
(three of a pod start's fifteen watch deliveries). A `CommitFeed` lists the kind once, then
is told of every commit of it as the store makes it (`Store.observe`, as the event log is):
the same changes in the same order, at the same virtual time, with no task of its own, so the
cluster runs exactly as it would without it. Its handler must not write to the cluster.

    feed = CommitFeed(plane.store, plane.client(), PODS, on_change)
    await feed.start()      # on_change("ADDED", pod) for every pod now, then every change
    ...
    feed.stop()
"""

from __future__ import annotations

from collections.abc import Callable

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.apiserver.keys import kind_prefix
from pinnace.client import Client
from pinnace.store import Store, WatchEvent

OnChange = Callable[[str, Object], None]
"""Told (type, object) of each change: ADDED, MODIFIED, or DELETED with the last state."""


class CommitFeed:
    """The `kind` objects `client` lists, then every commit `store` makes of one, to
    `on_change`."""

    def __init__(self, store: Store, client: Client, kind: Kind, on_change: OnChange) -> None:
        self._store = store
        self._client = client
        self._kind = kind
        self._prefix = kind_prefix(kind)
        self._on_change = on_change
        self._stop: Callable[[], None] | None = None

    async def start(self) -> None:
        """List, then follow. Commits made while the list is read are held, and those the
        list does not hold (a later revision) handed on after it: none is missed or doubled."""
        held: list[WatchEvent] = []
        self._stop = self._store.observe(held.append)
        try:
            listed = await self._client.list(self._kind)
        finally:
            self._stop()
            self._stop = None
        # No await from here on: nothing can commit before the feed follows.
        self._stop = self._store.observe(self._commit)
        for obj in listed["items"]:
            self._on_change("ADDED", obj)
        revision = int(listed["metadata"]["resourceVersion"])
        for event in held:
            if event.revision > revision:
                self._commit(event)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None

    def _commit(self, event: WatchEvent) -> None:
        if event.key.startswith(self._prefix):
            self._on_change(event.type, event.object)
