"""The garbage collector: deletes objects whose owners are gone, as kube-controller-manager's
(v1.32) does it for the three deletion propagation policies.

- Background (kubectl's default): the owner goes at once; a dependent whose every owner is
  absent is then deleted, one with an owner left only loses the dangling reference.
- Orphan: the owner waits with the `orphan` finalizer until the collector has removed its
  ownerReference from every dependent, then the finalizer.
- Foreground: the owner waits with the `foregroundDeletion` finalizer while its dependents are
  deleted (in the foreground too, when they have dependents of their own); the finalizer goes
  when no dependent with blockOwnerDeletion is left, or its references stop blocking (a
  dependent with another owner drops it). A dependent waited for that itself waits for one of
  its own dependents (owners that own each other) first makes its references non-blocking.

It watches every kind that can be listed, watched and deleted, namespaced or cluster-scoped
(events aside, as in Kubernetes), the kinds of established CustomResourceDefinitions among
them from when they are established until the CRD is gone (where kube-controller-manager finds
them by resyncing discovery), and indexes objects by the uids their ownerReferences name.
Whether an owner exists is decided by uid: from the caches, or, for one they do not hold, by a
live read. A namespaced owner must be in its dependent's namespace: one that has the uid a
reference names but lives in another namespace does not count, the dependent is collected as
if it were absent, and a Warning event OwnerRefInvalidNamespace says why. A cluster-scoped
dependent can have cluster-scoped owners only: a reference of it to a namespaced kind cannot be
resolved, and the dependent is never collected (with the same event when an object of that uid
exists).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from functools import partial
from typing import Any

from pinnace.api import catalog
from pinnace.api.apiextensions import crd as crds
from pinnace.api.apiextensions.custom import built_in, served_kinds
from pinnace.api.core.event import EVENT_TYPE_WARNING
from pinnace.api.kind import Kind
from pinnace.api.meta import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.client.interest import Changed, interest
from pinnace.clock.component import HeldTasks
from pinnace.controllers.controller_utils import WorkQueue, split_key

OWNER_INDEX = "ownerUID"
IGNORED_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})
"""Never owners or dependents worth tracking, as the collector's default ignore list has it."""
_VERBS = frozenset({"list", "watch", "delete"})
CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")


def owner_uids(obj: Object) -> list[str]:
    return [ref["uid"] for ref in _refs(obj) if ref.get("uid")]


def _refs(obj: Object) -> list[dict[str, Any]]:
    return obj["metadata"].get("ownerReferences") or []


def _finalizers(obj: Object) -> list[str]:
    return obj["metadata"].get("finalizers") or []


def _deletion(obj: Object) -> str | None:
    return obj["metadata"].get("deletionTimestamp")


_GRAPH_KEYS = (_refs, _deletion, _finalizers)
"""What of an object the graph builder acts on when it changes (its owners, whether it is
being deleted and how): other updates reach no further than the handler."""
_GRAPH_CHANGES = interest(Changed(_GRAPH_KEYS))


def _deleting_dependents(obj: Object) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp")) and (
        FINALIZER_DELETE_DEPENDENTS in _finalizers(obj)
    )


def _unblocked_owners(old: Object, new: Object) -> set[str]:
    """The uids of owners `old` blocked and `new` does not: its reference to them is gone or
    no longer has blockOwnerDeletion (the graph builder's addUnblockedOwnersToDeleteQueue)."""
    blocking = {ref.get("uid") for ref in _refs(new) if ref.get("blockOwnerDeletion")}
    return {
        ref["uid"]
        for ref in _refs(old)
        if ref.get("blockOwnerDeletion") and ref.get("uid") and ref["uid"] not in blocking
    }


def _matches(kind: Kind, owner: Object, ref: dict[str, Any]) -> bool:
    """Whether `ref` names `owner` (of `kind`) by its group, kind and name."""
    group = (ref.get("apiVersion") or "").rpartition("/")[0]
    return (kind.group, kind.kind, owner["metadata"]["name"]) == (
        group,
        ref.get("kind"),
        ref.get("name"),
    )


def _kind_id(kind: Kind) -> str:
    return f"{kind.plural}.{kind.group}"


def collected_kinds(kinds: Iterable[Kind] | None = None) -> list[Kind]:
    return [
        kind
        for kind in (catalog.kinds() if kinds is None else kinds)
        if set(kind.verbs) >= _VERBS and (kind.group, kind.plural) not in IGNORED_RESOURCES
    ]


class GarbageCollector:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._recorder = EventRecorder(client, "garbage-collector-controller")
        self._queue = WorkQueue(client.clock)
        self._informers: dict[str, Informer] = {}
        self._uids: dict[str, str] = {}
        """uid -> queue key of every cached object."""
        self._custom: dict[str, Kind] = {}
        """CRD name -> the kind it serves (as stored), while it is established."""
        self._stopping = HeldTasks()
        for kind in collected_kinds():
            self._follow(kind, informers.informer(kind))
        crds = informers.informer(CRDS)
        crds.add_event_handler(
            on_add=self._crd_changed,
            on_update=lambda old, new: self._crd_changed(new),
            on_delete=self._crd_deleted,
        )

    def _follow(self, kind: Kind, informer: Informer) -> None:
        informer.add_indexer(OWNER_INDEX, owner_uids)
        kind_id = _kind_id(kind)
        self._informers[kind_id] = informer
        informer.add_event_handler(
            on_add=partial(self._added, kind_id),
            on_update=partial(self._updated, kind_id),
            on_delete=partial(self._deleted, kind_id),
            interest=_GRAPH_CHANGES,
        )

    async def run(self) -> None:
        """Collect forever; cancel the task to stop."""
        try:
            for informer in list(self._informers.values()):
                await informer.wait_for_sync()
            await self._queue.run(self.sync)
        finally:
            for kind in self._custom.values():
                followed = self._informers.pop(_kind_id(kind), None)
                if followed is not None:
                    await followed.stop()
            await asyncio.gather(*self._stopping)

    def _crd_changed(self, crd: Object) -> None:
        """Follow the kind of an established CRD, anew when its storage version or names
        change."""
        name = crd["metadata"]["name"]
        if not crds.is_true(crd, crds.ESTABLISHED) or built_in(crd):
            return  # a built-in kind's informer is the catalog's
        kind, _ = served_kinds(crd)
        if self._custom.get(name) == kind:
            return
        self._crd_deleted(crd)
        self._custom[name] = kind
        if collected_kinds([kind]):
            informer = Informer(self._client, kind)
            self._follow(kind, informer)
            informer.start()

    def _crd_deleted(self, crd: Object) -> None:
        kind = self._custom.pop(crd["metadata"]["name"], None)
        informer = None if kind is None else self._informers.pop(_kind_id(kind), None)
        if informer is not None:
            self._stopping.hold(self._client.clock.loop.create_task(informer.stop()))

    # --- event handlers ----------------------------------------------------------------------

    def _added(self, kind_id: str, obj: Object) -> None:
        key = f"{kind_id}|{object_key(obj)}"
        self._uids[obj["metadata"]["uid"]] = key
        if _refs(obj) or obj["metadata"].get("deletionTimestamp"):
            self._queue.add(key)

    def _updated(self, kind_id: str, old: Object, new: Object) -> None:
        # An owner deleting in the foreground may be waiting for this one's reference only.
        for owner_uid in _unblocked_owners(old, new):
            key = self._uids.get(owner_uid)
            if key is not None:
                self._queue.add(key)
        changed = any(key(old) != key(new) for key in _GRAPH_KEYS)
        if changed:
            self._added(kind_id, new)

    def _deleted(self, kind_id: str, obj: Object) -> None:
        uid = obj["metadata"]["uid"]
        self._uids.pop(uid, None)
        for dependent_kind, dependent in self._dependents(uid):
            self._queue.add(f"{dependent_kind}|{object_key(dependent)}")
        # An owner deleting in the foreground may be waiting for this one to go.
        for owner_uid in owner_uids(obj):
            key = self._uids.get(owner_uid)
            if key is not None:
                self._queue.add(key)

    # --- sync --------------------------------------------------------------------------------

    def _dependents(self, uid: str) -> list[tuple[str, Object]]:
        return [
            (kind_id, obj)
            for kind_id, informer in self._informers.items()
            for obj in informer.by_index(OWNER_INDEX, uid)
        ]

    def _cached(self, key: str) -> tuple[Kind, Object] | None:
        kind_id, _, obj_key = key.partition("|")
        informer = self._informers[kind_id]
        obj = informer.get(*split_key(obj_key))
        return None if obj is None else (informer.kind, obj)

    async def sync(self, key: str) -> None:
        cached = self._cached(key)
        if cached is None:
            return
        kind, obj = cached
        m = obj["metadata"]
        if m.get("deletionTimestamp"):
            if FINALIZER_ORPHAN_DEPENDENTS in _finalizers(obj):
                await self._orphan_dependents(kind, obj)
            elif FINALIZER_DELETE_DEPENDENTS in _finalizers(obj):
                await self._delete_dependents(kind, obj)
            return
        if _refs(obj):
            await self._collect_if_ownerless(kind, obj)

    async def _orphan_dependents(self, kind: Kind, owner: Object) -> None:
        uid = owner["metadata"]["uid"]
        for dependent_kind, dependent in self._dependents(uid):
            await self._remove_refs(self._informers[dependent_kind].kind, dependent, {uid})
        await self._remove_finalizer(kind, owner, FINALIZER_ORPHAN_DEPENDENTS)

    async def _delete_dependents(self, kind: Kind, owner: Object) -> None:
        """Each dependent decides in its own sync (it sees this owner waiting); the owner
        lets go when none blocks it any more."""
        uid = owner["metadata"]["uid"]
        blocking = False
        for dependent_kind, dependent in self._dependents(uid):
            self._queue.add(f"{dependent_kind}|{object_key(dependent)}")
            blocking = blocking or any(
                ref.get("uid") == uid and ref.get("blockOwnerDeletion") for ref in _refs(dependent)
            )
        if not blocking:
            await self._remove_finalizer(kind, owner, FINALIZER_DELETE_DEPENDENTS)

    async def _collect_if_ownerless(self, kind: Kind, obj: Object) -> None:
        solid: list[str] = []
        gone: set[str] = set()  # dangling, or waiting for their dependents to be deleted
        waiting = False
        for ref in _refs(obj):
            owner = await self._owner(kind, obj, ref)
            if owner is None:
                gone.add(ref["uid"])
            elif _deleting_dependents(owner):
                gone.add(ref["uid"])
                waiting = True
            else:
                solid.append(ref["uid"])
        if not gone:
            return
        if solid:
            await self._remove_refs(kind, obj, gone)
            return
        m = obj["metadata"]
        dependents = self._dependents(m["uid"]) if waiting else []
        if dependents:
            if any(_deleting_dependents(dependent) for _, dependent in dependents):
                # Perhaps a cycle: an owner waiting for this object while it waits for that
                # owner. Its own references stop blocking, so the owner can go first.
                await self._unblock_refs(kind, obj)
            policy = "Foreground"
        elif FINALIZER_ORPHAN_DEPENDENTS in _finalizers(obj):
            policy = "Orphan"
        elif FINALIZER_DELETE_DEPENDENTS in _finalizers(obj):
            policy = "Foreground"
        else:
            policy = "Background"
        options = DeleteOptions(propagation_policy=policy, precondition_uid=m["uid"])
        await _tolerating_gone(
            self._client.delete(kind, m.get("namespace", ""), m["name"], options)
        )

    async def _owner(self, kind: Kind, dependent: Object, ref: dict[str, Any]) -> Object | None:
        """The owner `ref` names, None when absent (no such object, or another with its
        name). An owner of a kind the API does not serve cannot be checked: the dependent is
        tried again later, with backoff, and never deleted meanwhile. The cached object of
        the reference's uid stands for it only when its namespace, kind and name are the
        reference's; otherwise the reference is looked up as it is written."""
        key = self._uids.get(ref["uid"])
        cached = self._cached(key) if key is not None else None
        if cached is not None and cached[1]["metadata"]["uid"] == ref["uid"]:
            cached_kind, owner = cached
            namespace = owner["metadata"].get("namespace", "")
            if namespace and namespace != dependent["metadata"].get("namespace", ""):
                self._report_invalid_namespace(kind, dependent, ref)
            elif _matches(cached_kind, owner, ref):
                return owner
        owner_kind = self._kind_of(ref.get("apiVersion", ""), ref.get("kind", ""))
        if owner_kind is None:
            raise LookupError(f"owner kind {ref.get('apiVersion')}/{ref.get('kind')} is unknown")
        namespace = ""
        if owner_kind.namespaced:
            namespace = dependent["metadata"].get("namespace", "")
            if not namespace:
                return dependent  # unresolvable: taken as present, so nothing is collected
        try:
            owner = await self._client.get(owner_kind, namespace, ref.get("name", ""))
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        return owner if owner["metadata"]["uid"] == ref["uid"] else None

    def _report_invalid_namespace(self, kind: Kind, dependent: Object, ref: dict[str, Any]) -> None:
        """The graph builder's reportInvalidNamespaceOwnerRef: the owner is looked for in the
        dependent's namespace, where it is not."""
        m = dependent["metadata"]
        namespace = m.get("namespace", "")
        owner = (
            f"[{ref.get('apiVersion', '')}/{ref.get('kind', '')}, namespace: {namespace}, "
            f"name: {ref.get('name', '')}, uid: {ref['uid']}]"
        )
        involved = {
            "kind": kind.kind,
            "apiVersion": kind.api_version,
            "metadata": {k: m[k] for k in ("namespace", "name", "uid") if k in m},
        }
        message = f'ownerRef {owner} does not exist in namespace "{namespace}"'
        self._recorder.event(involved, EVENT_TYPE_WARNING, "OwnerRefInvalidNamespace", message)

    def _kind_of(self, api_version: str, kind_name: str) -> Kind | None:
        found = catalog.by_kind(api_version, kind_name)
        if found is not None:
            return found
        group = api_version.rpartition("/")[0]
        custom = self._custom.values()
        return next((k for k in custom if (k.group, k.kind) == (group, kind_name)), None)

    async def _remove_refs(self, kind: Kind, obj: Object, uids: set[str]) -> None:
        uid = obj["metadata"]["uid"]

        def drop(current: Object) -> Object:
            if current["metadata"]["uid"] == uid:
                refs = [ref for ref in _refs(current) if ref.get("uid") not in uids]
                if refs:
                    current["metadata"]["ownerReferences"] = refs
                else:
                    current["metadata"].pop("ownerReferences", None)
            return current

        m = obj["metadata"]
        await _tolerating_gone(self._client.modify(kind, m.get("namespace", ""), m["name"], drop))

    async def _unblock_refs(self, kind: Kind, obj: Object) -> None:
        """Set blockOwnerDeletion false on each of the object's references that has it."""
        uid = obj["metadata"]["uid"]

        def unblock(current: Object) -> Object:
            if current["metadata"]["uid"] == uid:
                current["metadata"]["ownerReferences"] = [
                    {**ref, "blockOwnerDeletion": False} if ref.get("blockOwnerDeletion") else ref
                    for ref in _refs(current)
                ]
            return current

        m = obj["metadata"]
        await _tolerating_gone(
            self._client.modify(kind, m.get("namespace", ""), m["name"], unblock)
        )

    async def _remove_finalizer(self, kind: Kind, obj: Object, finalizer: str) -> None:
        uid = obj["metadata"]["uid"]

        def drop(current: Object) -> Object:
            if current["metadata"]["uid"] == uid:
                current["metadata"]["finalizers"] = [
                    f for f in _finalizers(current) if f != finalizer
                ]
            return current

        m = obj["metadata"]
        await _tolerating_gone(self._client.modify(kind, m.get("namespace", ""), m["name"], drop))


async def _tolerating_gone(write: Any) -> None:
    """A write to an object that is gone, or was replaced by another of its name (a failed
    uid precondition), has nothing left to do."""
    try:
        await write
    except StatusError as e:
        if e.code not in (404, 409):
            raise
