"""The objects of the few kinds admission reads on every write (namespaces, LimitRanges,
PriorityClasses, ResourceQuotas, RuntimeClasses), held in memory as the store has them now.

kube-apiserver's admission plugins read these from informers' listers rather than from etcd
(NamespaceLifecycle, LimitRanger, Priority, RuntimeClass and ResourceQuota each keep one).
Pinnace keeps them with the store's observer instead, which sees every change as it commits and
before any reader can: what admission reads here is exactly what a read of the store would
return, without a store list (and the unpacking of what it keeps packed) for every pod.

The objects are the store's own, shared and read-only (see `pinnace.store.interface`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.apiserver.keys import kind_prefix, object_key
from pinnace.store import Store, WatchEvent


class AdmissionObjects:
    """The stored objects of `kinds`, by namespace (cluster-scoped kinds: "") and name.

    Loaded from the store on first use (`load`); from then on the store's observer keeps them.
    """

    def __init__(self, store: Store, kinds: Iterable[Kind], uncounted: Iterable[Kind] = ()) -> None:
        """`uncounted`: kinds among `kinds` whose changes `changes` leaves out."""
        self._store = store
        self._kinds = tuple(kinds)
        self._prefixes = tuple(kind_prefix(kind) for kind in self._kinds)
        self._uncounted = tuple(kind_prefix(kind) for kind in uncounted)
        # By bucket (the object key of an empty name: "<group>/<plural>/<namespace>/"), the
        # objects by name; and each bucket's objects in key order, as a store list gives them.
        self._buckets: dict[str, dict[str, Object]] = {}
        self._ordered: dict[str, list[Object]] = {}
        self._loaded = False
        self._loading = 0
        self._changed_while_loading: set[str] = set()
        self._observing = False
        self.changes = 0
        """How many changes it has seen (and loads), but those of the `uncounted` kinds: what
        was worked out from the objects of the others holds while this stays the same."""

    @property
    def loaded(self) -> bool:
        return self._loaded

    async def load(self) -> None:
        """Read the kinds from the store, once: later calls return at once."""
        if self._loaded:
            return
        if not self._observing:
            self._store.observe(self._observe)  # for as long as the store lives
            self._observing = True
        self._loading += 1
        try:
            for kind in self._kinds:
                for obj in (await self._store.list(kind_prefix(kind))).items:
                    m = obj["metadata"]
                    key = object_key(kind, m.get("namespace", ""), m["name"])
                    # A change seen since the observer started is newer than any list.
                    if key not in self._changed_while_loading:
                        self._put(key, obj)
        finally:
            self._loading -= 1
            if not self._loading:
                self._changed_while_loading.clear()
            self.changes += 1
        self._loaded = True

    def get(self, kind: Kind, namespace: str, name: str) -> Object | None:
        bucket = self._buckets.get(object_key(kind, namespace, ""))
        return None if bucket is None else bucket.get(name)

    def list(self, kind: Kind, namespace: str) -> list[Object]:
        """The objects of one namespace (or of a cluster-scoped kind), in key order."""
        where = object_key(kind, namespace, "")
        ordered = self._ordered.get(where)
        if ordered is None:
            bucket = self._buckets.get(where) or {}
            ordered = self._ordered[where] = [bucket[name] for name in sorted(bucket)]
        return list(ordered)

    def holds(self, kind: Kind, namespace: str) -> bool:
        """Whether there is an object of the kind in one namespace (or of a cluster-scoped
        kind): what admission asks on every pod, without a list or a view made."""
        return bool(self._buckets.get(object_key(kind, namespace, "")))

    def named(self, kind: Kind, namespace: str) -> Mapping[str, Object]:
        """The objects of one namespace (or of a cluster-scoped kind) by name."""
        return MappingProxyType(self._buckets.get(object_key(kind, namespace, "")) or {})

    def _observe(self, event: WatchEvent) -> None:
        key = event.key
        if not key.startswith(self._prefixes):
            return
        if not key.startswith(self._uncounted):
            self.changes += 1
        if self._loading:
            self._changed_while_loading.add(key)
        if event.type == "DELETED":
            self._remove(key)
        else:
            self._put(key, event.object)

    def _put(self, key: str, obj: Object) -> None:
        where, name = _split(key)
        self._buckets.setdefault(where, {})[name] = obj
        self._ordered.pop(where, None)

    def _remove(self, key: str) -> None:
        where, name = _split(key)
        bucket = self._buckets.get(where)
        if bucket is not None and bucket.pop(name, None) is not None:
            self._ordered.pop(where, None)
            if not bucket:
                del self._buckets[where]


def _split(key: str) -> tuple[str, str]:
    """A key's bucket and name: names hold no "/"."""
    cut = key.rindex("/") + 1
    return key[:cut], key[cut:]
