"""The disruption controller's clean-up of stale DisruptionTarget conditions, as
kube-controller-manager's (v1.32, pkg/controller/disruption: syncStalePodDisruption).

Whoever is about to delete a pod for a disruption (the eviction API, the taint-eviction
controller, the pod garbage collector, the scheduler's preemption) first marks it with the
condition DisruptionTarget True. When the delete does not follow, the condition would say so for
ever: two minutes after its transition, on a pod that is still not being deleted nor finished,
the controller sets it to False (with no reason or message, as podutil.UpdatePodCondition
leaves it). The kubelet's own mark (reason TerminationByKubelet) is never stale: its pod may
take arbitrarily long to terminate.
"""

from __future__ import annotations

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer, object_key
from pinnace.client.interest import Fact, interest
from pinnace.clock.rfc3339 import format_time, parse_time
from pinnace.controllers.controller_utils import WorkQueue, split_key

STALE_POD_DISRUPTION_TIMEOUT = 2 * 60.0
DISRUPTION_TARGET = "DisruptionTarget"
TERMINATION_BY_KUBELET = "TerminationByKubelet"

PODS = catalog.kind("", "pods")


def _disruption_target(pod: Object) -> Object | None:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == DISRUPTION_TARGET), None)


class StalePodDisruptions:
    """Pods whose DisruptionTarget condition may go stale, each looked at again when it would."""

    def __init__(self, client: Client, pods: Informer) -> None:
        self._client = client
        self._clock = client.clock
        self._pods = pods
        self._queue = WorkQueue(self._clock)
        pods.add_event_handler(
            on_add=self._pod_changed,
            on_update=lambda old, new: self._pod_changed(new),
            interest=interest(Fact(_disruption_target)),
        )

    async def run(self) -> None:
        await self._queue.run(self.sync)

    def _stale_after(self, pod: Object) -> float | None:
        """nonTerminatingPodHasStaleDisruptionCondition: seconds until the pod's condition is
        stale (0: it is), or None when it cannot be."""
        if pod["metadata"].get("deletionTimestamp"):
            return None
        condition = _disruption_target(pod)
        if (
            condition is None
            or condition.get("status") != "True"
            or condition.get("reason") == TERMINATION_BY_KUBELET
            or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ):
            return None
        since = self._clock.now() - parse_time(condition.get("lastTransitionTime") or "")
        return max(STALE_POD_DISRUPTION_TIMEOUT - since, 0.0)

    def _pod_changed(self, pod: Object) -> None:
        wait = self._stale_after(pod)
        if wait is not None:
            self._queue.add_after(object_key(pod), wait)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self._pods.get(namespace, name)
        if pod is None:
            return
        wait = self._stale_after(pod)
        if wait is None:
            return
        if wait > 0:
            self._queue.add_after(key, wait)
            return
        updated = clone(pod)
        for condition in updated["status"]["conditions"]:
            if condition.get("type") == DISRUPTION_TARGET:
                condition.clear()
                condition.update(
                    type=DISRUPTION_TARGET,
                    status="False",
                    lastProbeTime=None,
                    lastTransitionTime=format_time(self._clock.now()),
                )
        try:
            await self._client.update_status(PODS, updated)
        except StatusError as e:
            if e.code != 404:
                raise
