"""The ReplicaSet controller: keeps spec.replicas active pods of a ReplicaSet's template; and
the replication manager, the same controller on ReplicationControllers.

As kube-controller-manager's (v1.32): it claims the pods its selector matches (adopting
orphans, releasing owned pods that stop matching), creates missing pods in slow-start
batches, deletes surplus ones in Kubernetes' order, remembers what it asked for until its
informer shows it (expectations), and writes status (replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas, observedGeneration, the ReplicaFailure condition).

v1.32's replication manager (pkg/controller/replication) is this controller run through
adapters that convert ReplicationControllers to ReplicaSets and back; here it is the same class
told the kind it owns, its name and how to read its selector (a plain map of labels).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from pinnace.api import catalog
from pinnace.api.core.replicationcontroller import selector_of
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    Expectations,
    PodControl,
    TokenBucket,
    WorkQueue,
    adopt_patch,
    controller_ref,
    is_available_since,
    is_pod_active,
    is_pod_ready,
    patch_pod,
    pod_from_template,
    pod_owner_to_sync,
    pods_to_delete,
    ready_since,
    release_patch,
    slow_start_batch,
    template_labels_match,
)
from pinnace.controllers.ownership import (
    ControlledPodEvents,
    active_pod_groups,
    claim,
    claim_candidates,
    index_pods_by_controller,
    selects,
)

log = logging.getLogger(__name__)

BURST_REPLICAS = 500
"""At most this many creations or deletions per sync."""
CLIENT_QPS = 20.0
CLIENT_BURST = 30
"""kube-controller-manager's --kube-api-qps and --kube-api-burst: each controller's client
makes at most this many requests a second. It sets the pace at which pods the kubelet keeps
rejecting are replaced (the controller has no back-off of its own for them)."""
CONTROLLER_NAME = "replicaset-controller"
REPLICATION_CONTROLLER_NAME = "replication-controller"
REPLICA_FAILURE = "ReplicaFailure"


PODS = catalog.kind("", "pods")
REPLICA_SETS = catalog.kind("apps", "replicasets")
REPLICATION_CONTROLLERS = catalog.kind("", "replicationcontrollers")


@dataclass(frozen=True)
class Claimed:
    """What a sync takes from the pods a replica set claimed: how many, how many carry every
    label of its template, how many are ready and, with minReadySeconds, since when each ready
    one is ready (None: no time given), and the pods themselves when they were claimed one by
    one."""

    replicas: int
    fully_labeled: int
    ready: int
    ready_since: list[float | None]
    pods: list[Object] | None = None

    @staticmethod
    def of(pods: list[Object], template: Object) -> Claimed:
        labels = [p["metadata"].get("labels") or {} for p in pods]
        since = [ready_since(p) for p in pods if is_pod_ready(p)]
        return Claimed(
            len(pods),
            sum(template_labels_match(x, template) for x in labels),
            len(since),
            since,
            pods,
        )

    def available(self, min_ready_seconds: int, now: float) -> int:
        if not min_ready_seconds:
            return self.ready
        return sum(is_available_since(s, min_ready_seconds, now) for s in self.ready_since)


class ReplicaSetController(ControlledPodEvents):
    OWNER_KIND = "ReplicaSet"
    OWNERS: Kind = REPLICA_SETS
    NAME = CONTROLLER_NAME
    DELETION_RECHECKS_OLD_LABELS = True

    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, self.NAME)
        self._queue = WorkQueue(self._clock)
        self._requests = TokenBucket(self._clock, CLIENT_QPS, CLIENT_BURST)
        self.expectations = Expectations(self._clock)
        self._pod_control = PodControl(client, self._recorder, self.expectations, self._requests)
        self._replica_sets: Informer = informers.informer(self.OWNERS)
        self._pods: Informer = informers.informer(PODS)
        index_pods_by_controller(self._pods)
        self._groups = active_pod_groups(self._pods)
        self._replica_sets.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._replica_set_deleted,
        )
        self._watch_pods(self._pods)

    @property
    def owners(self) -> Informer:
        return self._replica_sets

    async def run(self) -> None:
        """Sync replica sets forever; cancel the task to stop."""
        await self._replica_sets.wait_for_sync()
        await self._pods.wait_for_sync()
        await self._queue.run(self.sync)

    # --- event handlers ----------------------------------------------------------------------

    def _replica_set_deleted(self, rs: Object) -> None:
        self.expectations.forget(object_key(rs))
        self._enqueue(rs)

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        found = pod_owner_to_sync(key, self._replica_sets, self.expectations, self.pod_selector)
        if found is None:
            return
        rs, selector = found
        manage = self.expectations.satisfied(key) and not rs["metadata"].get("deletionTimestamp")
        claimed = self._counted(rs, selector)
        # Deleting the surplus ranks the pods themselves.
        if claimed is None or (manage and claimed.replicas > (rs["spec"].get("replicas") or 0)):
            claimed = Claimed.of(await self._claim(rs, selector), rs["spec"].get("template") or {})
        error: StatusError | None = None
        if manage:
            error = await self._manage_replicas(rs, claimed)
        await self._update_status(rs, claimed, error)
        if error is not None:
            raise error  # retried with backoff

    def _counted(self, rs: Object, selector: LabelSelector) -> Claimed | None:
        """What claiming would give, counted from the active pod groups, when it would only
        keep the replica set's own matching pods; None when it would adopt or release one."""
        meta = rs["metadata"]
        deleting = bool(meta.get("deletionTimestamp"))  # adopts and releases nothing
        namespace = meta["namespace"]
        if not deleting and any(
            selects(selector, g.labels) for g in self._groups.groups("", namespace)
        ):
            return None
        template = rs["spec"].get("template") or {}
        min_ready = rs["spec"].get("minReadySeconds") or 0
        replicas = fully_labeled = ready = 0
        since: list[float | None] = []
        for group in self._groups.groups(meta["uid"], namespace):
            if not selects(selector, group.labels):
                if deleting:
                    continue
                return None
            replicas += len(group.pods)
            fully_labeled += len(group.pods) * template_labels_match(group.labels, template)
            ready += len(group.ready)
            if min_ready:
                since.extend(group.ready.values())
        return Claimed(replicas, fully_labeled, ready, since)

    async def _claim(self, rs: Object, selector: LabelSelector) -> list[Object]:
        """The active pods this replica set owns once orphans are adopted and pods that no
        longer match released (ClaimPods)."""

        async def adopt(pod: Object) -> Object | None:
            return pod if await self._patch_pod(pod, adopt_patch(pod, rs, self.OWNERS)) else None

        active = filter(is_pod_active, claim_candidates(self._pods, rs))
        return await claim(
            rs, selector, active, adopt, lambda pod: self._patch_pod(pod, release_patch(pod, rs))
        )

    async def _patch_pod(self, pod: Object, patch: Object) -> bool:
        await self._requests.wait()
        return await patch_pod(self._client, pod, patch)

    async def _manage_replicas(self, rs: Object, claimed: Claimed) -> StatusError | None:
        key = object_key(rs)
        diff = claimed.replicas - (rs["spec"].get("replicas") or 0)
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect(key, adds=count)
            created, error = await _slow_start(count, lambda: self._create_pod(rs))
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            return error
        if diff > 0:
            pods = claimed.pods
            assert pods is not None, "a surplus is claimed pod by pod"
            count = min(diff, BURST_REPLICAS)
            victims = pods_to_delete(pods, self._related_pods(rs), count, self._clock.now())
            self.expectations.expect(key, deletes=[object_key(p) for p in victims])
            results = await asyncio.gather(*(self._pod_control.delete(rs, p) for p in victims))
            return next((e for e in results if e is not None), None)
        return None

    def _related_pods(self, rs: Object) -> Iterator[Object]:
        """The pods matching the selector of any replica set with the same controller as `rs`
        (getIndirectlyRelatedPods), each once: none for a replica set of its own, whose
        surplus pods are then not ranked by node. Found as they are read: `pods_to_delete`
        reads them only when it has to rank."""
        owner = controller_ref(rs)
        if owner is None:
            return
        namespace = rs["metadata"]["namespace"]
        selectors = [
            selector
            for sibling in self._replica_sets.list(namespace)
            if (controller_ref(sibling) or {}).get("uid") == owner.get("uid")
            and (selector := self.pod_selector(sibling)) is not None
        ]
        for pod in self._pods.list(namespace):
            labels = pod["metadata"].get("labels") or {}
            if any(selector.matches(labels) for selector in selectors):
                yield pod

    async def _create_pod(self, rs: Object) -> None:
        await self._pod_control.create(
            rs, pod_from_template(rs["spec"].get("template") or {}, rs, self.OWNERS)
        )

    # --- status ------------------------------------------------------------------------------

    async def _update_status(self, rs: Object, claimed: Claimed, error: StatusError | None) -> None:
        min_ready = rs["spec"].get("minReadySeconds") or 0
        now = self._clock.now()
        status = clone(rs.get("status") or {})
        status["replicas"] = claimed.replicas
        status["fullyLabeledReplicas"] = claimed.fully_labeled
        status["readyReplicas"] = claimed.ready
        status["availableReplicas"] = claimed.available(min_ready, now)
        status["observedGeneration"] = rs["metadata"].get("generation", 0)
        conditions = status.get("conditions") or []
        failing = any(c["type"] == REPLICA_FAILURE for c in conditions)
        if error is None:
            conditions = [c for c in conditions if c["type"] != REPLICA_FAILURE]
        elif not failing:  # set once: a message naming each refused pod would churn status
            diff = claimed.replicas - (rs["spec"].get("replicas") or 0)
            conditions.append(
                {
                    "type": REPLICA_FAILURE,
                    "status": "True",
                    "lastTransitionTime": self._clock.now_rfc3339(),
                    "reason": "FailedCreate" if diff < 0 else "FailedDelete",
                    "message": str(error),
                }
            )
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
        for counter in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
            if not status[counter]:
                del status[counter]
        if status != (rs.get("status") or {}):
            updated = clone(rs)
            updated["status"] = status
            await self._requests.wait()
            try:
                await self._client.update_status_own(self.OWNERS, updated)
            except StatusError as e:
                if e.code == 404:
                    return
                raise
        if (
            min_ready
            and status.get("readyReplicas", 0) == status["replicas"]
            and status.get("availableReplicas", 0) != status["replicas"]
        ):
            self._queue.add_after(object_key(rs), min_ready)


async def _slow_start(
    count: int, create: Callable[[], Awaitable[None]]
) -> tuple[int, StatusError | None]:
    """Slow-start creations; an error that is not the API's is a bug and raised."""
    created, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
    if error is not None and not isinstance(error, StatusError):
        raise error
    return created, error


class ReplicationManager(ReplicaSetController):
    """The ReplicationController's controller: the ReplicaSet controller on another kind."""

    OWNER_KIND = "ReplicationController"
    OWNERS = REPLICATION_CONTROLLERS
    NAME = REPLICATION_CONTROLLER_NAME

    @staticmethod
    def pod_selector(owner: Object) -> LabelSelector | None:
        return selector_of(owner)
