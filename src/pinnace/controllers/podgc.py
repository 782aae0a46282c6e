"""The pod garbage collector, as kube-controller-manager v1.32's pkg/controller/podgc.

Every 20 s (gcCheckPeriod) it force-deletes (grace period 0), in this order:

- terminated pods (phase Succeeded or Failed) beyond terminated-pod-gc-threshold (12500;
  0 turns this off), evicted ones first, then the oldest by creation time;
- terminating pods on a node that is not Ready and has the `node.kubernetes.io/out-of-service`
  taint;
- orphaned pods, bound to a node that no longer exists: a missing node is quarantined for 40 s
  (the informer may simply lag), then looked up with a GET; the pods of a node still missing
  get the DisruptionTarget condition (reason DeletionByPodGC);
- terminating pods that were never scheduled.

A pod that is not yet Succeeded or Failed is first marked Failed through its status, since no
kubelet may be left to finish it.

A pass that would find nothing is skipped (`pinnace.clock.periodic`): while no terminating pod
is unscheduled or on an out-of-service node, the terminated pods are within the threshold and
no missing node's quarantine is up, the passes wait for a pod or node change that could give
them work.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Iterable

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, InformerFactory, PatchType, object_key
from pinnace.clock.periodic import Periodic
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.node_lifecycle import condition

log = logging.getLogger(__name__)

GC_CHECK_PERIOD = 20.0
QUARANTINE_TIME = 40.0
DEFAULT_TERMINATED_POD_THRESHOLD = 12500
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
DISRUPTION_TARGET = "DisruptionTarget"
DELETION_BY_POD_GC = "DeletionByPodGC"
NODE_GONE_MESSAGE = "PodGC: node no longer exists"
_TERMINAL = ("Succeeded", "Failed")


PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
TERMINATING = "podgc.terminating"
NODE_NAME = "podgc.nodeName"
"""The indices podgc adds to the shared pod informer: what a pass looks for without walking
every pod (the pods being deleted; the nodes pods are bound to)."""


def is_terminated(pod: Object) -> bool:
    """Neither Pending, Running nor Unknown (a pod with no phase yet counts as terminated,
    as in v1.32)."""
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


def is_evicted(pod: Object) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


Order = tuple[bool, float, str]


def eviction_and_creation_order(pod: Object) -> Order:
    """byEvictionAndCreationTimestamp: evicted pods first, then oldest, then by name."""
    created = pod["metadata"].get("creationTimestamp")
    return (not is_evicted(pod), parse_time(created) if created else 0.0, pod["metadata"]["name"])


def _terminating(pod: Object) -> list[str]:
    return ["true"] if pod["metadata"].get("deletionTimestamp") else []


def is_node_ready(node: Object) -> bool:
    ready = condition(node, "Ready")
    return ready is not None and ready.get("status") == "True"


def is_out_of_service(node: Object) -> bool:
    taints = (node.get("spec") or {}).get("taints") or ()
    return not is_node_ready(node) and any(t.get("key") == OUT_OF_SERVICE for t in taints)


_Entry = tuple[Order, int, str]
"""A pod's order, its sequence among ties, its key."""


class TerminatedPods:
    """The terminated pods by key, each with its place in byEvictionAndCreationTimestamp
    (worked out once per change of the pod), ties kept in the order the pods first finished;
    `first(n)` reads only about the n it gives, from a heap whose entries for pods changed or
    gone since are skipped (and dropped when they outnumber the pods)."""

    __slots__ = ("_entries", "_heap", "_sequence")

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        """Each pod's current heap entry: the very tuple, so an entry left from an order the
        pod had before (and may have again) is told apart by identity."""
        self._heap: list[_Entry] = []
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, key: str, order: Order) -> None:
        known = self._entries.get(key)
        if known is not None and known[0] == order:
            return
        entry = (order, next(self._sequence) if known is None else known[1], key)
        self._entries[key] = entry
        heapq.heappush(self._heap, entry)

    def discard(self, key: str) -> None:
        self._entries.pop(key, None)
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)

    def first(self, n: int) -> list[str]:
        """The keys of the first `n` pods, in order; they stay until discarded."""
        taken: list[_Entry] = []
        while len(taken) < n and self._heap:
            entry = heapq.heappop(self._heap)
            if self._entries.get(entry[2]) is entry:
                taken.append(entry)
        for entry in taken:
            heapq.heappush(self._heap, entry)
        return [key for _, _, key in taken]


class PodGCController:
    def __init__(
        self,
        client: Client,
        informers: InformerFactory,
        terminated_pod_threshold: int = DEFAULT_TERMINATED_POD_THRESHOLD,
    ) -> None:
        self._client = client
        self._clock = client.clock
        self.terminated_pod_threshold = terminated_pod_threshold
        self._passes = Periodic(self._clock, GC_CHECK_PERIOD, self._pass)
        self._quarantine: dict[str, float] = {}
        """Missing nodes by name: when (clock seconds) to check whether they are really gone."""
        self._terminated = TerminatedPods()
        self._nodes: Informer = informers.informer(NODES)
        self._nodes.add_event_handler(
            on_update=self._node_updated, on_delete=lambda _: self._passes.wake()
        )
        self._pods: Informer = informers.informer(PODS)
        self._pods.add_indexer(TERMINATING, _terminating)
        self._pods.add_indexer(NODE_NAME, lambda pod: [pod["spec"].get("nodeName") or ""])
        self._pods.add_event_handler(
            self._pod_changed, lambda _, new: self._pod_changed(new), self._pod_deleted
        )
        self._maybe_missing: dict[str, None] = {}
        """The nodes a pod was bound to while not cached, and those gone from the cache, in
        the order seen: the only ones a pass looks for among the pods' nodes, rather than
        comparing every pod's node with every node (a set kept in step with both caches)."""
        self._pods.add_listener(self._pod_cached)
        self._nodes.add_listener(self._node_cached)

    async def run(self) -> None:
        """Collect every GC_CHECK_PERIOD forever; cancel the task to stop."""
        await self._pods.wait_for_sync()
        await self._nodes.wait_for_sync()
        await self._passes.run()

    async def _pass(self) -> float | None:
        try:
            await self.gc()
        except StatusError as e:
            log.warning("pod garbage collection: %s", e.message)
            return None
        return self._next_outcome()

    def _next_outcome(self) -> float | None:
        """When a pass could next do something, unless a pod or node changes first: None
        (the next period) while terminated pods beyond the threshold are left, or terminating
        ones unscheduled or on an out-of-service node; the end of the earliest quarantine;
        else never."""
        if self._excess() > 0 or any(
            map(self._collectable, self._pods.by_index(TERMINATING, "true"))
        ):
            return None
        return min(self._quarantine.values(), default=math.inf)

    def _collectable(self, terminating: Object) -> bool:
        """Whether a pass deletes the terminating pod: it is unscheduled, or its node is out
        of service."""
        name = terminating["spec"].get("nodeName")
        node = self._nodes.get("", name) if name else None
        return not name or (node is not None and is_out_of_service(node))

    def _node_updated(self, old: Object, new: Object) -> None:
        if is_out_of_service(new):
            self._passes.wake()

    async def gc(self) -> None:
        """One pass, reading from the cache as one listing of every pod would: each part
        lists the pods only when its index says it has work."""
        listed: list[Object] | None = None

        def pods() -> list[Object]:
            nonlocal listed
            if listed is None:
                listed = self._pods.list()
            return listed

        terminating = bool(self._pods.index_values(TERMINATING))
        missing = self._missing_nodes()
        if self.terminated_pod_threshold > 0:
            await self._gc_terminated()
        if terminating:
            await self._gc_terminating(pods())
        await self._gc_orphaned(pods, missing)
        if terminating:
            await self._gc_unscheduled_terminating(pods())

    def _excess(self) -> int:
        """The terminated pods beyond the threshold (none when it is off)."""
        if self.terminated_pod_threshold <= 0:
            return 0
        return len(self._terminated) - self.terminated_pod_threshold

    async def _gc_terminated(self) -> None:
        excess = self._excess()
        if excess <= 0:
            return
        log.info("garbage collecting %d terminated pods", excess)
        doomed = (self._pods.get_by_key(key) for key in self._terminated.first(excess))
        await self._delete_all(pod for pod in doomed if pod is not None)

    def _pod_changed(self, pod: Object) -> None:
        if is_terminated(pod):
            self._terminated.put(object_key(pod), eviction_and_creation_order(pod))
        else:
            self._terminated.discard(object_key(pod))
        node = pod["spec"].get("nodeName") or ""
        if (
            pod["metadata"].get("deletionTimestamp")
            or self._excess() > 0
            or (node and self._nodes.get("", node) is None)
        ):
            self._passes.wake()  # work for the next pass

    def _pod_deleted(self, pod: Object) -> None:
        self._terminated.discard(object_key(pod))

    async def _gc_terminating(self, pods: list[Object]) -> None:
        doomed = []
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                continue
            node = self._nodes.get("", pod["spec"].get("nodeName") or "")
            if node is not None and is_out_of_service(node):
                doomed.append(pod)
        doomed.sort(key=eviction_and_creation_order)
        await self._delete_all(doomed)

    def _pod_cached(self, key: str, old: Object | None, new: Object | None) -> None:
        node = "" if new is None else new["spec"].get("nodeName") or ""
        if node and self._nodes.get("", node) is None:
            self._maybe_missing[node] = None

    def _node_cached(self, name: str, old: Object | None, new: Object | None) -> None:
        if new is None:
            self._maybe_missing[name] = None

    def _missing_nodes(self) -> list[str]:
        """The nodes pods are bound to that are not in the node cache (those of
        `_maybe_missing` that are; the others leave it until a pod bound to one, or its
        removal from the cache, puts it back)."""
        for node in list(self._maybe_missing):
            if self._nodes.get("", node) is not None or not self._pods.by_index(NODE_NAME, node):
                del self._maybe_missing[node]
        return list(self._maybe_missing)

    async def _gc_orphaned(self, pods: Callable[[], list[Object]], missing: list[str]) -> None:
        """`missing`: the nodes pods were bound to, missing from the node cache at the start
        of the pass (as v1.32 lists both then)."""
        now = self._clock.now()
        for node in missing:
            self._quarantine.setdefault(node, now + QUARANTINE_TIME)
        deleted = await self._deleted_nodes(now)
        if not deleted:
            return
        gone = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": DELETION_BY_POD_GC,
            "message": NODE_GONE_MESSAGE,
        }
        for pod in pods():
            if pod["spec"].get("nodeName") in deleted:
                log.info("deleting pod %s: its node is gone", object_key(pod))
                await self._mark_failed_and_delete(pod, gone)

    async def _deleted_nodes(self, now: float) -> set[str]:
        """The quarantined nodes whose time is up and that the API confirms are gone; each
        leaves the quarantine (a pod still bound to one puts it back next time)."""
        deleted: set[str] = set()
        for name, due in list(self._quarantine.items()):
            if due > now:
                continue
            del self._quarantine[name]
            if self._nodes.get("", name) is not None:
                continue
            try:
                await self._client.get(NODES, "", name)
            except StatusError as e:
                if e.code == 404:
                    deleted.add(name)
                else:
                    log.warning("pod garbage collection: getting node %s: %s", name, e.message)
        return deleted

    async def _gc_unscheduled_terminating(self, pods: list[Object]) -> None:
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") and not pod["spec"].get("nodeName"):
                await self._mark_failed_and_delete(pod)

    async def _delete_all(self, pods: Iterable[Object]) -> None:
        await asyncio.gather(*(self._mark_failed_and_delete(p) for p in pods))

    async def _mark_failed_and_delete(self, pod: Object, reason: Object | None = None) -> None:
        """markFailedAndDeletePodWithCondition: a pod not yet finished becomes Failed (with
        `reason` as a condition), then it is deleted with no grace period. Errors are logged:
        the next pass tries again."""
        meta = pod["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        try:
            if (pod.get("status") or {}).get("phase") not in _TERMINAL:
                await self._client.patch(
                    PODS,
                    namespace,
                    name,
                    {
                        "metadata": {"uid": meta["uid"]},
                        "status": self._failed_status(pod, reason),
                    },
                    PatchType.STRATEGIC_MERGE,
                    subresource="status",
                )
            await self._client.delete(PODS, namespace, name, DeleteOptions(grace_period_seconds=0))
        except StatusError as e:
            if e.code != 404:
                log.warning("pod garbage collection of %s: %s", object_key(pod), e.message)

    def _failed_status(self, pod: Object, reason: Object | None) -> Object:
        status: Object = {"phase": "Failed"}
        if reason is None:
            return status
        current = next(
            (
                c
                for c in (pod.get("status") or {}).get("conditions") or ()
                if c.get("type") == reason["type"]
            ),
            None,
        )
        since = self._clock.now_rfc3339()
        if current is not None and current.get("status") == reason["status"]:
            since = current.get("lastTransitionTime") or since
        status["conditions"] = [{**reason, "lastTransitionTime": since}]
        return status
