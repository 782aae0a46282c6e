"""The versioned key-value store every Pinnace backend implements (memory, SQLite, etcd).

Revisions. One global counter, like etcd's, is every object's `metadata.resourceVersion`: each
create, update and delete takes the next revision, and the store (never the caller) writes
`metadata.resourceVersion = str(revision)` into what it stores and returns. A new, empty store is
at revision 1 and its first write gets 2; revision 0 is never used, because Kubernetes gives
resourceVersion "0" a meaning of its own ("any version"), which the API server handles. (On
etcd, whose revisions count the writes of keys outside the store too, a revision may change
nothing in the store, and one opened on an etcd in use starts at etcd's revision.)
`compacted_revision` starts at 1. Every read at a revision below `compacted_revision` raises
`CompactedError`; a read above `revision` raises `FutureRevisionError`. As in etcd, revision 0
(like None) asks for the latest state, and a watch from revision 0 starts now.

Ownership — READ THIS. `create` and `update` take ownership of the dict passed in: the caller
hands over a fresh dict and must never touch it again. Every object the store returns (from
get, list, create, update, delete, and in watch events) is SHARED and READ-ONLY: other readers
and watchers may hold the very same dict. Copy before changing anything, nested dicts included.
The store itself never mutates a dict it has handed out. (This spares a copy per object on the
simulation's hot path.) An object read long after it was written may be a new copy each time:
the store keeps older objects packed (see `mvcc`). The store does replace `obj["metadata"]`
with a copy carrying the new resourceVersion, so a metadata dict the caller shared with an older
object is left alone.

Keys are strings such as "pods/default/nginx" or "nodes//node-1"; lists and watches select keys
by plain string prefix ("pods/default/", "pods/"), and lists return keys in sorted order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import orjson

from pinnace.api.objects import Object

if TYPE_CHECKING:
    from pinnace.store.codec import Codec

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


class StoreError(Exception):
    """Base of every error the store raises on purpose."""


class StoreInUseError(StoreError):
    """The store's file is held by another store (another process, most likely)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path} is in use by another store")
        self.path = path


class StorageError(StoreError):
    """The storage refused a write (a full disk, an I/O error), in its own words: the API
    relays them as kube-apiserver relays etcd's ("etcdserver: mvcc: database space exceeded")."""


class KeyExistsError(StoreError):
    """`create` of a key that holds an object."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} already exists")
        self.key = key


class KeyNotFoundError(StoreError):
    """`get`, `update` or `delete` of a key that holds no object (at the revision asked)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"key {key!r} not found")
        self.key = key


class ConflictError(StoreError):
    """A precondition failed: the key's revision is not the one the writer read.

    `current` is the latest stored (durable) object, or None if the key holds none.
    """

    def __init__(self, key: str, current: Object | None) -> None:
        where = (
            f"it is at revision {current['metadata']['resourceVersion']}"
            if current is not None
            else "it no longer exists"
        )
        super().__init__(f"key {key!r} has been modified: {where}")
        self.key = key
        self.current = current


class CompactedError(StoreError):
    """The revision asked for is older than the oldest one kept (the API answers 410 Gone)."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(
            f"revision {requested} has been compacted; the oldest revision kept is {compacted}"
        )
        self.requested = requested
        self.compacted = compacted


class FutureRevisionError(StoreError):
    """The revision asked for is newer than the store's current one."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"revision {requested} is newer than the current revision {current}")
        self.requested = requested
        self.current = current


class WatchClosedError(StoreError):
    """The store ended this watch: the watcher fell too far behind, or the store closed.

    The watcher's client must list again and watch from the list's revision.
    """


class WatchWoken(Exception):
    """Raised once by a watch's `__anext__` after `wake()`, in place of waiting for events."""


class WatchEvent(NamedTuple):
    """One change. For DELETED, `object` is the last state with `metadata.resourceVersion` set
    to the deletion revision (as kube-apiserver sends it) and `prev_object` that last state as
    stored. `prev_object` is None for ADDED. Both are shared and read-only.

    A named tuple rather than a frozen dataclass: every write makes one, and a frozen
    dataclass's `__init__` sets each field through `object.__setattr__` (1.27 us a change
    against 0.52 us)."""

    type: EventType
    key: str
    object: Object
    prev_object: Object | None
    revision: int


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a list, read at `revision`.

    `continue_key` is the last key of this page when more items follow (pass it as
    `start_after`, with `revision`, to get the next page), else None. `remaining` counts the
    items after this page (0 when there are none).
    """

    items: list[Object]
    revision: int
    continue_key: str | None
    remaining: int | None


class Selection(Protocol):
    """Which objects a list returns, as a list's label and field selectors choose them."""

    def matches(self, obj: Object) -> bool: ...

    def may_match(self, text: bytes) -> bool:
        """False only if the object whose JSON text is `text` cannot match: the store then
        passes over it without decoding it. The text is orjson's compact form of the object,
        as the store keeps every object."""
        ...


class Watch(ABC):
    """An async iterator of `WatchEvent`s, in revision order, without gaps or duplicates.

    Iteration raises `WatchClosedError` if the store ends the watch and `CompactedError` if the
    history it still had to replay was compacted first; it stops (StopAsyncIteration) after the
    watcher's own `close()`.
    """

    def __aiter__(self) -> Watch:
        return self

    @abstractmethod
    async def __anext__(self) -> WatchEvent: ...

    @abstractmethod
    def close(self) -> None:
        """Stop watching; idempotent. A pending `__anext__` ends with StopAsyncIteration."""

    def ready(self, limit: int) -> list[WatchEvent]:
        """Up to `limit` further events that are already at hand, taken without waiting (maybe
        none): lets a consumer handle a burst of changes in one go."""
        return []

    def caught_up(self) -> bool:
        """Whether every change up to the store's current revision that this watch is to
        deliver has been taken from it (so a bookmark at that revision hides nothing)."""
        return False

    def wake(self) -> bool:
        """Make the `__anext__` waiting for events, or the next one that would, raise
        `WatchWoken` once instead (events at hand still come first): lets a consumer wait for
        events and a time of its own at once. False if this watch cannot."""
        return False

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Store(ABC):
    """A versioned key-value store of Kubernetes objects with MVCC reads and watch.

    Used from one asyncio event loop. See the module docstring for revisions and ownership.
    """

    codec: Codec
    """What the store packs the objects it keeps in memory with; the components of its
    cluster pack theirs with it too (see `pinnace.store.codec`)."""

    @property
    @abstractmethod
    def revision(self) -> int:
        """The latest committed revision; 1 for a new, empty store. Only grows."""

    @property
    @abstractmethod
    def compacted_revision(self) -> int:
        """The oldest revision that can still be read; 1 until the first compaction."""

    @abstractmethod
    async def create(self, key: str, obj: Object) -> Object:
        """Store `obj` (taking ownership) under a key that holds nothing; KeyExistsError if
        it holds an object. Returns the stored object."""

    @abstractmethod
    async def get(self, key: str, revision: int | None = None) -> Object:
        """The object under `key` at `revision` (None or 0: the latest); KeyNotFoundError if
        none."""

    @abstractmethod
    def revision_of(self, key: str) -> int | None:
        """The revision that wrote the object under `key` now, if it holds one: which version
        `get` would read, found without reading (unpacking) it."""

    @abstractmethod
    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int = 0,
        start_after: str | None = None,
        select: Selection | None = None,
    ) -> ListResult:
        """Objects under keys starting with `prefix` and greater than `start_after`, in key
        order, at `revision` (None or 0: the latest); at most `limit` of them (0: all).

        With `select`, only the objects it matches: `limit` counts those, a page that ends
        before the last key continues after its last object, and `remaining` is None when
        more keys follow (counting the matches among them would read them all)."""

    @abstractmethod
    async def update(self, key: str, obj: Object, expected_revision: int | None) -> Object:
        """Replace the object under `key` with `obj` (taking ownership). KeyNotFoundError if
        the key holds nothing; ConflictError if `expected_revision` is not None and differs
        from the stored object's revision. Returns the stored object."""

    @abstractmethod
    async def delete(self, key: str, expected_revision: int | None = None) -> Object:
        """Remove the object under `key`, with the same errors as `update`. Returns the last
        state with the deletion revision as its resourceVersion."""

    @abstractmethod
    def watch(
        self, prefix: str, from_revision: int, wanted: Callable[[WatchEvent], bool] | None = None
    ) -> Watch:
        """Every change under `prefix` with a revision greater than `from_revision`, in order:
        first the retained history, then live changes. `from_revision` 0 means now: changes
        after the current revision. Raises CompactedError at once if `from_revision` is below
        `compacted_revision`. A `from_revision` above the current revision is allowed (as in
        etcd): the watch delivers changes after it. `wanted`: only the changes it accepts are
        delivered (the others neither wake the watcher nor fill its buffer)."""

    @abstractmethod
    def end_watches(self, prefix: str) -> None:
        """End every watch under `prefix` with WatchClosedError (the API server's, when the
        kind stored there stops being served as it was)."""

    @abstractmethod
    def observe(self, observer: Callable[[WatchEvent], None]) -> Callable[[], None]:
        """Call `observer(event)` with every change as it commits, in revision order, before
        any watcher has it; returns what stops it. Unlike a watch it has no buffer, no task
        and no lag, so what it records cannot change when the cluster's tasks run."""

    def text(self, event: WatchEvent) -> bytes:
        """The JSON text of `event`'s object, in its key order (what an observer that records
        objects digests). Called by an observer of the change committed last, it spares a
        store that keeps objects packed making that text again to pack it."""
        return orjson.dumps(event.object)

    @abstractmethod
    async def compact(self, revision: int) -> None:
        """Drop history older than `revision`, keeping the state at `revision` (and every
        key's latest object) readable. Compacting to or below `compacted_revision` does
        nothing; FutureRevisionError above the current revision."""

    async def sync(self, revision: int | None = None) -> None:
        """Until this store's reads show every write its storage had committed when called,
        whichever server made it (what a consistent read, resourceVersion unset, waits for),
        or, given `revision`, until they show that revision, for a while at most (a read
        then finds it too new; the caller may wait less). A store that is its storage's only
        writer has nothing to wait for without `revision`, and with one waits for its own
        writes to reach it."""
        return None

    async def health(self) -> str | None:
        """Why the store's storage cannot be read now, or None when it can: kube-apiserver's
        etcd health check (of /healthz, /livez and /readyz). A store in this process's memory
        or file has nothing to reach."""
        return None

    async def write_failure(self) -> str | None:
        """Why the store cannot write now (what its storage said of the last write it
        refused, while that lasts), or None when it can: for the API server's readiness."""
        return None

    @abstractmethod
    async def close(self) -> None:
        """Finish pending writes, end every watch with WatchClosedError, release resources.
        Any later call raises StoreError."""

    @abstractmethod
    def count(self, prefix: str) -> int:
        """How many keys under `prefix` hold an object now."""
