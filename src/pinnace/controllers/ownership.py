"""Finding a controlled object's controller, or the controllers that may adopt an orphan: what
every workload controller's event handlers ask (resolveControllerRef and the get*ForPod
helpers of kube-controller-manager)."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object
from pinnace.client import Client, Informer, object_key
from pinnace.client.interest import Holds, in_namespaces, interest
from pinnace.controllers.controller_utils import (
    Expectations,
    WorkQueue,
    adopt_patch,
    controller_ref,
    is_pod_active,
    is_pod_ready,
    patch_pod,
    ready_since,
    release_patch,
    spec_selector,
)

SelectorOf = Callable[[Object], LabelSelector | None]
Labels = tuple[tuple[str, str], ...]

CONTROLLER_UID_INDEX = "podControllerUID"
"""Pods by the uid of their controller, orphans by `orphan_key` of their namespace: the pods an
owner may claim."""


def resolve_controller_ref(
    obj: Object, kind: str, owners: Informer, ref: Object | None = None
) -> Object | None:
    """The `kind` object of `owners` that controls `obj` (through `ref`, its controller
    reference by default), or None: another kind, gone, or a namesake with another uid."""
    ref = ref if ref is not None else controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    owner = owners.get(obj["metadata"]["namespace"], ref.get("name", ""))
    if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
        return None
    return owner


def controller_kind(obj: Object) -> str | None:
    """The kind of `obj`'s controller (its controller reference's), "" when it has none."""
    ref = controller_ref(obj)
    return "" if ref is None else ref.get("kind")


def controlled_by(*kinds: str, orphans: bool = False) -> Holds:
    """The condition (`pinnace.client.interest`) that the object is controlled by one of
    `kinds` (before or after its change), or has no controller when `orphans`."""
    return Holds(controller_kind, frozenset(kinds) | ({""} if orphans else set()))


def selecting_owners(
    obj: Object, owners: Informer, selector_of: SelectorOf = spec_selector
) -> list[Object]:
    """The objects of `owners` in `obj`'s namespace whose (non-empty) selector matches its
    labels: who may adopt it once it is an orphan. None for an object without labels."""
    labels = obj["metadata"].get("labels") or {}
    if not labels:
        return []
    found = []
    for owner in owners.list(obj["metadata"]["namespace"]):
        selector = selector_of(owner)
        if selector is not None and not selector.empty and selector.matches(labels):
            found.append(owner)
    return found


async def claim(
    owner: Object,
    selector: LabelSelector | None,
    candidates: Iterable[Object],
    adopt: Callable[[Object], Awaitable[Object | None]],
    release: Callable[[Object], Awaitable[object]],
) -> list[Object]:
    """ClaimObjects (BaseControllerRefManager): of `candidates` in the owner's namespace, those
    `owner` controls and its selector matches, once matching orphans are adopted (`adopt`
    answers the adopted object, or None if that failed) and owned objects that stopped
    matching are released. An owner being deleted adopts and releases nothing; an object
    being deleted is not adopted."""
    deleting = bool(owner["metadata"].get("deletionTimestamp"))
    uid = owner["metadata"]["uid"]
    claimed: list[Object] = []
    for obj in candidates:
        matches = selects(selector, obj["metadata"].get("labels") or {})
        ref = controller_ref(obj)
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                claimed.append(obj)
            elif not deleting:
                await release(obj)
            continue
        if matches and not deleting and not obj["metadata"].get("deletionTimestamp"):
            adopted = await adopt(obj)
            if adopted is not None:
                claimed.append(adopted)
    return claimed


def selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether an owner with `selector` claims an object with `labels`: an empty selector
    claims nothing."""
    return selector is not None and not selector.empty and selector.matches(labels)


def index_pods_by_controller(pods: Informer) -> None:
    """File the pods of the (shared) informer by their controller's uid, for
    `claim_candidates`; once, whichever controller asks first."""
    with contextlib.suppress(ValueError):  # another controller on this informer did it
        pods.add_indexer(CONTROLLER_UID_INDEX, _controller_uid)


def orphan_key(namespace: str) -> str:
    """Where `CONTROLLER_UID_INDEX` files the orphans of `namespace` (a uid has no "/")."""
    return f"/{namespace}"


def _controller_uid(pod: Object) -> list[str]:
    ref = controller_ref(pod)
    if ref is None:
        return [orphan_key(pod["metadata"].get("namespace") or "")]
    return [ref.get("uid", "")]


def claim_candidates(pods: Informer, owner: Object) -> list[Object]:
    """The pods of `owner`'s namespace it may claim: those it controls and the orphans. A pod
    controlled by another owner is left alone by `claim` whatever its labels, so this is what
    listing the namespace's pods gives `claim` to work on, without reading the others
    (v1.33's ReplicaSet controller finds its pods by this index too)."""
    namespace = owner["metadata"]["namespace"]
    owned = pods.by_index(CONTROLLER_UID_INDEX, owner["metadata"]["uid"])
    candidates = [pod for pod in owned if pod["metadata"]["namespace"] == namespace]
    return candidates + pods.by_index(CONTROLLER_UID_INDEX, orphan_key(namespace))


@dataclass
class PodGroup:
    """The active pods (IsPodActive) of one namespace with the same controller uid and the same
    labels: their keys, and of those that are ready, since when (None: no time given)."""

    namespace: str
    labels: Mapping[str, str]
    pods: dict[str, None] = field(default_factory=dict)
    ready: dict[str, float | None] = field(default_factory=dict)


class ActivePodGroups:
    """An informer's active pods grouped by their controller's uid ("" for orphans), namespace
    and labels, kept in step with its cache. The pods of a workload mostly share their labels,
    so an owner claiming its pods, or counting its ready ones, looks at a few groups (its
    selector matched once for each) instead of every pod, and a pod's change costs one move
    between groups."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, dict[Labels, PodGroup]]] = {}
        """uid -> namespace -> sorted labels -> group"""
        self._filed: dict[str, tuple[str, str, Labels]] = {}
        """An active pod's key -> where its group is"""

    def groups(self, uid: str, namespace: str) -> list[PodGroup]:
        """The groups of the pods `uid` controls (the orphans', for "") in `namespace`."""
        return list(self._groups.get(uid, {}).get(namespace, {}).values())

    def changed(self, key: str, old: Object | None, new: Object | None) -> None:
        """An informer listener: the pod of `key` went from `old` to `new`. A pod that stays in
        its group (most updates: status writes) only has its readiness refiled; the groups'
        readers count their pods, so no order among them is kept."""
        if new is None or not is_pod_active(new):
            self._drop(key)
            return
        meta = new["metadata"]
        labels = meta.get("labels") or {}
        filing = (
            (controller_ref(new) or {}).get("uid", ""),
            meta.get("namespace") or "",
            tuple(sorted(labels.items())),
        )
        uid, namespace, sorted_labels = filing
        if self._filed.get(key) != filing:
            self._drop(key)
            by_labels = self._groups.setdefault(uid, {}).setdefault(namespace, {})
            if sorted_labels not in by_labels:
                by_labels[sorted_labels] = PodGroup(namespace, dict(labels))
            by_labels[sorted_labels].pods[key] = None
            self._filed[key] = filing
        group = self._groups[uid][namespace][sorted_labels]
        if is_pod_ready(new):
            group.ready[key] = ready_since(new)
        else:
            group.ready.pop(key, None)

    def _drop(self, key: str) -> None:
        where = self._filed.pop(key, None)
        if where is not None:
            self._unfile(key, *where)

    def _unfile(self, key: str, uid: str, namespace: str, labels: Labels) -> None:
        namespaces = self._groups[uid]
        by_labels = namespaces[namespace]
        group = by_labels[labels]
        del group.pods[key]
        group.ready.pop(key, None)
        if group.pods:
            return
        del by_labels[labels]
        if not by_labels:
            del namespaces[namespace]
            if not namespaces:
                del self._groups[uid]


_GROUPS: weakref.WeakKeyDictionary[Informer, ActivePodGroups] = weakref.WeakKeyDictionary()


def active_pod_groups(pods: Informer) -> ActivePodGroups:
    """The `ActivePodGroups` of the (shared) pod informer `pods`, kept from the first ask on."""
    groups = _GROUPS.get(pods)
    if groups is None:
        groups = _GROUPS[pods] = ActivePodGroups()
        pods.add_listener(groups.changed)
    return groups


async def claim_pods(
    client: Client,
    owner: Object,
    kind: Kind,
    selector: LabelSelector | None,
    candidates: Iterable[Object],
) -> list[Object]:
    """ClaimPods: `claim` of pods, adopting and releasing them by patch (PodControl's
    PatchPod: a pod gone or changed meanwhile is left for the next sync)."""

    async def adopt(pod: Object) -> Object | None:
        return pod if await patch_pod(client, pod, adopt_patch(pod, owner, kind)) else None

    return await claim(
        owner,
        selector,
        candidates,
        adopt,
        lambda pod: patch_pod(client, pod, release_patch(pod, owner)),
    )


class ControlledPodEvents:
    """The pod event handlers of a controller whose objects own pods directly (ReplicaSet,
    DaemonSet), as v1.32's addPod/updatePod/deletePod: a pod seen fulfils its owner's creation
    expectation and a pod going its deletion expectation; a pod that changes owner or labels
    wakes its old and new owners, or as an orphan those that may adopt it; a pod turning ready
    wakes its owner again once minReadySeconds have passed.

    Subclasses name the `OWNER_KIND`, give `owners` (their informer), `expectations` and
    `_queue`, and register the handlers with `_watch_pods`."""

    OWNER_KIND: ClassVar[str]
    DELETION_RECHECKS_OLD_LABELS: ClassVar[bool] = False
    """A pod being deleted whose labels changed also counts as the old pod deleted (the
    ReplicaSet controller's updatePod does this, the DaemonSet controller's does not)."""
    expectations: Expectations
    _queue: WorkQueue

    @property
    def owners(self) -> Informer:
        raise NotImplementedError

    def _watch_pods(self, pods: Informer) -> None:
        """Hear of the pods that may concern an owner: of the owners' namespaces (every owner
        the handlers look for is in the pod's), controlled by an owner of this kind or by
        none (the kind a pod's owner may have been or become, or who may adopt it)."""
        pods.add_event_handler(
            on_add=self._pod_added,
            on_update=self._pod_updated,
            on_delete=self._pod_deleted,
            interest=interest(
                in_namespaces(self.owners.namespaces()),
                controlled_by(self.OWNER_KIND, orphans=True),
            ),
        )

    def _enqueue(self, owner: Object) -> None:
        self._queue.add(object_key(owner))

    def _owner(self, obj: Object) -> Object | None:
        return resolve_controller_ref(obj, self.OWNER_KIND, self.owners)

    @staticmethod
    def pod_selector(owner: Object) -> LabelSelector | None:
        """The pods an owner selects (its spec.selector, a LabelSelector, by default)."""
        return spec_selector(owner)

    def _enqueue_matching(self, obj: Object) -> None:
        """An orphan changed: the owners that may adopt it have a look."""
        for owner in selecting_owners(obj, self.owners, self.pod_selector):
            self._enqueue(owner)

    def _pod_added(self, pod: Object) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)
            return
        if controller_ref(pod) is not None:
            owner = self._owner(pod)
            if owner is not None:
                self.expectations.creation_observed(object_key(owner))
                self._enqueue(owner)
            return
        self._enqueue_matching(pod)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        labels_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)
            if labels_changed and self.DELETION_RECHECKS_OLD_LABELS:
                self._pod_deleted(old)
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            old_owner = self._owner(old)
            if old_owner is not None:
                self._enqueue(old_owner)
        if new_ref is not None:
            owner = self._owner(new)
            if owner is not None:
                self._enqueue(owner)
                min_ready = owner["spec"].get("minReadySeconds") or 0
                if min_ready and not is_pod_ready(old) and is_pod_ready(new):
                    self._queue.add_after(object_key(owner), min_ready + 1)
            return
        if labels_changed or old_ref != new_ref:
            self._enqueue_matching(new)

    def _pod_deleted(self, pod: Object) -> None:
        owner = self._owner(pod)
        if owner is None:
            return
        self.expectations.deletion_observed(object_key(owner), object_key(pod))
        self._enqueue(owner)
