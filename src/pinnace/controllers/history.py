"""Controller history as ControllerRevisions, what the DaemonSet and StatefulSet controllers
share (kube-controller-manager v1.32's pkg/controller/history, and the getPatch both
controllers keep a copy of).

A revision records one pod template of its owner: its `data` is the strategic merge patch
that puts the template back (`kubectl rollout undo` applies it), its labels are the template's
plus `controller-revision-hash`, its name `<owner>-<hash>`, and its `revision` number orders
the owner's history. Each controller decides itself how it names, numbers, deduplicates and
prunes its revisions (daemonset_history, statefulset); the reading, claiming and writing of
ControllerRevisions is here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory
from pinnace.controllers.controller_utils import adopt_patch, owner_reference, release_patch
from pinnace.controllers.deployment_util import safe_encode_string
from pinnace.controllers.ownership import claim

CONTROLLER_REVISIONS = catalog.kind("apps", "controllerrevisions")
CONTROLLER_REVISION_HASH = "controller-revision-hash"
MAX_NAME_PREFIX = 223
"""ControllerRevisionName cuts the owner's name to this, leaving room for `-<hash>`."""


def _keys_sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _keys_sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_keys_sorted(v) for v in value]
    return value


def get_patch(owner: Object) -> Object:
    """getPatch: the patch that replaces the owner's pod template with the current one.
    Go builds it from the typed template turned into a map, so an empty creationTimestamp
    shows as null, every container has `resources` and keys come out sorted; kubectl
    compares these bytes with its own patch of the owner to tell that a rollback has nothing
    to do."""
    template = clone(owner["spec"].get("template") or {})
    template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    spec = template.get("spec") or {}
    for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        container.setdefault("resources", {})
    template["$patch"] = "replace"
    return _keys_sorted({"spec": {"template": template}})


def matches(owner: Object, revision: Object) -> bool:
    """The revision holds the owner's current template."""
    return revision.get("data") == get_patch(owner)


def revision_number(revision: Object) -> int:
    return revision.get("revision") or 0


def max_revision(revisions: Iterable[Object]) -> int:
    return max((revision_number(r) for r in revisions), default=0)


def sort_revisions(revisions: Iterable[Object]) -> list[Object]:
    """SortControllerRevisions: by revision number, then creation time, then name."""
    return sorted(
        revisions,
        key=lambda r: (
            revision_number(r),
            r["metadata"].get("creationTimestamp") or "",
            r["metadata"]["name"],
        ),
    )


def hash_of(obj: Object) -> str:
    """An object's controller-revision-hash label."""
    return (obj["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH, "")


def _fnv32(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h * 0x01000193) & 0xFFFFFFFF) ^ byte
    return h


def hash_controller_revision(data: Object, collision_count: int | None) -> str:
    """HashControllerRevision: FNV-32 over the data's JSON, then over collisionCount's digits
    when set, safe-encoded."""
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        raw += str(collision_count).encode()
    return safe_encode_string(str(_fnv32(raw)))


def revision_name(owner: Object, hash_: str) -> str:
    return f"{owner['metadata']['name'][:MAX_NAME_PREFIX]}-{hash_}"


def new_revision(owner: Object, kind: Kind, number: int, hash_: str) -> Object:
    """The ControllerRevision that records the owner's current template as `number`
    (NewControllerRevision, with the owner's annotations as both controllers copy them)."""
    template_labels = (owner["spec"].get("template") or {}).get("metadata", {}).get("labels") or {}
    meta: Object = {
        "name": revision_name(owner, hash_),
        "namespace": owner["metadata"]["namespace"],
        "labels": {**template_labels, CONTROLLER_REVISION_HASH: hash_},
        "ownerReferences": [owner_reference(owner, kind)],
    }
    if owner["metadata"].get("annotations"):
        meta["annotations"] = dict(owner["metadata"]["annotations"])
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": get_patch(owner),
        "revision": number,
    }


class ControllerHistory:
    """The ControllerRevisions of one kind of owner: listed from an informer, claimed, and
    created, renumbered, patched and deleted through the API (history.Interface)."""

    def __init__(self, client: Client, informers: InformerFactory, owner_kind: Kind) -> None:
        self._client = client
        self._owner_kind = owner_kind
        self.informer: Informer = informers.informer(CONTROLLER_REVISIONS)

    async def claim(self, owner: Object) -> list[Object]:
        """ClaimControllerRevisions: owned revisions the selector matches, adopting matching
        orphans and releasing owned ones that stopped matching."""
        return await claim(
            owner,
            as_label_selector(owner["spec"].get("selector")),
            self.informer.list(owner["metadata"]["namespace"]),
            lambda r: self.patch(r, adopt_patch(r, owner, self._owner_kind)),
            lambda r: self.patch(r, release_patch(r, owner)),
        )

    async def create(self, revision: Object) -> Object:
        return await self._client.create(
            CONTROLLER_REVISIONS, revision["metadata"]["namespace"], revision
        )

    async def get(self, namespace: str, name: str) -> Object:
        return await self._client.get(CONTROLLER_REVISIONS, namespace, name)

    async def update(self, revision: Object) -> Object:
        return await self._client.update(CONTROLLER_REVISIONS, revision)

    async def renumber(self, revision: Object, number: int) -> Object:
        """UpdateControllerRevision: give the revision a new number."""
        if revision_number(revision) == number:
            return revision
        return await self.update({**revision, "revision": number})

    async def patch(self, revision: Object, patch: Object) -> Object | None:
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

    async def delete(self, revision: Object) -> None:
        try:
            await self._client.delete(
                CONTROLLER_REVISIONS,
                revision["metadata"]["namespace"],
                revision["metadata"]["name"],
            )
        except StatusError as e:
            if e.code != 404:
                raise
