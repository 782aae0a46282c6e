"""The taint eviction controller: deletes pods from nodes with NoExecute taints they do not
tolerate, as v1.32's kube-controller-manager (pkg/controller/tainteviction) does.

A pod that does not tolerate every NoExecute taint of its node is deleted at once. One that
tolerates them all is deleted when the shortest tolerationSeconds among the tolerations used
runs out (counted from when the controller first saw it so, and kept when the taints change
while it tolerates them all, whatever their new toleration time); tolerations without
tolerationSeconds tolerate forever. A pod's scheduled deletion is cancelled when the taints go
or its tolerations come to cover them.
Before deleting, the controller marks the pod with the DisruptionTarget condition (reason
DeletionByTaintManager) and records a TaintManagerEviction event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, PatchType, object_key
from pinnace.client.interest import Changed, interest
from pinnace.clock import Timer
from pinnace.clock.component import HeldTasks, cancel_and_wait
from pinnace.controllers.controller_utils import POD_NODE_INDEX, pods_on_nodes
from pinnace.scheduling.taints import Toleration

log = logging.getLogger(__name__)

COMPONENT = "taint-eviction-controller"
NO_EXECUTE = "NoExecute"
EVICTION_REASON = "TaintManagerEviction"
DISRUPTION_TARGET = "DisruptionTarget"
DELETION_BY_TAINT_MANAGER = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")


def no_execute_taints(node: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
    taints = ((node or {}).get("spec") or {}).get("taints") or ()
    return [
        (t.get("key") or "", t.get("value") or "", t["effect"])
        for t in taints
        if t.get("effect") == NO_EXECUTE
    ]


UNTOLERATED = -1.0
"""What `toleration_time` says when a taint is not tolerated at all."""


def toleration_time(pod: Mapping[str, Any], taints: Iterable[tuple[str, str, str]]) -> float | None:
    """Seconds the pod may stay with these NoExecute taints: UNTOLERATED when one is not
    tolerated, None for ever (getMinTolerationTime over GetMatchingTolerations: for each taint,
    the first toleration that tolerates it, whatever the others that also would)."""
    tolerations = [
        (
            Toleration(
                t.get("key") or "",
                t.get("operator") or "",
                t.get("value") or "",
                t.get("effect") or "",
            ),
            t.get("tolerationSeconds"),
        )
        for t in (pod.get("spec") or {}).get("tolerations") or ()
    ]
    limits: list[float] = []
    for taint in taints:
        used = next((t for t in tolerations if t[0].tolerates(*taint)), None)
        if used is None:
            return UNTOLERATED
        if used[1] is not None:
            limits.append(max(float(used[1]), 0.0))
    return min(limits, default=None)


@dataclass
class _Scheduled:
    created_at: float
    fires_at: float
    timer: Timer


def _tolerations(pod: Object) -> Any:
    return pod["spec"].get("tolerations")


class TaintEvictionController:
    """`pods`: the informer on pods bound to nodes it shares (`pods_on_nodes`; its own when
    None)."""

    def __init__(self, client: Client, pods: Informer | None = None) -> None:
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, COMPONENT)
        self._nodes = Informer(client, NODES)
        self._pods = pods if pods is not None else pods_on_nodes(client)
        self._scheduled: dict[str, _Scheduled] = {}
        self._fired: set[str] = set()
        """Pods whose deletion was carried out: never scheduled again while they exist."""
        self._tasks = HeldTasks()

    async def start(self) -> None:
        self._nodes.add_event_handler(self._node_changed, self._node_updated, None)
        self._pods.add_event_handler(
            self._pod_changed,
            self._pod_updated,
            self._pod_deleted,
            interest=interest(Changed((_tolerations,))),  # of its updates, only these count
        )
        self._nodes.start()
        await self._nodes.wait_for_sync()
        self._pods.start()
        await self._pods.wait_for_sync()

    async def stop(self) -> None:
        await self._nodes.stop()
        await self._pods.stop()
        for scheduled in self._scheduled.values():
            scheduled.timer.cancel()
        self._scheduled.clear()
        await cancel_and_wait(self._tasks)

    def scheduled_deletions(self) -> dict[str, float]:
        """namespace/name -> when (clock seconds) each pending deletion is due."""
        return {key: s.fires_at for key, s in self._scheduled.items()}

    # --- handlers ------------------------------------------------------------------------------

    def _node_updated(self, old: Object, new: Object) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._node_changed(new)

    def _node_changed(self, node: Object) -> None:
        for pod in self._pods.by_index(POD_NODE_INDEX, node["metadata"]["name"]):
            self._process(pod, node)

    def _pod_updated(self, old: Object, new: Object) -> None:
        if _tolerations(old) != _tolerations(new):
            self._pod_changed(new)

    def _pod_changed(self, pod: Object) -> None:
        self._process(pod, self._nodes.get("", pod["spec"]["nodeName"]))

    def _pod_deleted(self, pod: Object) -> None:
        key = object_key(pod)
        self._fired.discard(key)
        self._cancel(key, pod)

    # --- decisions -----------------------------------------------------------------------------

    def _process(self, pod: Object, node: Object | None) -> None:
        """processPodOnNode: schedule, keep, move or cancel the pod's deletion."""
        key = object_key(pod)
        taints = no_execute_taints(node)
        if not taints:
            self._cancel(key, pod)
            return
        seconds = toleration_time(pod, taints)
        if seconds is None:
            self._cancel(key, pod)
            return
        if key in self._fired:
            return
        now = self._clock.now()
        scheduled = self._scheduled.get(key)
        if seconds == UNTOLERATED:
            self._cancel(key, pod)
            seconds = 0.0
        elif scheduled is not None:
            # As v1.32: a deletion scheduled earlier stands while the taints stay tolerated,
            # whatever the new toleration time (0 s included).
            if scheduled.created_at < now:
                return
            self._cancel(key, pod)
        timer = self._clock.call_at(now + seconds, self._fire, key)
        self._scheduled[key] = _Scheduled(now, now + seconds, timer)

    def _cancel(self, key: str, pod: Object) -> None:
        scheduled = self._scheduled.pop(key, None)
        if scheduled is None:
            return
        scheduled.timer.cancel()
        self._recorder.event(
            _reference(pod), EVENT_TYPE_NORMAL, EVICTION_REASON, f"Cancelling deletion of Pod {key}"
        )

    def _fire(self, key: str) -> None:
        self._scheduled.pop(key, None)
        self._fired.add(key)
        task = self._clock.loop.create_task(self._delete(key))
        self._tasks.hold(task)

    async def _delete(self, key: str) -> None:
        pod = self._pods.get_by_key(key)
        if pod is None:
            return
        m = pod["metadata"]
        self._recorder.event(
            _reference(pod), EVENT_TYPE_NORMAL, EVICTION_REASON, f"Marking for deletion Pod {key}"
        )
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": DELETION_BY_TAINT_MANAGER,
            "message": DISRUPTION_MESSAGE,
            "lastTransitionTime": self._clock.now_rfc3339(),
        }
        try:
            await self._client.patch(
                PODS,
                m["namespace"],
                m["name"],
                {"status": {"conditions": [condition]}},
                PatchType.STRATEGIC_MERGE,
                subresource="status",
            )
            await self._client.delete(PODS, m["namespace"], m["name"])
        except StatusError as e:
            if e.code != 404:
                self._fired.discard(key)  # its next change schedules it again
                log.warning("taint eviction of pod %s: %s", key, e.message)


def _reference(pod: Object) -> Object:
    """What the controller's events name: the pod's namespace and name, without its uid
    (emitPodDeletionEvent's ObjectReference)."""
    m = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": m["namespace"], "name": m["name"]},
    }
