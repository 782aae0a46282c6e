"""SchedulingGates (pkg/scheduler/framework/plugins/schedulinggates): a pod with
spec.schedulingGates stays out of the active queue until they are all removed."""

from __future__ import annotations

from pinnace.scheduler.events import POD, UPDATE_POD_SCHEDULING_GATES_ELIMINATED, ClusterEvent
from pinnace.scheduler.framework import SUCCESS, Status, unresolvable
from pinnace.scheduler.podinfo import PodInfo


class SchedulingGates:
    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if not pod.scheduling_gates:
            return SUCCESS
        # Go's %v of a []string: [a b]
        return unresolvable(f"waiting for scheduling gates: [{' '.join(pod.scheduling_gates)}]")

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(POD, UPDATE_POD_SCHEDULING_GATES_ELIMINATED)]
