"""A DaemonSet's history, kept as ControllerRevisions the way v1.32's daemon/update.go keeps it
(constructHistory, snapshot, dedupCurHistories, cleanupHistory).

Each distinct pod template gets one revision named `<daemonset>-<hash>`, labelled with the
template's labels and `controller-revision-hash`, owned by the DaemonSet, and holding as
`data` the strategic merge patch that restores the template (`getPatch`): `kubectl rollout
undo ds` applies that patch. The revision matching the current template is the current one
and carries the highest revision number; older ones beyond revisionHistoryLimit go, oldest
first, unless a pod still runs their template.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pinnace.api import catalog
from pinnace.api.apps.daemonset import DEFAULT_REVISION_HISTORY_LIMIT
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory, PatchType
from pinnace.controllers.daemonset_util import current_hash
from pinnace.controllers.history import (
    CONTROLLER_REVISION_HASH,
    CONTROLLER_REVISIONS,
    ControllerHistory,
    get_patch,
    hash_of,
    matches,
    max_revision,
    new_revision,
)

log = logging.getLogger(__name__)


DAEMON_SETS = catalog.kind("apps", "daemonsets")
PODS = catalog.kind("", "pods")
PodLister = Callable[[], Awaitable[list[Object]]]
"""The DaemonSet's pods, claimed."""

__all__ = ["CONTROLLER_REVISIONS", "DaemonSetHistory", "get_patch", "hash_of"]


def snapshot(ds: Object, number: int, hash_: str) -> Object:
    """The ControllerRevision that records the DaemonSet's current template as `number`."""
    return new_revision(ds, DAEMON_SETS, number, hash_)


def history_limit(ds: Object) -> int:
    limit = ds["spec"].get("revisionHistoryLimit")
    return DEFAULT_REVISION_HISTORY_LIMIT if limit is None else limit


def revisions_to_delete(ds: Object, old: list[Object], live_hashes: set[str]) -> list[Object]:
    """cleanupHistory's choice: the oldest revisions beyond revisionHistoryLimit whose
    template no pod runs."""
    excess = len(old) - history_limit(ds)
    doomed: list[Object] = []
    for revision in sorted(old, key=lambda r: r.get("revision") or 0):
        if len(doomed) >= excess:
            break
        if hash_of(revision) not in live_hashes:
            doomed.append(revision)
    return doomed


class DaemonSetHistory:
    """The ControllerRevisions of DaemonSets: claimed, created, renumbered and pruned."""

    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._revisions = ControllerHistory(client, informers, DAEMON_SETS)
        self.informer: Informer = self._revisions.informer

    async def construct(self, ds: Object, pods: PodLister) -> tuple[Object, list[Object]]:
        """constructHistory: (the current revision, the older ones), creating the current
        one or giving it the highest number as needed. The pods are relabelled when
        duplicates of the current revision are removed."""
        current: list[Object] = []
        old: list[Object] = []
        for revision in await self._revisions.claim(ds):
            labels = revision["metadata"].get("labels") or {}
            if CONTROLLER_REVISION_HASH not in labels:
                revision = clone(revision)
                revision["metadata"]["labels"] = {
                    **labels,
                    CONTROLLER_REVISION_HASH: revision["metadata"]["name"],
                }
                revision = await self._revisions.update(revision)
            (current if matches(ds, revision) else old).append(revision)
        number = max_revision(old) + 1
        if not current:
            return await self._snapshot(ds, number), old
        cur = await self._dedup(ds, current, pods)
        if (cur.get("revision") or 0) < number:
            cur = await self._revisions.renumber(cur, number)
        return cur, old

    async def cleanup(self, ds: Object, old: list[Object], pods: PodLister) -> None:
        """cleanupHistory: delete the old revisions beyond the limit no pod runs."""
        if len(old) <= history_limit(ds):
            return
        live = {hash_of(p) for p in await pods()}
        for revision in revisions_to_delete(ds, old, live):
            await self._revisions.delete(revision)

    async def _snapshot(self, ds: Object, number: int) -> Object:
        """Create the revision of the current template; on a name taken by another template,
        bump status.collisionCount (the next sync hashes anew) and fail this sync."""
        hash_ = current_hash(ds)
        wanted = snapshot(ds, number, hash_)
        namespace = ds["metadata"]["namespace"]
        try:
            return await self._revisions.create(wanted)
        except StatusError as e:
            if e.reason != "AlreadyExists":
                raise
            name = wanted["metadata"]["name"]
            existing = await self._revisions.get(namespace, name)
            if matches(ds, existing):
                return existing
            fresh = await self._client.get(DAEMON_SETS, namespace, ds["metadata"]["name"])
            status = fresh.get("status") or {}
            if status.get("collisionCount") != (ds.get("status") or {}).get("collisionCount"):
                raise  # our collisionCount was stale: retry with the fresh one
            bumped = {**status, "collisionCount": (status.get("collisionCount") or 0) + 1}
            # A new object: `fresh` is the stored one, which readers share.
            await self._client.update_status(DAEMON_SETS, {**fresh, "status": bumped})
            log.info("hash collision for daemon set %s: collisionCount bumped", name)
            raise

    async def _dedup(self, ds: Object, current: list[Object], pods: PodLister) -> Object:
        """dedupCurHistories: keep the highest-numbered of several revisions of the current
        template, move the pods over to its hash, and delete the others."""
        if len(current) == 1:
            return current[0]
        keep = current[0]
        for revision in current:
            if (revision.get("revision") or 0) >= (keep.get("revision") or 0):
                keep = revision
        hash_ = hash_of(keep)
        for pod in await pods():
            if hash_of(pod) != hash_:
                await self._client.patch(
                    PODS,
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    {"metadata": {"labels": {CONTROLLER_REVISION_HASH: hash_}}},
                    PatchType.MERGE,
                )
        for revision in current:
            if revision is not keep:
                await self._revisions.delete(revision)
        return keep
