"""The store on etcd v3, for clusters that outgrow one machine: `pinnace up --etcd-servers`.

Writes go to etcd as kube-apiserver's etcd3 store makes them
(k8s.io/apiserver/pkg/storage/etcd3/store.go): a create is a transaction that puts the key only
if its mod_revision is 0 (it holds nothing); an update or delete compares the key's
mod_revision with the revision the writer read (or, unconditional, with 0, that it exists), and
reads the key back when the comparison fails, to tell "not found" from a conflict. etcd's
revisions are the resourceVersions, and objects are kept as kube-apiserver keeps them, without
their resourceVersion (each is its key's mod_revision). The values are the Kubernetes JSON
Pinnace stores everywhere, not the protobuf kube-apiserver writes for built-in kinds.

Reads and watches are served as kube-apiserver's watch cache serves them
(k8s.io/apiserver/pkg/storage/cacher): from a copy of the keys in memory, the `MvccState` the
other stores keep, fed in revision order by one etcd watch. A write returns once that watch has
brought it back, so it is visible to this store's readers and watchers then, and its own writer
reads it. Another API server's writes become visible here as soon as the watch brings them;
`sync` (a consistent read's start) reads etcd's current revision with a count-only range and
waits until the copy has it, as the watch cache does for ConsistentListFromCache (cacher.go's
waitUntilFreshAndBlock). The watch covers every key of etcd, not only the store's, so that each
of etcd's revisions comes back to the copy without etcd's progress notifications (unreliable
before etcd 3.4.31). A store opened on an etcd that holds keys starts from their state at that
revision: the history before it is not loaded (a watch from an older resourceVersion gets 410
Gone, and lists again). Compaction is etcd's own (`Compact`) and then the copy's. When the
watch fails (etcd restarts), the store watches again from the revision it has, every second; if
etcd has compacted that revision meanwhile (another server's compaction, during a long outage),
the store ends its watches and refuses everything: open it again.

A revision of a key outside the store (etcd counts every key's writes) changes nothing here.
Only Pinnace may write under the store's prefix, one key per revision, as kube-apiserver does.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import grpc
import orjson
from aetcd import rpc

from pinnace.store.base import Build, MvccStore
from pinnace.store.changes import stamped
from pinnace.store.codec import Codec
from pinnace.store.interface import (
    ConflictError,
    EventType,
    KeyExistsError,
    KeyNotFoundError,
    Object,
    StorageError,
    StoreError,
    WatchClosedError,
    WatchEvent,
)
from pinnace.store.mvcc import INITIAL_REVISION, Version
from pinnace.store.watch import DEFAULT_WATCH_BUFFER

log = logging.getLogger(__name__)

ROOT = "/registry/"
"""kube-apiserver's --etcd-prefix, with its slash."""
PAGE = 10_000
"""Keys read per range request when the store opens (kube-apiserver reads its lists in pages)."""
RETRY_SECONDS = 1.0
"""How long the store waits before it watches etcd again after the watch failed."""
FRESH_SECONDS = 3.0
"""How long a consistent read waits for the copy to reach etcd's revision (the watch cache's
blockTimeout) before it fails."""
EVERY_KEY = b"\0"
"""etcd's range of every key, as key and range_end."""
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
)
"""No limit on a message's size but etcd's own (--max-request-bytes), as kube-apiserver's
client has none: gRPC's default of 4 MiB would refuse a page of a large cluster's keys."""
_COMPACTED = "required revision has been compacted"
HEALTH_KEY = f"{ROOT}health".encode()
"""What kube-apiserver's etcd health check reads (`/<--etcd-prefix>/health`): any answer,
the key absent included, is health."""
HEALTHCHECK_SECONDS = 2.0
"""kube-apiserver's --etcd-healthcheck-timeout and --etcd-readycheck-timeout: how long a
probe waits for etcd. Probes are at most one every half of it; the checks in between get
the last probe's answer."""


class KeyLayout:
    """Where the store's keys live in etcd: kube-apiserver's layout.

    Each of `resources` maps a store prefix (a kind's, "core/nodes/") to the etcd prefix of
    its objects ("minions/", under `root`) and whether they are namespaced: a namespaced
    object's key is `<root><prefix><namespace>/<name>`, a cluster-scoped one's
    `<root><prefix><name>`. A key under no such prefix goes under `root` as it is.
    """

    def __init__(
        self, root: str = ROOT, resources: Mapping[str, tuple[str, bool]] | None = None
    ) -> None:
        if not root.endswith("/"):
            raise ValueError(f"the etcd prefix must end with a slash, not {root!r}")
        self.root = root
        self._resources = dict(resources or {})
        self._stores = {
            etcd: (store, namespaced) for store, (etcd, namespaced) in self._resources.items()
        }

    @property
    def range(self) -> tuple[bytes, bytes]:
        """The etcd key range [start, end) of every key of the store."""
        start = self.root.encode()
        return start, _prefix_end(start)

    def to_etcd(self, key: str) -> bytes:
        prefix, rest = _split(key)
        found = self._resources.get(prefix)
        if found is None:
            return f"{self.root}{key}".encode()
        etcd, namespaced = found
        return f"{self.root}{etcd}{rest if namespaced else rest[1:]}".encode()

    def to_store(self, key: bytes) -> str | None:
        """The store key of an etcd key, or None if it is not the store's."""
        text = key.decode(errors="replace")
        if not text.startswith(self.root):
            return None
        path = text[len(self.root) :]
        # The etcd prefixes take one segment ("pods/") or two ("services/specs/").
        two = _split(path)[0]
        one = path[: path.find("/") + 1]
        for prefix in (two, one):
            found = self._stores.get(prefix) if prefix else None
            if found is not None:
                store, namespaced = found
                tail = path[len(prefix) :]
                return f"{store}{tail}" if namespaced else f"{store}/{tail}"
        return path


def _split(key: str) -> tuple[str, str]:
    """The first two segments of `key` with their slashes ("" if it has fewer), and what
    follows them."""
    first = key.find("/")
    second = key.find("/", first + 1) if first >= 0 else -1
    if second < 0:
        return "", key
    return key[: second + 1], key[second + 1 :]


def _prefix_end(prefix: bytes) -> bytes:
    """The first key after every key that starts with `prefix` (etcd's range_end)."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def channel_target(endpoints: Sequence[str]) -> str:
    """The gRPC target of etcd's client URLs (kube-apiserver's --etcd-servers), one or several.

    Several must be IP addresses: gRPC then tries them in turn."""
    addresses = []
    for url in endpoints:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if parts.scheme != "http":
            raise ValueError(f"{url}: only http:// etcd client URLs are supported")
        if parts.hostname is None or parts.path not in ("", "/"):
            raise ValueError(f"{url} is not an etcd client URL such as http://127.0.0.1:2379")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        addresses.append(f"{host}:{parts.port or 2379}")
    if not addresses:
        raise ValueError("no etcd server given")
    if len(addresses) == 1:
        return addresses[0]
    families = set()
    for url, address in zip(endpoints, addresses, strict=True):
        try:
            families.add(ipaddress.ip_address(address.rpartition(":")[0].strip("[]")).version)
        except ValueError:
            raise ValueError(f"{url}: several etcd servers must be given by IP address") from None
    if len(families) > 1:
        raise ValueError("several etcd servers must all be IPv4 or all IPv6 addresses")
    return f"ipv{families.pop()}:{','.join(addresses)}"


class EtcdStore(MvccStore):
    """Open with `await EtcdStore.open(...)`."""

    def __init__(
        self,
        channel: rpc.Channel,
        layout: KeyLayout,
        *,
        watch_buffer: int = DEFAULT_WATCH_BUFFER,
        codec: Codec | None = None,
    ) -> None:
        super().__init__(watch_buffer=watch_buffer, codec=codec)
        self._channel = channel
        self._kv = rpc.KVStub(channel)
        self._watch_stub = rpc.WatchStub(channel)
        self._layout = layout
        self._waiters: dict[int, asyncio.Future[Object]] = {}
        """Writes waiting for the watch to bring back their revision."""
        self._follower: asyncio.Task[None] | None = None
        self._watching: asyncio.Future[None] | None = None
        """Done once etcd has created the store's first watch."""
        self._probed: tuple[float, str | None] = (float("-inf"), None)
        """When the last health probe began, and what it found (`health`)."""

    @classmethod
    async def open(
        cls,
        endpoints: Sequence[str],
        *,
        layout: KeyLayout | None = None,
        watch_buffer: int = DEFAULT_WATCH_BUFFER,
        codec: Codec | None = None,
    ) -> EtcdStore:
        """Connect to etcd at `endpoints` (client URLs) and read the store's keys. Raises
        ValueError for a malformed URL and StorageError if etcd does not answer."""
        channel = rpc.insecure_channel(channel_target(endpoints), options=CHANNEL_OPTIONS)
        store = cls(channel, layout or KeyLayout(), watch_buffer=watch_buffer, codec=codec)
        try:
            await store._load()
        except BaseException:
            await channel.close()
            raise
        loop = asyncio.get_running_loop()
        store._watching = loop.create_future()
        store._follower = loop.create_task(store._follow())
        # Until etcd has the watch, a write could commit before the revision it watches from,
        # and wait for etcd's next pass over such watches (every 100 ms) to come back.
        await asyncio.wait([store._watching, store._follower], return_when="FIRST_COMPLETED")
        if not store._watching.done():
            failure = store._follower.exception()
            await store.close()
            if isinstance(failure, StoreError):
                raise failure
            raise StorageError(f"etcdserver: the watch of the store's keys failed: {failure}")
        return store

    async def _load(self) -> None:
        start, end = self._layout.range
        versions: list[Version] = []
        revision = 0
        key = start
        while True:
            request = rpc.RangeRequest(key=key, range_end=end, limit=PAGE, revision=revision)
            response = await self._call(self._kv.Range(request))
            revision = revision or response.header.revision
            for kv in response.kvs:
                store_key = self._layout.to_store(kv.key)
                obj = _decoded(kv) if store_key is not None else None
                if store_key is not None and obj is not None:
                    kind: EventType = (
                        "ADDED" if kv.create_revision == kv.mod_revision else "MODIFIED"
                    )
                    text = orjson.dumps(obj)
                    versions.append(
                        Version.from_json(kind, store_key, text, kv.mod_revision, self.codec)
                    )
            if not response.more:
                break
            key = response.kvs[-1].key + b"\0"
        revision = max(revision, INITIAL_REVISION)
        self._state.restore(versions, revision, revision)

    async def create(self, key: str, obj: Object) -> Object:
        etcd_key = self._layout.to_etcd(key)
        compare = rpc.Compare(
            key=etcd_key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=0
        )
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=_encoded(obj)))
        read = rpc.RequestOp(request_range=rpc.RangeRequest(key=etcd_key))
        response = await self._txn(rpc.TxnRequest(compare=[compare], success=[put], failure=[read]))
        if not response.succeeded:
            kvs = response.responses[0].response_range.kvs
            if kvs:
                await self._seen(kvs[0].mod_revision)
            raise KeyExistsError(key)
        return await self._written(response.header.revision)

    async def update(self, key: str, obj: Object, expected_revision: int | None) -> Object:
        etcd_key = self._layout.to_etcd(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=_encoded(obj)))
        return await self._conditional(key, etcd_key, expected_revision, put)

    async def delete(self, key: str, expected_revision: int | None = None) -> Object:
        etcd_key = self._layout.to_etcd(key)
        delete = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=etcd_key))
        return await self._conditional(key, etcd_key, expected_revision, delete)

    async def _write(self, key: str, build: Build) -> Object:
        raise NotImplementedError("etcd checks and commits each write itself")

    async def _conditional(
        self, key: str, etcd_key: bytes, expected: int | None, operation: Any
    ) -> Object:
        """`operation` on the key if it holds an object at `expected` (any, when None)."""
        if expected is None:
            compare = rpc.Compare(
                key=etcd_key, target=rpc.Compare.MOD, result=rpc.Compare.GREATER, mod_revision=0
            )
        else:
            compare = rpc.Compare(
                key=etcd_key,
                target=rpc.Compare.MOD,
                result=rpc.Compare.EQUAL,
                mod_revision=expected,
            )
        read = rpc.RequestOp(request_range=rpc.RangeRequest(key=etcd_key))
        response = await self._txn(
            rpc.TxnRequest(compare=[compare], success=[operation], failure=[read])
        )
        if response.succeeded:
            return await self._written(response.header.revision)
        kvs = response.responses[0].response_range.kvs
        current = _decoded(kvs[0]) if kvs else None
        if current is None:
            raise KeyNotFoundError(key)
        await self._seen(kvs[0].mod_revision)
        raise ConflictError(key, current)

    async def _txn(self, request: Any) -> Any:
        self._check_open()
        return await self._call(self._kv.Txn(request))

    async def _call(self, call: Any) -> Any:
        try:
            return await call
        except rpc.AioRpcError as e:
            raise StorageError(f"etcdserver: {e.details()}") from None

    async def sync(self, revision: int | None = None) -> None:
        """Without `revision`, etcd's current one, read with a quorum range that counts
        nothing; then until the copy has reached it (the watch brings every revision: see
        `_watch_etcd`)."""
        self._check_open()
        consistent = revision is None
        if revision is None:
            start, _ = self._layout.range
            request = rpc.RangeRequest(key=start, count_only=True, limit=1)
            revision = (await self._call(self._kv.Range(request))).header.revision
        try:
            await asyncio.wait_for(super().sync(revision), FRESH_SECONDS)
        except TimeoutError:
            if not consistent:
                return
            raise StorageError(
                f"etcdserver: the store did not reach revision {revision} (it is at "
                f"{self._state.revision}) within {FRESH_SECONDS:g}s"
            ) from None

    async def _seen(self, revision: int) -> None:
        """Until the watch has brought the change made at `revision` (to one of the store's
        keys): a writer that learns of another server's write, by a conflict, then reads it."""
        if revision > self._state.revision:
            await self._written(revision)

    async def _written(self, revision: int) -> Object:
        """The object the write committed at `revision` made, once the watch has brought it."""
        state = self._state
        if revision > state.revision:
            waiter = self._waiters.get(revision)
            if waiter is None:
                waiter = self._waiters[revision] = asyncio.get_running_loop().create_future()
            return await asyncio.shield(waiter)
        event = state.event_at(revision) if revision > state.compacted_revision else None
        if event is None:
            raise StoreError(f"the write at revision {revision} was compacted before it was read")
        return event.object

    async def _follow(self) -> None:
        """Apply etcd's changes to the copy, watching again whenever the watch fails."""
        while True:
            try:
                await self._watch_etcd()
            except rpc.AioRpcError as e:
                if self._watching is not None and not self._watching.done():
                    raise StorageError(f"etcdserver: {e.details()}") from None
                log.warning("the etcd watch failed (%s); watching again", e.details())
            except _Compacted as e:
                self._fail(StoreError(str(e)))
                log.error("%s", e)
                return
            await asyncio.sleep(RETRY_SECONDS)

    async def _watch_etcd(self) -> None:
        call = self._watch_stub.Watch()
        try:
            # Every key, not only the store's: each of etcd's revisions then comes back, so
            # the copy reaches any revision a consistent read asks for without etcd's
            # progress notifications (unreliable before etcd 3.4.31, etcd-io/etcd#15220).
            create = rpc.WatchCreateRequest(
                key=EVERY_KEY, range_end=EVERY_KEY, start_revision=self._state.revision + 1
            )
            await call.write(rpc.WatchRequest(create_request=create))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    return
                if response.compact_revision:
                    raise _Compacted(
                        f"etcd compacted revision {self._state.revision + 1} before this store "
                        f"read it (compacted to {response.compact_revision}): open it again"
                    )
                watching = self._watching
                if response.created and watching is not None and not watching.done():
                    watching.set_result(None)
                if response.canceled:
                    log.warning("etcd ended the watch: %s", response.cancel_reason)
                    return
                for event in response.events:
                    self._apply(event)
        finally:
            call.cancel()

    def _apply(self, change: Any) -> None:
        kv = change.kv
        revision = kv.mod_revision
        state = self._state
        key = self._layout.to_store(kv.key)
        if revision <= state.revision:
            if key is not None:
                log.error("two keys changed at revision %d; only the first is kept", revision)
            return
        event = self._event(key, change, revision) if key is not None else None
        waiter = self._waiters.pop(revision, None)
        if event is None:
            state.skip(revision)
            if self._reaching:
                self._wake_reached()  # `_commit` does when the change is the store's
            if waiter is not None and not waiter.done():
                waiter.set_exception(StoreError(f"etcd's change at {revision} is not the store's"))
            return
        state.skip(revision - 1)
        self._commit(event)
        if waiter is not None and not waiter.done():
            waiter.set_result(event.object)

    def _event(self, key: str, change: Any, revision: int) -> WatchEvent | None:
        latest = self._state.latest(key)
        previous = latest.object if latest is not None and latest.type != "DELETED" else None
        if change.type == rpc.Event.DELETE:
            if previous is None:
                return None
            return WatchEvent("DELETED", key, stamped(dict(previous), revision), previous, revision)
        obj = _decoded(change.kv)
        if obj is None:
            return None
        if change.kv.create_revision == revision:
            return WatchEvent("ADDED", key, obj, None, revision)
        return WatchEvent("MODIFIED", key, obj, previous, revision)

    async def compact(self, revision: int) -> None:
        self._check_open()
        self._state.read_revision(max(revision, self.compacted_revision))
        if revision > self.compacted_revision:
            try:
                await self._kv.Compact(rpc.CompactionRequest(revision=revision))
            except rpc.AioRpcError as e:
                if _COMPACTED not in (e.details() or ""):  # else another server got further
                    raise StorageError(f"etcdserver: {e.details()}") from None
        await super().compact(revision)

    async def health(self) -> str | None:
        """kube-apiserver's etcd probe (storagebackend/factory's etcd3 health check): a read
        of HEALTH_KEY that waits for etcd up to HEALTHCHECK_SECONDS, in its words; a check
        within half of that after a probe began gets that probe's answer, as its rate
        limiter gives."""
        loop = asyncio.get_running_loop()
        began, found = self._probed
        if loop.time() - began < HEALTHCHECK_SECONDS / 2:
            return found
        self._probed = (loop.time(), found)
        try:
            await self._kv.Range(
                rpc.RangeRequest(key=HEALTH_KEY, count_only=True),
                timeout=HEALTHCHECK_SECONDS,
                wait_for_ready=True,
            )
            found = None
        except rpc.AioRpcError as e:
            timed_out = e.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            why = "context deadline exceeded" if timed_out else e.details()
            found = f"error getting data from etcd: {why}"
        self._probed = (self._probed[0], found)
        return found

    async def close(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)
        if not self._closed:
            self._fail(WatchClosedError("the store is closed"))
        await self._channel.close()  # idempotent: a store failed by compaction is closed too

    def _fail(self, error: StoreError) -> None:
        """End every watch, every write still waiting for its revision and every read
        waiting for the copy to reach one (`sync`) with `error`."""
        self._close_watches()
        waiting: list[asyncio.Future[Any]] = [*self._waiters.values()]
        for waiter in waiting + [reached for _, reached in self._reaching]:
            if not waiter.done():
                waiter.set_exception(error)
        self._waiters.clear()


class _Compacted(Exception):
    """etcd compacted revisions the store had not read yet."""


def _encoded(obj: Object) -> bytes:
    """The value of `obj` in etcd: its JSON, without the resourceVersion (as kube-apiserver
    stores objects). Raises TypeError if it is not JSON."""
    metadata = obj.get("metadata")
    if metadata and "resourceVersion" in metadata:
        obj = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "resourceVersion"}}
    return orjson.dumps(obj)


def _decoded(kv: Any) -> Object | None:
    """The object of an etcd key-value with its mod_revision as resourceVersion; None (and a
    warning) if the value is not a JSON object."""
    try:
        obj = orjson.loads(kv.value)
    except orjson.JSONDecodeError:
        obj = None
    if not isinstance(obj, dict):
        log.warning("etcd key %r does not hold a JSON object; it is left out", kv.key)
        return None
    return stamped(obj, kv.mod_revision)
