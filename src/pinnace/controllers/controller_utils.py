"""What the workload controllers share, as kube-controller-manager's controller_utils.go:
a work queue, expectations, ownerReferences, pod activity and readiness, slow-start batches
and the order in which surplus pods are deleted."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError, namespace_terminating
from pinnace.client import Client, EventRecorder, Informer, object_key
from pinnace.clock import Clock, Timer
from pinnace.clock.rfc3339 import parse_time

log = logging.getLogger(__name__)

SLOW_START_INITIAL_BATCH_SIZE = 1
EXPECTATIONS_TIMEOUT = 5 * 60.0
"""Expectations not met in this long are given up on (ExpectationsTimeout)."""
INITIAL_RETRY = 0.005
MAX_RETRY = 1000.0
"""The default controller rate limiter's per-item exponential backoff."""
RETRY_QPS = 10.0
RETRY_BURST = 100
"""The default controller rate limiter's overall token bucket."""
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_DELETION_COST = re.compile(r"-[0-9]+|0|[1-9][0-9]*")


# --- rate limiting ----------------------------------------------------------------------------


class TokenBucket:
    """client-go's token bucket rate limiter: `burst` at once, then `qps` a second; qps 0
    never accepts."""

    def __init__(self, clock: Clock, qps: float, burst: int) -> None:
        self._clock = clock
        self.qps = qps
        self._burst = burst
        self._tokens = float(burst) if qps > 0 else 0.0
        self._last = clock.monotonic()

    def _refill(self) -> None:
        now = self._clock.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_accept(self) -> bool:
        if self.qps <= 0:
            return False
        self._refill()
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False

    def reserve(self) -> float:
        """Take a token, on credit when none is left: the seconds until it is due (qps must
        be positive). Reservations are let through in turn (rate.Limiter's Reserve)."""
        self._refill()
        self._tokens -= 1
        return max(-self._tokens / self.qps, 0.0)

    async def wait(self) -> None:
        """Take a token, waiting until it is due when none is left (qps must be positive)."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)


class RateLimiter:
    """client-go's DefaultControllerRateLimiter: a key waits the longer of its own exponential
    back-off (5 ms, doubling at each requeue up to 1000 s, until it is forgotten) and the
    queue's token bucket (10 a second, bursts of 100). Without `qps`, the back-off alone (an
    ItemExponentialFailureRateLimiter)."""

    def __init__(
        self,
        clock: Clock,
        base: float = INITIAL_RETRY,
        cap: float = MAX_RETRY,
        qps: float | None = RETRY_QPS,
        burst: int = RETRY_BURST,
    ) -> None:
        self._base = base
        self._cap = cap
        self._bucket = TokenBucket(clock, qps, burst) if qps else None
        self._requeues: dict[str, int] = {}

    def when(self, key: str) -> float:
        """The seconds `key` waits before it is queued again; counts a requeue."""
        requeues = self._requeues.get(key, 0)
        self._requeues[key] = requeues + 1
        # Past 2**64 every base is beyond any cap (and a float overflows at 2**1024).
        backoff = min(self._base * 2.0 ** min(requeues, 64), self._cap)
        return backoff if self._bucket is None else max(backoff, self._bucket.reserve())

    def forget(self, key: str) -> None:
        self._requeues.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._requeues.get(key, 0)


# --- work queue -------------------------------------------------------------------------------


class WorkQueue:
    """Keys to sync, each at most once at a time, as client-go's rate-limited work queue: a key
    added while it is being synced is synced again after; a key added to wait keeps the
    earliest of its times; a failed sync is retried through the rate limiter (at most
    `max_retries` times in a row when given), and a sync that succeeds forgets the key's
    requeues.

    Its syncs share one event loop, so the queue cannot let one sync follow another forever
    without time passing, whatever the syncs do: it yields to the loop after each, and a sync
    that queues work at once without an outside cause goes through the rate limiter instead.
    That is a sync re-adding its own key (a re-check: the sync would run again at the same
    moment and decide the same), or any key added by the sync of a key a sync queued (so no
    chain of syncs can keep queueing each other at once)."""

    def __init__(
        self, clock: Clock, limiter: RateLimiter | None = None, max_retries: int | None = None
    ) -> None:
        self._clock = clock
        self._limiter = limiter or RateLimiter(clock)
        self._max_retries = max_retries
        self._queue: dict[str, None] = {}
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._waiting: dict[str, tuple[float, Timer]] = {}
        self._queued_by_sync: set[str] = set()
        self._runner: asyncio.Task[Any] | None = None
        self._syncing: tuple[str, bool] | None = None
        """The key being synced, and whether a sync queued it."""
        self._wake = asyncio.Event()

    def add(self, key: str) -> None:
        syncing = self._syncing
        if syncing is not None and asyncio.current_task() is not self._runner:
            syncing = None  # an informer's handler or a timer: an outside cause
        if syncing is None:
            self._queued_by_sync.discard(key)
        elif key == syncing[0] or syncing[1]:
            self.add_rate_limited(key)
            return
        else:
            self._queued_by_sync.add(key)
        self._add(key)

    def add_after(self, key: str, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
        else:
            self._wait(key, seconds)

    def add_rate_limited(self, key: str) -> None:
        """Queue `key` again once the rate limiter allows (AddRateLimited)."""
        self._wait(key, self._limiter.when(key))

    def forget(self, key: str) -> None:
        """Stop counting `key`'s requeues: its next one waits the least again."""
        self._limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self._limiter.num_requeues(key)

    def _add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
            return
        self._queue[key] = None
        self._wake.set()

    def _wait(self, key: str, seconds: float) -> None:
        at = self._clock.monotonic() + seconds
        waiting = self._waiting.get(key)
        if waiting is not None:
            if waiting[0] <= at:
                return
            waiting[1].cancel()
        self._waiting[key] = (at, self._clock.call_later(seconds, self._waited, key))

    def _waited(self, key: str) -> None:
        del self._waiting[key]
        self._queued_by_sync.discard(key)
        self._add(key)

    async def run(self, sync: Callable[[str], Awaitable[None]]) -> None:
        """Sync keys forever; cancel the task to stop."""
        self._runner = asyncio.current_task()
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            key = next(iter(self._queue))
            del self._queue[key]
            self._processing.add(key)
            self._syncing = (key, key in self._queued_by_sync)
            self._queued_by_sync.discard(key)
            try:
                await sync(key)
                self.forget(key)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._retry(key, e)
            finally:
                self._syncing = None
                self._processing.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self._add(key)
            await asyncio.sleep(0)

    def _retry(self, key: str, error: Exception) -> None:
        if self._max_retries is not None and self.num_requeues(key) >= self._max_retries:
            log.info("syncing %s failed, dropping it out of the queue: %s", key, error)
            self.forget(key)
            return
        log.info("syncing %s failed, retrying: %s", key, error)
        self.add_rate_limited(key)


# --- expectations -----------------------------------------------------------------------------


@dataclass
class _Expected:
    adds: int
    deletes: set[str]
    since: float


@dataclass
class Expectations:
    """The creations and deletions a controller made and has not yet seen in its informer
    (ControllerExpectations, with deletions tracked by pod key as UIDTrackingExpectations):
    until they are seen, the controller does not act on its cache again, so it never creates
    or deletes twice."""

    clock: Clock
    _by_key: dict[str, _Expected] = field(default_factory=dict)

    def satisfied(self, key: str) -> bool:
        e = self._by_key.get(key)
        if e is None:
            return True
        if e.adds <= 0 and not e.deletes:
            return True
        return self.clock.monotonic() - e.since > EXPECTATIONS_TIMEOUT

    def expect(self, key: str, adds: int = 0, deletes: Iterable[str] = ()) -> None:
        self._by_key[key] = _Expected(adds, set(deletes), self.clock.monotonic())

    def creation_observed(self, key: str) -> None:
        e = self._by_key.get(key)
        if e is not None:
            e.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        e = self._by_key.get(key)
        if e is not None:
            e.deletes.discard(pod_key)

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)


# --- status ----------------------------------------------------------------------------------


async def write_status(
    client: Client,
    kind: Kind,
    obj: Object,
    status_for: Callable[[Object], Object | None],
    retries: int,
) -> None:
    """Write the status `status_for` makes for the object (None: it has the right one already),
    reading the object again and remaking the status on a conflict, at most `retries` times (the
    retried status updates of the DaemonSet and StatefulSet controllers); gone, it needs none."""
    target = obj
    for attempt in range(retries + 1):
        status = status_for(target)
        if status is None:
            return
        updated = clone(target)
        updated["status"] = status
        try:
            await client.update_status(kind, updated)
            return
        except StatusError as e:
            if e.code == 404:
                return
            if e.code != 409 or attempt == retries:
                raise
        target = await client.get(kind, obj["metadata"]["namespace"], obj["metadata"]["name"])


# --- pod control -----------------------------------------------------------------------------


@dataclass
class PodControl:
    """A controller's pod creations and deletions, each recorded as an event on the owner
    (RealPodControl), through the controller's client rate limit when it has one."""

    client: Client
    recorder: EventRecorder
    expectations: Expectations
    requests: TokenBucket | None = None

    async def create(self, owner: Object, pod: Object) -> None:
        """A create refused because the namespace is terminating counts as done, with neither
        an error nor an event, as the ReplicaSet and DaemonSet controllers take it: every
        create there fails, and the namespace is going."""
        if self.requests is not None:
            await self.requests.wait()
        try:
            created = await self.client.create(_PODS, owner["metadata"]["namespace"], pod)
        except StatusError as e:
            if namespace_terminating(e):
                return
            self.recorder.event(owner, EVENT_TYPE_WARNING, "FailedCreate", f"Error creating: {e}")
            raise
        name = created["metadata"]["name"]
        self.recorder.event(owner, EVENT_TYPE_NORMAL, "SuccessfulCreate", f"Created pod: {name}")

    async def delete(self, owner: Object, pod: Object) -> StatusError | None:
        """None once the pod is deleted or gone; the error otherwise (the deletion will not be
        seen: the owner's expectations stop waiting for it)."""
        name = pod["metadata"]["name"]
        if self.requests is not None:
            await self.requests.wait()
        try:
            await self.client.delete(_PODS, pod["metadata"]["namespace"], name)
        except StatusError as e:
            self.expectations.deletion_observed(object_key(owner), object_key(pod))
            if e.code == 404:
                return None
            self.recorder.event(owner, EVENT_TYPE_WARNING, "FailedDelete", f"Error deleting: {e}")
            return e
        self.recorder.event(owner, EVENT_TYPE_NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")
        return None


_PODS = catalog.kind("", "pods")
POD_NODE_INDEX = "nodeName"


def pods_on_nodes(client: Client) -> Informer:
    """An informer on the pods bound to a node, filed by node name (POD_NODE_INDEX): the node
    lifecycle and taint eviction controllers share one, as kube-controller-manager's share
    its pod informer, so that every change of a bound pod is watched and cached once for
    both."""
    pods = Informer(client, _PODS, field_selector="spec.nodeName!=")
    pods.add_indexer(POD_NODE_INDEX, lambda p: [p["spec"]["nodeName"]])
    return pods


# --- ownership --------------------------------------------------------------------------------


async def patch_pod(client: Client, pod: Object, patch: Object) -> bool:
    """PodControl's PatchPod, for adopting and releasing pods: False when the pod is gone or
    changed meanwhile (the next sync sees it as it is)."""
    try:
        await client.patch(_PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], patch)
    except StatusError as e:
        if e.code in (404, 409, 422):
            return False
        raise
    return True


def owner_reference(owner: Object, kind: Kind) -> Object:
    """The controller ownerReference a controller puts on what it creates or adopts."""
    m = owner["metadata"]
    return {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "name": m["name"],
        "uid": m["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_ref(obj: Mapping[str, Any]) -> Object | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def adopt_patch(obj: Object, owner: Object, kind: Kind) -> Object:
    """The strategic merge patch that adopts `obj` (uid as precondition, as client-go's)."""
    return {
        "metadata": {
            "ownerReferences": [owner_reference(owner, kind)],
            "uid": obj["metadata"]["uid"],
        }
    }


def release_patch(obj: Object, owner: Object) -> Object:
    """The strategic merge patch that drops `owner`'s reference from `obj`."""
    return {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": owner["metadata"]["uid"]}],
            "uid": obj["metadata"]["uid"],
        }
    }


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of an `object_key`: ("", name) for a cluster-scoped object."""
    namespace, _, name = key.rpartition("/")
    return namespace, name


def spec_selector(owner: Object) -> LabelSelector | None:
    """The owner's spec.selector, a LabelSelector; None when it does not convert."""
    return as_label_selector(owner["spec"].get("selector"))


def pod_owner_to_sync(
    key: str,
    owners: Informer,
    expectations: Expectations,
    selector_of: Callable[[Object], LabelSelector | None] = spec_selector,
) -> tuple[Object, LabelSelector] | None:
    """The ReplicaSet, ReplicationController or DaemonSet `key` names, and its pod selector
    (`selector_of` it; its spec.selector, a LabelSelector, by default), as its sync begins;
    None when there is nothing to sync (its expectations forgotten if it is gone)."""
    owner = owners.get(*split_key(key))
    if owner is None:
        expectations.forget(key)
        return None
    selector = selector_of(owner)
    if selector is None:
        log.warning("%s %s has a selector that does not convert", owner.get("kind"), key)
        return None
    return owner, selector


# --- pods -------------------------------------------------------------------------------------


def is_pod_active(pod: Object) -> bool:
    """Counted toward replicas: not finished and not being deleted (IsPodActive)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _ready_condition(pod: Object) -> Object | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


def is_pod_ready(pod: Object) -> bool:
    c = _ready_condition(pod)
    return c is not None and c.get("status") == "True"


def ready_since(pod: Object) -> float | None:
    c = _ready_condition(pod)
    if c is None or c.get("status") != "True" or not c.get("lastTransitionTime"):
        return None
    return parse_time(c["lastTransitionTime"])


def is_pod_available(pod: Object, min_ready_seconds: int, now: float) -> bool:
    """Ready for at least minReadySeconds (IsPodAvailable)."""
    return is_pod_ready(pod) and is_available_since(ready_since(pod), min_ready_seconds, now)


def is_available_since(since: float | None, min_ready_seconds: int, now: float) -> bool:
    """Whether a pod ready `since` then (None: no time given) is available by `now`."""
    return min_ready_seconds == 0 or (since is not None and since + min_ready_seconds <= now)


def template_labels_match(labels: Mapping[str, str], template: Object) -> bool:
    """Every label of the template is among a pod's `labels` (fullyLabeledReplicas)."""
    want = ((template or {}).get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in want.items())


def pod_from_template(template: Object, owner: Object, kind: Kind) -> Object:
    """A pod to create from `template`, owned by `owner` and named `<owner>-<random>`."""
    meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "generateName": f"{owner['metadata']['name']}-",
        "namespace": owner["metadata"]["namespace"],
        "ownerReferences": [owner_reference(owner, kind)],
    }
    for key in ("labels", "annotations", "finalizers"):
        if meta.get(key):
            metadata[key] = dict(meta[key]) if key != "finalizers" else list(meta[key])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec") or {},
    }


# --- batches ----------------------------------------------------------------------------------


async def slow_start_batch(
    count: int, initial: int, create: Callable[[], Awaitable[None]]
) -> tuple[int, Exception | None]:
    """Call `create` `count` times in batches of 1, 2, 4 … (each batch at once), stopping
    after the first batch with a failure: a flood of calls that would all fail (a quota, a
    webhook) stops early. Returns the successes and the first error."""
    done = 0
    batch = min(count, initial)
    while batch > 0:
        results = await asyncio.gather(*(create() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        done += batch - len(errors)
        if errors:
            return done, errors[0]
        batch = min(2 * batch, count - done)
    return done, None


# --- deletion order ---------------------------------------------------------------------------


def _deletion_cost(pod: Object) -> int:
    """The pod-deletion-cost annotation as Kubernetes reads it: a decimal int32 without a plus
    sign or leading zeros; anything else counts as 0."""
    text = (pod["metadata"].get("annotations") or {}).get(POD_DELETION_COST, "0")
    if not _DELETION_COST.fullmatch(text):
        return 0
    cost = int(text)
    return cost if -(2**31) <= cost < 2**31 else 0


def _max_restarts(pod: Object) -> tuple[int, int]:
    """The most restarts of a regular container, then of a sidecar (an init container with
    restartPolicy Always): sidecars only break ties."""
    status = pod.get("status") or {}
    regular = max(
        (s.get("restartCount", 0) for s in status.get("containerStatuses") or []), default=0
    )
    init_containers = (pod.get("spec") or {}).get("initContainers") or []
    sidecars = {c.get("name") for c in init_containers if c.get("restartPolicy") == "Always"}
    sidecar = max(
        (
            s.get("restartCount", 0)
            for s in status.get("initContainerStatuses") or []
            if s.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _log_rank(t: float, now: float) -> int:
    """floor(log2) of the age in nanoseconds: the LogarithmicScaleDown bucket."""
    age = round((now - t) * 1e9)
    return int(math.log2(age)) if age > 0 else -1


def _created(pod: Object) -> float | None:
    text = pod["metadata"].get("creationTimestamp")
    return parse_time(text) if text else None


def _newer_first(
    a: float | None, b: float | None, uid_a: str, uid_b: str, now: float | None
) -> int:
    """-1 when a goes first: a zero time first, then the younger; by log2 bucket of the age
    and then uid when `now` is given (LogarithmicScaleDown), else by the exact time."""
    if a is None or b is None:
        return -1 if a is None else 1
    if now is None:
        return -1 if a > b else (1 if a < b else 0)
    diff = _log_rank(a, now) - _log_rank(b, now)
    if diff == 0:
        return -1 if uid_a < uid_b else (1 if uid_a > uid_b else 0)
    return -1 if diff < 0 else 1


def compare_for_deletion(a: Object, rank_a: int, b: Object, rank_b: int, now: float) -> int:
    """v1.32's ActivePodsWithRanks order; negative when `a` is deleted before `b`."""
    return _compare_active(a, b, (rank_a, rank_b), now)


def _compare_active(a: Object, b: Object, ranks: tuple[int, int] | None, now: float | None) -> int:
    """ActivePodsWithRanks with `ranks` and `now` (deletion cost, then node rank, times by
    log2 bucket), or ActivePods without them (neither, exact times)."""
    node_a, node_b = a["spec"].get("nodeName", ""), b["spec"].get("nodeName", "")
    if node_a != node_b and (not node_a or not node_b):
        return -1 if not node_a else 1
    phase_a = _PHASE_ORDINAL.get((a.get("status") or {}).get("phase", ""), 0)
    phase_b = _PHASE_ORDINAL.get((b.get("status") or {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return phase_a - phase_b
    ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
    if ready_a != ready_b:
        return -1 if not ready_a else 1
    if ranks is not None:
        cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
        if cost_a != cost_b:
            return -1 if cost_a < cost_b else 1
        rank_a, rank_b = ranks
        if rank_a != rank_b:
            return -1 if rank_a > rank_b else 1
    uid_a, uid_b = a["metadata"].get("uid", ""), b["metadata"].get("uid", "")
    if ready_a and ready_b:
        since_a, since_b = ready_since(a), ready_since(b)
        if since_a != since_b:
            order = _newer_first(since_a, since_b, uid_a, uid_b, now)
            if order:
                return order
    restarts_a, restarts_b = _max_restarts(a), _max_restarts(b)
    if restarts_a != restarts_b:
        return -1 if restarts_a > restarts_b else 1
    created_a, created_b = _created(a), _created(b)
    if created_a != created_b:
        return _newer_first(created_a, created_b, uid_a, uid_b, now)
    return 0


def active_pods_to_delete(pods: list[Object], count: int) -> list[Object]:
    """The `count` pods the Job controller deletes first: v1.32's ActivePods order (no
    deletion cost, no node ranks, exact ready and creation times)."""
    if count >= len(pods):
        return list(pods)

    def compare(a: Object, b: Object) -> int:
        return _compare_active(a, b, None, None)

    return sorted(pods, key=cmp_to_key(compare))[:count]


def pods_to_delete(
    pods: list[Object], related: Iterable[Object], count: int, now: float
) -> list[Object]:
    """The `count` pods to delete first; `related` pods (those of every replica set with the
    same owner) rank a pod higher the more of them are active on its node."""
    if count >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for p in related:
        if is_pod_active(p):
            node = p["spec"].get("nodeName", "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(p, on_node.get(p["spec"].get("nodeName", ""), 0)) for p in pods]

    def compare(x: tuple[Object, int], y: tuple[Object, int]) -> int:
        return compare_for_deletion(x[0], x[1], y[0], y[1], now)

    ranked.sort(key=cmp_to_key(compare))
    return [p for p, _ in ranked[:count]]
