"""Informers: a local cache of one kind, kept current by list and watch, with change handlers.

As client-go's shared informer: list, then watch from the list's resourceVersion; every change
updates the cache first, then the handlers hear of it, in the order the API sent the changes.
A watch that ends is started again from the last resourceVersion seen; one the server refuses
as too old (410, after compaction) makes the informer list again and reconcile: objects that
changed meanwhile get on_update, new ones on_add, unchanged ones nothing, and the ones that
vanished on_delete with their last known state (client-go hands these over wrapped as
DeletedFinalStateUnknown; here handlers get the object itself).

Handlers run one at a time on a task of their own, in order; a handler may be a plain function
or a coroutine function (awaited before the next notification). Cached objects are shared and
read-only, as everything a client returns; a packed informer (given a `codec`) keeps its cache
in the store's compact form instead, a fraction of the memory for a cache of many objects that
handlers mostly take as they arrive, and every read of it (get, list, the old object of an
update) is a new copy. `packed(obj)` gives the cache's compact form of that version of the
object (the very bytes cached), so whoever keeps the object packed too can share them.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object
from pinnace.apiserver.watching import batches
from pinnace.client.interest import Change, Interest, namespace_of
from pinnace.client.interface import Client
from pinnace.clock import Timer
from pinnace.store.codec import Codec

log = logging.getLogger(__name__)

NAMESPACE_INDEX = "namespace"
INITIAL_BACKOFF = 0.8
MAX_BACKOFF = 30.0
"""The reflector's backoff between list-and-watch attempts, as client-go's (without jitter)."""

Indexer = Callable[[Object], Sequence[str]]
"""An object -> the index values it is filed under (none, one or several)."""
Listener = Callable[[str, Object | None, Object | None], None]
"""Told (key, old, new) of each change to the cache as it is made: old None for an object
added, new None for one removed."""


@dataclass(frozen=True)
class EventHandlers:
    on_add: Callable[[Object], Any] | None = None
    on_update: Callable[[Object, Object], Any] | None = None
    """(old, new); during a resync both are the cached object."""
    on_delete: Callable[[Object], Any] | None = None
    selects: Callable[[Object], bool] | None = None
    """Only objects this selects reach the handlers, as with client-go's
    FilteringResourceEventHandler: an update that makes an object selected is an add, one
    that makes it unselected a delete (of the old state)."""
    interest: Interest | None = None
    """Only changes that meet it reach the handlers (`pinnace.client.interest`)."""

    def handler(self, what: str) -> Callable[..., Any] | None:
        """What to call with the objects of a `what` notification; None when nothing is."""
        selects = self.selects
        if selects is None:  # most: the handler of `what` itself
            handler: Callable[..., Any] | None = getattr(self, what)
            return handler
        return functools.partial(self._call_selected, selects, what)

    def _call_selected(self, selects: Callable[[Object], bool], what: str, *objs: Object) -> Any:
        """Call the handler `selects` makes of a notification; what it returns (None when
        there is none)."""
        if what == "on_update":
            old, new = objs
            before, now = selects(old), selects(new)
            if before and not now:
                return _call(self.on_delete, old)
            if now and not before:
                return _call(self.on_add, new)
            return _call(self.on_update, old, new) if now else None
        return _call(getattr(self, what), *objs) if selects(objs[0]) else None


def _call(handler: Callable[..., Any] | None, *objs: Object) -> Any:
    return None if handler is None else handler(*objs)


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object (client-go's
    MetaNamespaceKeyFunc)."""
    m = obj["metadata"]
    namespace = m.get("namespace")
    return f"{namespace}/{m['name']}" if namespace else m["name"]


def by_namespace(obj: Object) -> list[str]:
    return [obj["metadata"].get("namespace") or ""]


def _resource_version(obj: Mapping[str, Any]) -> str:
    return obj["metadata"].get("resourceVersion") or ""


_SYNCED = "synced"
NOTIFICATIONS = ("on_add", "on_update", "on_delete")
Route = tuple[Callable[..., Any], Interest | None]
"""A handler's function for one kind of notification, and the interest it is weighed by."""
Notification = tuple[tuple[Route, ...], str, tuple[Object, ...], bytes | None]
"""The routes to call, which notification, with what, and the packed cache's bytes of the last
object."""


def routes(handlers: Iterable[EventHandlers], what: str) -> tuple[Route, ...]:
    """The routes of the handlers that do something with a `what` notification, in order."""
    found = ((h.handler(what), h.interest) for h in handlers)
    return tuple((call, interest) for call, interest in found if call is not None)


class Informer:
    """The cache of `kind` objects (in `namespace`, or all; those the selectors select).

        pods = Informer(client, PODS, field_selector="spec.nodeName=node-1")
        pods.add_indexer("phase", lambda p: [p.get("status", {}).get("phase", "")])
        pods.add_event_handler(on_add=queue.add, on_delete=queue.forget)
        pods.start()
        await pods.wait_for_sync()
        running = pods.by_index("phase", "Running")

    `resync_period` (seconds, 0 for none) hands every cached object to on_update again that
    often, as client-go's resync does. `codec` keeps the cache packed by it (see above): the
    cluster's, so that the informer shares what its store and components learned.
    `namespace_index=False` files nothing by namespace: a cache never listed by namespace saves
    an entry per object (`list(namespace)` then looks through every object).
    """

    def __init__(
        self,
        client: Client,
        kind: Kind,
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resync_period: float = 0.0,
        codec: Codec | None = None,
        namespace_index: bool = True,
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._client = client
        self._clock = client.clock
        self._resync_period = resync_period
        # A codec that does not deflate would keep nothing smaller than the objects themselves.
        self._codec = codec if codec is not None and codec.deflates else None
        self._cache: dict[str, Object | bytes] = {}
        self._indexers: dict[str, Indexer] = {}
        # index name -> value -> keys (dicts as ordered sets, so reads are reproducible; each key
        # maps to itself, so an update files the object again under the cache's own string)
        self._indices: dict[str, dict[str, dict[str, str]]] = {}
        self._listeners: list[Listener] = []
        self._handlers: tuple[EventHandlers, ...] = ()
        self._routes: dict[str, tuple[Route, ...]] = {what: () for what in NOTIFICATIONS}
        """The handlers' routes by notification, so that one nobody acts on costs no turn."""
        self._notifications: deque[Notification] = deque()
        self._waiting: asyncio.Future[None] | None = None
        """What the dispatch task awaits while there is nothing to dispatch."""
        self._synced = asyncio.Event()
        self._last_resource_version = ""
        self._tasks: list[asyncio.Task[None]] = []
        self._resync_timer: Timer | None = None
        self._dispatched: tuple[Object, bytes] | None = None
        """The object the handlers being called were handed, and its cached bytes."""
        self._places: tuple[builtins.list[str], dict[str, int]] | None = None
        """`places`, until a key comes or goes."""
        if namespace_index:
            self.add_indexer(NAMESPACE_INDEX, by_namespace)

    # --- setup -------------------------------------------------------------------------------

    def add_event_handler(
        self,
        on_add: Callable[[Object], Any] | None = None,
        on_update: Callable[[Object, Object], Any] | None = None,
        on_delete: Callable[[Object], Any] | None = None,
        *,
        selects: Callable[[Object], bool] | None = None,
        interest: Interest | None = None,
    ) -> EventHandlers:
        """Call these on every change from now on (of those `interest` names, when given);
        objects already cached come first, as on_add, so a handler added late sees the same
        story as one added at the start."""
        if selects is not None and interest is not None:
            # An update selects turns into an add or a delete would be weighed as an update.
            raise ValueError("a handler takes selects or an interest, not both")
        handlers = EventHandlers(on_add, on_update, on_delete, selects, interest)
        self._handlers += (handlers,)
        self._routes = {what: routes(self._handlers, what) for what in NOTIFICATIONS}
        first = routes((handlers,), "on_add")
        for cached in self._cache.values():
            self._notify(first, "on_add", self._unpack(cached), packed=_bytes(cached))
        return handlers

    def add_indexer(self, name: str, indexer: Indexer) -> None:
        """File every cached object under `indexer(obj)` in the index `name`."""
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = indexer
        self._indices[name] = {}
        for key, cached in self._cache.items():
            self._file(name, key, self._unpack(cached))

    def add_listener(self, listener: Listener) -> None:
        """Tell `listener` of every change to the cache, as it is made (before any handler
        hears of it), starting with every object cached as added: for structures kept in step
        with the cache, as indices are."""
        self._listeners.append(listener)
        for key, cached in self._cache.items():
            listener(key, None, self._unpack(cached))

    def start(self) -> None:
        """List and watch on the clock's loop; does nothing if already running."""
        if self._tasks:
            return
        loop = self._clock.loop
        self._tasks = [loop.create_task(self._reflect()), loop.create_task(self._dispatch())]

    async def stop(self) -> None:
        """Stop listing and watching, and return once its tasks have ended. Started again, it
        has synced once it has listed anew (what it holds meanwhile may be stale)."""
        self._synced.clear()
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._resync_timer is not None:
            self._resync_timer.cancel()
            self._resync_timer = None

    # --- the cache ---------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        """True once the first list is cached and its on_add calls are done."""
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the cache is current to."""
        return self._last_resource_version

    def get(self, namespace: str, name: str) -> Object | None:
        return self.get_by_key(f"{namespace}/{name}" if namespace else name)

    def get_by_key(self, key: str) -> Object | None:
        cached = self._cache.get(key)
        return None if cached is None else self._unpack(cached)

    def list(self, namespace: str = "", selector: LabelSelector | None = None) -> list[Object]:
        """The cached objects, of one namespace when given, and only those `selector` matches
        when given (as a client-go Lister lists)."""
        objs: Iterable[Object] = map(self._unpack, self._cache.values())
        if namespace and NAMESPACE_INDEX in self._indexers:
            objs = self.by_index(NAMESPACE_INDEX, namespace)
        elif namespace:
            objs = (o for o in objs if o["metadata"].get("namespace") == namespace)
        if selector is None:
            return list(objs)
        return [o for o in objs if selector.matches(o["metadata"].get("labels") or {})]

    def keys(self) -> builtins.list[str]:
        return list(self._cache)

    def places(self) -> tuple[builtins.list[str], dict[str, int]]:
        """The keys in the cache's order (that of `keys`) and each one's place in it, shared
        (read-only) and worked out again only when a key has come or gone since: a pass over
        a few of 5,000 nodes, in their order, then costs no list of them all."""
        places = self._places
        if places is None:
            keys = list(self._cache)
            places = self._places = (keys, {key: i for i, key in enumerate(keys)})
        return places

    def namespaces(self) -> Container[str]:
        """The namespaces the cache holds objects in (`indexed` by namespace)."""
        return self.indexed(NAMESPACE_INDEX)

    def indexed(self, name: str) -> Container[str]:
        """The values objects are filed under in the index `name`, as the cache changes (a
        live view: `index_values` is a list of them now)."""
        try:
            return self._indices[name].keys()
        except KeyError:
            raise KeyError(f"no indexer {name!r}") from None

    def index_values(self, name: str) -> builtins.list[str]:
        """The values objects are filed under in the index `name` (ListIndexFuncValues)."""
        try:
            return list(self._indices[name])
        except KeyError:
            raise KeyError(f"no indexer {name!r}") from None

    def by_index(self, name: str, value: str) -> builtins.list[Object]:
        """The cached objects filed under `value` in the index `name`."""
        try:
            keys = self._indices[name].get(value, {})
        except KeyError:
            raise KeyError(f"no indexer {name!r}") from None
        return [self._unpack(self._cache[key]) for key in keys]

    def packed(self, obj: Mapping[str, Any]) -> bytes | None:
        """The bytes a packed cache holds, or held, of this version of `obj` (the object of its
        key at its resourceVersion); None when the cache is not packed or holds another
        version (or none). At once for the object a handler is being handed (added, or updated
        to), even once the cache holds a later version; for any other, such as one `get` or
        `list` gave, the cached version is unpacked to be compared."""
        dispatched = self._dispatched
        if dispatched is not None and dispatched[0] is obj:
            return dispatched[1]
        cached = self._cache.get(object_key(obj))
        if not isinstance(cached, bytes) or self._codec is None:
            return None
        same = _resource_version(self._codec.unpack(cached)) == _resource_version(obj)
        return cached if same else None

    def _unpack(self, cached: Object | bytes) -> Object:
        if isinstance(cached, dict):
            return cached
        assert self._codec is not None, "only a packed cache holds bytes"
        return self._codec.unpack(cached)

    def _store(self, key: str, obj: Object) -> Object | None:
        cached = self._cache.get(key)
        old = None if cached is None else self._unpack(cached)
        if old is None:
            self._places = None
        key = self._reindex(key, old, obj)
        self._cache[key] = obj if self._codec is None else self._codec.pack(obj)
        for listener in self._listeners:
            listener(key, old, obj)
        return old

    def _remove(self, key: str) -> Object | None:
        cached = self._cache.pop(key, None)
        if cached is None:
            return None
        self._places = None
        old = self._unpack(cached)
        self._reindex(key, old, None)
        for listener in self._listeners:
            listener(key, old, None)
        return old

    def _file(self, name: str, key: str, obj: Object) -> None:
        index = self._indices[name]
        for value in self._indexers[name](obj):
            index.setdefault(value, {})[key] = key

    def _reindex(self, key: str, old: Object | None, new: Object | None) -> str:
        """File the key under `new`'s index values instead of `old`'s (None: an object added,
        or removed); an index whose values for it stay as they were is left alone, as
        client-go's updateIndices leaves it. The key as the indices held it."""
        moves: builtins.list[tuple[dict[str, dict[str, str]], Sequence[str], Sequence[str]]] = []
        for name, indexer in self._indexers.items():
            before = () if old is None else indexer(old)
            after = () if new is None else indexer(new)
            if old is None or new is None or before != after:
                moves.append((self._indices[name], before, after))
        filed = key
        for index, before, _ in moves:
            for value in before:
                keys = index.get(value)
                if keys is not None:
                    filed = keys.pop(key, filed)
                    if not keys:
                        del index[value]
        for index, _, after in moves:
            for value in after:
                index.setdefault(value, {})[filed] = filed
        return filed

    # --- list and watch ----------------------------------------------------------------------

    async def _reflect(self) -> None:
        delay = INITIAL_BACKOFF
        while True:
            try:
                await self._list()
            except Exception as e:
                log.warning("%s informer: list failed, retrying: %s", self.kind.plural, e)
                await self._clock.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
                continue
            delay = INITIAL_BACKOFF
            try:
                await self._watch()
            except Exception as e:
                log.warning("%s informer: watch failed, listing again: %s", self.kind.plural, e)
            await self._clock.sleep(INITIAL_BACKOFF)

    async def _list(self) -> None:
        listed = await self._client.list(
            self.kind,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
        )
        self._replace(listed["items"], listed["metadata"]["resourceVersion"])

    def _replace(self, items: builtins.list[Object], resource_version: str) -> None:
        """Make the cache what a fresh list says, telling handlers only of differences."""
        routed = self._routes
        listed: set[str] = set()
        for obj in items:
            key = object_key(obj)
            listed.add(key)
            old = self.get_by_key(key)
            if old is None:
                self._store(key, obj)
                self._notify(routed["on_add"], "on_add", obj, packed=self._cached_bytes(key))
            elif _resource_version(old) != _resource_version(obj):
                self._store(key, obj)
                packed = self._cached_bytes(key)
                self._notify(routed["on_update"], "on_update", old, obj, packed=packed)
        for key in [k for k in self._cache if k not in listed]:
            gone = self._remove(key)
            assert gone is not None
            self._notify(routed["on_delete"], "on_delete", gone)
        self._last_resource_version = resource_version
        if not self._synced.is_set():
            self._notify((), _SYNCED)

    async def _watch(self) -> None:
        """Follow changes from the last resourceVersion; returns when a list is needed."""
        while True:
            received = False
            events = self._client.watch(
                self.kind,
                self.namespace,
                resource_version=self._last_resource_version,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
            )
            # A batch at a time: the in-process watch hands over what it has at once.
            async for batch in batches(events):
                received = True
                for event in batch:
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        message = obj.get("message")
                        log.info("%s informer: watch ended: %s", self.kind.plural, message)
                        return
                    if kind != "BOOKMARK":
                        self._apply(kind, obj)
                    self._last_resource_version = _resource_version(obj)
            if not received:  # ended at once: do not spin
                await self._clock.sleep(INITIAL_BACKOFF)

    def _apply(self, kind: str, obj: Object) -> None:
        key = object_key(obj)
        routed = self._routes
        if kind == "DELETED":
            if self._remove(key) is not None:
                self._notify(routed["on_delete"], "on_delete", obj)
            return
        old = self._store(key, obj)
        packed = None if self._codec is None else self._cached_bytes(key)
        if old is None:
            self._notify(routed["on_add"], "on_add", obj, packed=packed)
        else:
            self._notify(routed["on_update"], "on_update", old, obj, packed=packed)

    def _cached_bytes(self, key: str) -> bytes | None:
        return _bytes(self._cache[key])

    # --- notifications -----------------------------------------------------------------------

    def _notify(
        self,
        routed: tuple[Route, ...],
        what: str,
        *objs: Object,
        packed: bytes | None = None,
    ) -> None:
        if not routed and what != _SYNCED:
            return  # nobody acts on it (node lifecycle's pods, deletes of most caches): no turn
        self._notifications.append((routed, what, objs, packed))
        waiting = self._waiting
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    async def _dispatch(self) -> None:
        while True:
            while self._notifications:
                routed, what, objs, packed = self._notifications.popleft()
                if what == _SYNCED:
                    self._synced.set()
                    self._schedule_resync()
                    continue
                self._dispatched = None if packed is None else (objs[-1], packed)
                namespace: str | None = None
                change: Change | None = None
                try:
                    for call, interest in routed:
                        if interest is not None:
                            namespaces = interest.namespaces
                            if namespaces is not None:
                                if namespace is None:  # an update's old and new share it
                                    namespace = namespace_of(objs[-1])
                                if namespace not in namespaces:
                                    continue  # it would do nothing with this change
                            if interest.requirements:
                                if change is None:
                                    change = Change(what, objs)
                                if not change.meets(interest):
                                    continue  # nor with this one
                        try:
                            result = call(*objs)
                        except Exception:
                            log.exception("%s informer: a handler failed", self.kind.plural)
                            continue
                        if result is not None and inspect.isawaitable(result):
                            await self._finish(result)
                            change = None  # what its conditions read may have changed since
                finally:
                    self._dispatched = None
            # A future of its own rather than an asyncio.Event: the same single wake-up,
            # without the event's list of waiters to keep at every change.
            self._waiting = self._clock.loop.create_future()
            try:
                await self._waiting
            finally:
                self._waiting = None

    async def _finish(self, pending: Awaitable[Any]) -> None:
        try:
            await pending
        except Exception:
            log.exception("%s informer: a handler failed", self.kind.plural)

    def _schedule_resync(self) -> None:
        if self._resync_period > 0:
            self._resync_timer = self._clock.call_later(self._resync_period, self._resync)

    def _resync(self) -> None:
        """Hand every cached object to on_update again, so handlers can correct drift."""
        routed = self._routes["on_update"]
        for cached in self._cache.values():
            obj = self._unpack(cached)
            self._notify(routed, "on_update", obj, obj, packed=_bytes(cached))
        self._schedule_resync()


def _bytes(cached: Object | bytes) -> bytes | None:
    return cached if isinstance(cached, bytes) else None
