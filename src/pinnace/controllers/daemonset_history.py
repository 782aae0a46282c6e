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
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.apps.daemonset import DEFAULT_REVISION_HISTORY_LIMIT
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory, PatchType
from pinnace.controllers.controller_utils import (
    adopt_patch,
    owner_reference,
    release_patch,
)
from pinnace.controllers.daemonset_util import CONTROLLER_REVISION_HASH, current_hash
from pinnace.controllers.ownership import claim

log = logging.getLogger(__name__)


CONTROLLER_REVISIONS = catalog.kind("apps", "controllerrevisions")
DAEMON_SETS = catalog.kind("apps", "daemonsets")
PODS = catalog.kind("", "pods")
PodLister = Callable[[], Awaitable[list[Object]]]
"""The DaemonSet's pods, claimed."""


def _keys_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _keys_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(v) for v in value]
    return value


def get_patch(ds: Object) -> Object:
    """getPatch: the patch that replaces the DaemonSet's pod template with the current one.
    Go builds it from the typed template turned into a map, so an empty creationTimestamp
    shows as null, every container has `resources` and keys come out sorted; kubectl
    compares these bytes with its own patch of the DaemonSet to tell that a rollback has
    nothing to do."""
    template = clone(ds["spec"].get("template") or {})
    template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    spec = template.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        container.setdefault("resources", {})
    template["$patch"] = "replace"
    return _keys_sorted({"spec": {"template": template}})


def matches(ds: Object, revision: Object) -> bool:
    """Match: the revision holds the DaemonSet's current template."""
    return revision.get("data") == get_patch(ds)


def max_revision(revisions: Iterable[Object]) -> int:
    return max((r.get("revision") or 0 for r in revisions), default=0)


def snapshot(ds: Object, number: int, hash_: str) -> Object:
    """The ControllerRevision that records the DaemonSet's current template as `number`."""
    template_labels = (ds["spec"].get("template") or {}).get("metadata", {}).get("labels") or {}
    meta: Object = {
        "name": f"{ds['metadata']['name']}-{hash_}",
        "namespace": ds["metadata"]["namespace"],
        "labels": {**template_labels, CONTROLLER_REVISION_HASH: hash_},
        "ownerReferences": [owner_reference(ds, DAEMON_SETS)],
    }
    if ds["metadata"].get("annotations"):
        meta["annotations"] = dict(ds["metadata"]["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": get_patch(ds),
        "revision": number,
    }


def history_limit(ds: Object) -> int:
    limit = ds["spec"].get("revisionHistoryLimit")
    return DEFAULT_REVISION_HISTORY_LIMIT if limit is None else limit


def hash_of(obj: Object) -> str:
    return (obj["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH, "")


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
        self.informer: Informer = informers.informer(CONTROLLER_REVISIONS)

    async def construct(self, ds: Object, pods: PodLister) -> tuple[Object, list[Object]]:
        """constructHistory: (the current revision, the older ones), creating the current
        one or giving it the highest number as needed. The pods are relabelled when
        duplicates of the current revision are removed."""
        current: list[Object] = []
        old: list[Object] = []
        for revision in await self._claim(ds):
            labels = revision["metadata"].get("labels") or {}
            if CONTROLLER_REVISION_HASH not in labels:
                revision = clone(revision)
                revision["metadata"]["labels"] = {
                    **labels,
                    CONTROLLER_REVISION_HASH: revision["metadata"]["name"],
                }
                revision = await self._client.update(CONTROLLER_REVISIONS, revision)
            (current if matches(ds, revision) else old).append(revision)
        number = max_revision(old) + 1
        if not current:
            return await self._snapshot(ds, number), old
        cur = await self._dedup(ds, current, pods)
        if (cur.get("revision") or 0) < number:
            cur = await self._client.update(CONTROLLER_REVISIONS, {**cur, "revision": number})
        return cur, old

    async def cleanup(self, ds: Object, old: list[Object], pods: PodLister) -> None:
        """cleanupHistory: delete the old revisions beyond the limit no pod runs."""
        if len(old) <= history_limit(ds):
            return
        live = {hash_of(p) for p in await pods()}
        for revision in revisions_to_delete(ds, old, live):
            await self._delete(revision)

    async def _claim(self, ds: Object) -> list[Object]:
        """ClaimControllerRevisions: owned revisions the selector matches, adopting matching
        orphans and releasing owned ones that stopped matching."""
        return await claim(
            ds,
            as_label_selector(ds["spec"].get("selector")),
            self.informer.list(ds["metadata"]["namespace"]),
            lambda revision: self._patch(revision, adopt_patch(revision, ds, DAEMON_SETS)),
            lambda revision: self._patch(revision, release_patch(revision, ds)),
        )

    async def _snapshot(self, ds: Object, number: int) -> Object:
        """Create the revision of the current template; on a name taken by another template,
        bump status.collisionCount (the next sync hashes anew) and fail this sync."""
        hash_ = current_hash(ds)
        wanted = snapshot(ds, number, hash_)
        namespace = ds["metadata"]["namespace"]
        try:
            return await self._client.create(CONTROLLER_REVISIONS, namespace, wanted)
        except StatusError as e:
            if e.reason != "AlreadyExists":
                raise
            name = wanted["metadata"]["name"]
            existing = await self._client.get(CONTROLLER_REVISIONS, namespace, name)
            if matches(ds, existing):
                return existing
            fresh = await self._client.get(DAEMON_SETS, namespace, ds["metadata"]["name"])
            status = fresh.get("status") or {}
            if status.get("collisionCount") != (ds.get("status") or {}).get("collisionCount"):
                raise  # our collisionCount was stale: retry with the fresh one
            fresh["status"] = {**status, "collisionCount": (status.get("collisionCount") or 0) + 1}
            await self._client.update_status(DAEMON_SETS, fresh)
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
                await self._delete(revision)
        return keep

    async def _patch(self, revision: Object, patch: Object) -> Object | None:
        try:
            return await self._client.patch(
                CONTROLLER_REVISIONS,
                revision["metadata"]["namespace"],
                revision["metadata"]["name"],
                patch,
            )
        except StatusError as e:
            if e.code in (404, 409, 422):
                return None  # gone or changed meanwhile: the next sync sees it
            raise

    async def _delete(self, revision: Object) -> None:
        try:
            await self._client.delete(
                CONTROLLER_REVISIONS,
                revision["metadata"]["namespace"],
                revision["metadata"]["name"],
            )
        except StatusError as e:
            if e.code != 404:
                raise
