"""The DaemonSet controller: one pod of a DaemonSet's template on every node it fits, as
kube-controller-manager's (v1.32) pkg/controller/daemon.

A node is eligible when the daemon pod (the template plus the tolerations every daemon pod
gets) matches its name, nodeSelector and required node affinity and tolerates its NoSchedule
and NoExecute taints; a pod already there may stay while it tolerates the NoExecute ones.
Each sync claims the pods the selector matches (adopting orphans, releasing owned pods that
stop matching), then:

- manage: creates a pod for each eligible node without one, in slow-start batches, pinned to
  the node by a `metadata.name In [node]` node affinity term so the scheduler places it there;
  deletes pods on nodes that are no longer eligible, failed pods (paced by a per-node backoff)
  and succeeded ones, all but the oldest of several pods on one node, and unscheduled pods
  whose node is gone;
- RollingUpdate: replaces out-of-date pods within maxUnavailable, or with maxSurge beside
  them (daemonset_update); OnDelete leaves them until a user deletes them;
- status: desired, current, misscheduled, ready, updated, available and unavailable counts
  and observedGeneration.

Before all this, the DaemonSet's history is brought up to date (daemonset_history): one
ControllerRevision per pod template, the current one numbered highest, which `kubectl
rollout history|undo ds` read. Pods carry the current revision's `controller-revision-hash`
and the `pod-template-generation` labels; after the sync, old revisions beyond
revisionHistoryLimit that no pod runs are deleted.

Deleting a node also resyncs every DaemonSet (v1.32 waits for the pod garbage collector to
delete the node's pods): its unscheduled pods meant for the node go at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pinnace.api import catalog
from pinnace.api.apps.daemonset import EMPTY_STATUS, ROLLING_UPDATE, template_generation
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    Expectations,
    PodControl,
    WorkQueue,
    controller_ref,
    is_pod_available,
    is_pod_ready,
    pod_from_template,
    pod_owner_to_sync,
    slow_start_batch,
    write_status,
)
from pinnace.controllers.daemonset_history import DaemonSetHistory, hash_of
from pinnace.controllers.daemonset_update import rolling_update
from pinnace.controllers.daemonset_util import (
    CONTROLLER_REVISION_HASH,
    DaemonPlacement,
    FailedPodsBackoff,
    allows_surge,
    bind_to_node,
    create_pod_template,
    creation_order,
    is_pod_updated,
    target_node_name,
    template_generation_of,
)
from pinnace.controllers.ownership import (
    ControlledPodEvents,
    claim_candidates,
    claim_pods,
    index_pods_by_controller,
)

log = logging.getLogger(__name__)

BURST_REPLICAS = 250
"""At most this many creations or deletions per sync (the controller's burstReplicas)."""
CONTROLLER_NAME = "daemonset-controller"
FAILED_DAEMON_POD = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD = "SucceededDaemonPod"
STATUS_UPDATE_RETRIES = 1
_OMITTED_WHEN_ZERO = (
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
)


PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
DAEMON_SETS = catalog.kind("apps", "daemonsets")


def _true_conditions(node: Object) -> set[str]:
    return {
        c.get("type", "")
        for c in (node.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }


def _without_churn(node: Object) -> Object:
    """The node without what changes on every heartbeat: resourceVersion, conditions."""
    meta = {k: v for k, v in node["metadata"].items() if k != "resourceVersion"}
    status = {k: v for k, v in (node.get("status") or {}).items() if k != "conditions"}
    return {**node, "metadata": meta, "status": status}


def _ignore_node_update(old: Object, new: Object) -> bool:
    """shouldIgnoreNodeUpdate: the same conditions hold and nothing else changed."""
    return _true_conditions(old) == _true_conditions(new) and _without_churn(old) == _without_churn(
        new
    )


class DaemonSetController(ControlledPodEvents):
    OWNER_KIND = "DaemonSet"

    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock)
        self.expectations = Expectations(self._clock)
        self._pod_control = PodControl(client, self._recorder, self.expectations)
        self.failed_pods_backoff = FailedPodsBackoff()
        self._placements: dict[str, tuple[int, DaemonPlacement]] = {}
        self._daemon_sets: Informer = informers.informer(DAEMON_SETS)
        self._pods: Informer = informers.informer(PODS)
        index_pods_by_controller(self._pods)
        self._nodes: Informer = informers.informer(NODES)
        self._history = DaemonSetHistory(client, informers)
        self._daemon_sets.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._daemon_set_deleted,
        )
        self._watch_pods(self._pods)
        self._nodes.add_event_handler(
            on_add=self._node_added, on_update=self._node_updated, on_delete=self._node_deleted
        )
        self._history.informer.add_event_handler(
            on_add=self._revision_changed,
            on_update=lambda old, new: self._revision_changed(new),
            on_delete=self._revision_changed,
        )

    @property
    def owners(self) -> Informer:
        return self._daemon_sets

    async def run(self) -> None:
        """Sync daemon sets forever; cancel the task to stop."""
        for informer in (self._daemon_sets, self._pods, self._nodes, self._history.informer):
            await informer.wait_for_sync()
        await self._queue.run(self.sync)

    def placement(self, ds: Object) -> DaemonPlacement:
        """The DaemonSet's NodeShouldRunDaemonPod, kept while its template stays the same."""
        uid, generation = ds["metadata"]["uid"], template_generation(ds)
        cached = self._placements.get(uid)
        if cached is None or cached[0] != generation:
            cached = self._placements[uid] = (generation, DaemonPlacement.of(ds))
        return cached[1]

    # --- event handlers ----------------------------------------------------------------------

    def _daemon_set_deleted(self, ds: Object) -> None:
        self._placements.pop(ds["metadata"]["uid"], None)
        self._enqueue(ds)

    def _revision_changed(self, revision: Object) -> None:
        """A revision of a DaemonSet changed (its owner looks again) or an orphan did (the
        DaemonSets that may adopt it do)."""
        if controller_ref(revision) is None:
            self._enqueue_matching(revision)
            return
        ds = self._owner(revision)
        if ds is not None:
            self._enqueue(ds)

    def _node_added(self, node: Object) -> None:
        for ds in self._daemon_sets.list():
            if self.placement(ds).should_run(node)[0]:
                self._enqueue(ds)

    def _node_updated(self, old: Object, new: Object) -> None:
        daemon_sets = self._daemon_sets.list()
        if not daemon_sets or _ignore_node_update(old, new):
            return
        for ds in daemon_sets:
            placement = self.placement(ds)
            if placement.should_run(old) != placement.should_run(new):
                self._enqueue(ds)

    def _node_deleted(self, node: Object) -> None:
        for ds in self._daemon_sets.list():
            self._enqueue(ds)

    # --- sync --------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        found = pod_owner_to_sync(key, self._daemon_sets, self.expectations)
        if found is None:
            return
        ds, selector = found
        if ds["metadata"].get("deletionTimestamp"):
            return  # its pods are the garbage collector's; its status no longer means much

        async def claimed_pods() -> list[Object]:
            return await self._claim(ds, selector)

        current, old = await self._history.construct(ds, claimed_pods)
        hash_ = hash_of(current)
        if not self.expectations.satisfied(key):
            await self._update_status(ds, selector, hash_, observed=False)
            return
        error: StatusError | None = None
        try:
            await self._manage(ds, selector, hash_)
            strategy = (ds["spec"].get("updateStrategy") or {}).get("type")
            if self.expectations.satisfied(key) and strategy == ROLLING_UPDATE:
                await self._rolling_update(ds, selector, hash_)
            await self._history.cleanup(ds, old, claimed_pods)
        except StatusError as e:
            error = e
        await self._update_status(ds, selector, hash_, observed=True)
        if error is not None:
            raise error  # retried with backoff

    async def _node_to_daemon_pods(
        self, ds: Object, selector: LabelSelector
    ) -> dict[str, list[Object]]:
        """The pods the DaemonSet owns once claimed, by the node each runs on or is meant for
        (getNodesToDaemonPods); finished pods being deleted are left out."""
        result: dict[str, list[Object]] = {}
        for pod in await self._claim(ds, selector):
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") and pod["metadata"].get("deletionTimestamp"):
                continue
            node = target_node_name(pod)
            if node is not None:
                result.setdefault(node, []).append(pod)
        return result

    async def _claim(self, ds: Object, selector: LabelSelector) -> list[Object]:
        """ClaimPods: the pods this DaemonSet owns and its selector matches, adopting matching
        orphans and releasing owned pods that no longer match."""
        candidates = claim_candidates(self._pods, ds)
        return await claim_pods(self._client, ds, DAEMON_SETS, selector, candidates)

    # --- manage ------------------------------------------------------------------------------

    async def _manage(self, ds: Object, selector: LabelSelector, hash_: str) -> None:
        node_to_pods = await self._node_to_daemon_pods(ds, selector)
        nodes = self._nodes.list()
        placement, surge = self.placement(ds), allows_surge(ds)
        create: list[str] = []
        delete: list[Object] = []
        for node in nodes:
            should_run = placement.should_run(node)
            pods = node_to_pods.get(node["metadata"]["name"])
            c, d = self._pods_should_be_on_node(ds, node, should_run, pods, surge, hash_)
            create += c
            delete += d
        existing = {node["metadata"]["name"] for node in nodes}
        for name, pods in node_to_pods.items():
            if name not in existing:  # never to be scheduled: its node is gone
                delete += [p for p in pods if not p["spec"].get("nodeName")]
        await self._sync_nodes(ds, delete, create, hash_)

    def _pods_should_be_on_node(
        self,
        ds: Object,
        node: Object,
        eligibility: tuple[bool, bool],
        pods: list[Object] | None,
        surge: bool,
        hash_: str,
    ) -> tuple[list[str], list[Object]]:
        """podsShouldBeOnNode: the node if it needs a pod, and the pods to delete on it.
        `eligibility` is (shouldRun, shouldContinueRunning); `pods` those meant for the node."""
        name = node["metadata"]["name"]
        should_run, should_continue = eligibility
        if should_run and pods is None:
            return [name], []
        if not should_continue:
            return [], [p for p in pods or () if not p["metadata"].get("deletionTimestamp")]
        delete: list[Object] = []
        running: list[Object] = []
        for pod in pods or ():
            if pod["metadata"].get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                if self._failed_pod_in_backoff(ds, name):
                    continue
                self._pod_event(ds, pod, name, EVENT_TYPE_WARNING, FAILED_DAEMON_POD)
                delete.append(pod)
            elif phase == "Succeeded":
                self._pod_event(ds, pod, name, EVENT_TYPE_NORMAL, SUCCEEDED_DAEMON_POD)
                delete.append(pod)
            else:
                running.append(pod)
        if len(running) > 1:
            running.sort(key=creation_order)
        if not surge:
            return [], delete + running[1:]  # keep the oldest
        if not running:
            return ([name] if should_run else []), delete
        return [], delete + self._surplus_when_surging(ds, running, hash_)

    def _surplus_when_surging(self, ds: Object, running: list[Object], hash_: str) -> list[Object]:
        """With surge, an old and a new pod may share the node while the new one is not yet
        available and the old one is ready; every other pod goes."""
        surplus: list[Object] = []
        oldest_new = oldest_old = None
        for pod in running:
            is_new = (pod["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH) == hash_
            if is_new and oldest_new is None:
                oldest_new = pod
            elif not is_new and oldest_old is None:
                oldest_old = pod
            else:
                surplus.append(pod)
        if oldest_new is not None and oldest_old is not None:
            min_ready = ds["spec"].get("minReadySeconds") or 0
            if not is_pod_ready(oldest_old) or is_pod_available(
                oldest_new, min_ready, self._clock.now()
            ):
                surplus.append(oldest_old)
        return surplus

    def _failed_pod_in_backoff(self, ds: Object, node: str) -> bool:
        """A failed pod is deleted at most once per backoff period on a node (the kubelet may
        keep refusing it); while it waits, the DaemonSet is synced again when it ends."""
        observed = (ds.get("status") or {}).get("observedGeneration", 0)
        key = f"{ds['metadata']['uid']}/{observed}/{node}"
        now = self._clock.monotonic()
        if self.failed_pods_backoff.in_backoff(key, now):
            self._queue.add_after(object_key(ds), self.failed_pods_backoff.delay(key))
            return True
        self.failed_pods_backoff.next(key, now)
        return False

    def _pod_event(self, ds: Object, pod: Object, node: str, event_type: str, reason: str) -> None:
        pod_name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        if reason == FAILED_DAEMON_POD:
            message = f"Found failed daemon pod {pod_name} on node {node}, will try to kill it"
        else:
            message = f"Found succeeded daemon pod {pod_name} on node {node}, will try to delete it"
        self._recorder.event(ds, event_type, reason, message)

    async def _sync_nodes(
        self, ds: Object, delete: list[Object], create: list[str], hash_: str
    ) -> None:
        """Create a pod on each node of `create` and delete the pods of `delete`, at most
        BURST_REPLICAS of each, raising the first API error once all are done."""
        key = object_key(ds)
        create, delete = create[:BURST_REPLICAS], delete[:BURST_REPLICAS]
        self.expectations.expect(key, adds=len(create), deletes=[object_key(p) for p in delete])
        template = create_pod_template(
            ds["spec"].get("template") or {}, template_generation_of(ds), hash_
        )
        nodes = iter(create)

        async def create_next() -> None:
            await self._create_pod(ds, template, next(nodes))

        created, error = await slow_start_batch(
            len(create), SLOW_START_INITIAL_BATCH_SIZE, create_next
        )
        for _ in range(len(create) - created):
            self.expectations.creation_observed(key)
        if error is not None and not isinstance(error, StatusError):
            raise error
        results = await asyncio.gather(*(self._pod_control.delete(ds, p) for p in delete))
        error = error or next((e for e in results if e is not None), None)
        if error is not None:
            raise error

    async def _create_pod(self, ds: Object, template: Object, node: str) -> None:
        pod = pod_from_template(template, ds, DAEMON_SETS)
        pod["spec"] = clone(pod["spec"])
        bind_to_node(pod["spec"], node)
        await self._pod_control.create(ds, pod)

    # --- rolling update ----------------------------------------------------------------------

    async def _rolling_update(self, ds: Object, selector: LabelSelector, hash_: str) -> None:
        node_to_pods = await self._node_to_daemon_pods(ds, selector)
        plan = rolling_update(
            ds, self._nodes.list(), node_to_pods, self.placement(ds), hash_, self._clock.now()
        )
        by_name = {p["metadata"]["name"]: p for pods in node_to_pods.values() for p in pods}
        await self._sync_nodes(ds, [by_name[n] for n in plan.delete], plan.create, hash_)

    # --- status ------------------------------------------------------------------------------

    async def _update_status(
        self, ds: Object, selector: LabelSelector, hash_: str, observed: bool
    ) -> None:
        node_to_pods = await self._node_to_daemon_pods(ds, selector)
        placement = self.placement(ds)
        generation = template_generation_of(ds)
        min_ready = ds["spec"].get("minReadySeconds") or 0
        now = self._clock.now()
        counts = dict.fromkeys(
            (
                "desiredNumberScheduled",
                "currentNumberScheduled",
                "numberMisscheduled",
                "numberReady",
                "updatedNumberScheduled",
                "numberAvailable",
            ),
            0,
        )
        for node in self._nodes.list():
            should_run = placement.should_run(node)[0]
            pods = node_to_pods.get(node["metadata"]["name"])
            if not should_run:
                counts["numberMisscheduled"] += bool(pods)
                continue
            counts["desiredNumberScheduled"] += 1
            if not pods:
                continue
            counts["currentNumberScheduled"] += 1
            pod = pods[0] if len(pods) == 1 else min(pods, key=creation_order)
            if is_pod_ready(pod):
                counts["numberReady"] += 1
                counts["numberAvailable"] += is_pod_available(pod, min_ready, now)
            counts["updatedNumberScheduled"] += is_pod_updated(pod, hash_, generation)
        counts["numberUnavailable"] = counts["desiredNumberScheduled"] - counts["numberAvailable"]
        await self._store_status(ds, counts, observed)
        if min_ready and counts["numberReady"] != counts["numberAvailable"]:
            self._queue.add_after(object_key(ds), min_ready)

    async def _store_status(self, ds: Object, counts: dict[str, int], observed: bool) -> None:
        """storeDaemonSetStatus: write the counts (and observedGeneration) when they changed,
        reading the DaemonSet again once on a conflict."""
        generation = ds["metadata"].get("generation", 0)
        current = ds.get("status") or {}
        if (
            all(current.get(k, 0) == v for k, v in counts.items())
            and current.get("observedGeneration", 0) >= generation
        ):
            return

        def status_for(target: Object) -> Object | None:
            status = _status(target.get("status"), counts, generation, observed)
            return None if status == (target.get("status") or {}) else status

        await write_status(self._client, DAEMON_SETS, ds, status_for, STATUS_UPDATE_RETRIES)


def _status(current: Any, counts: dict[str, int], generation: int, observed: bool) -> Object:
    """The status with `counts`, the zero counters apps/v1 omits left out."""
    status: Object = {**EMPTY_STATUS, **(current or {}), **counts}
    if observed:
        status["observedGeneration"] = generation
    for name in _OMITTED_WHEN_ZERO:
        if not status.get(name):
            status.pop(name, None)
    return status
