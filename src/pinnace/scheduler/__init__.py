"""kube-scheduler v1.32's framework and default plugins over a NumPy node table.

The core is pure and synchronous: `Scheduler` is fed informer events (`add_node`, `add_pod`,
...) and runs one cycle per `schedule_one()` call; `DefaultBinder` hands each Binding to a
callback; it never talks to the API or reads the wall clock. `adapter.SchedulerService` is the
kube-scheduler process around it: informers in, Bindings, events and pod conditions out,
through `pinnace.client`.
"""

from pinnace.scheduler.cache import Cache
from pinnace.scheduler.framework import (
    MAX_NODE_SCORE,
    Code,
    CycleState,
    NodePlugin,
    Status,
)
from pinnace.scheduler.nodetable import NodeInfo, NodeTable
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.queue import SchedulingQueue
from pinnace.scheduler.schedule_one import Scheduler, ScheduleResult

__all__ = [
    "MAX_NODE_SCORE",
    "Cache",
    "Code",
    "CycleState",
    "NodeInfo",
    "NodePlugin",
    "NodeTable",
    "PodInfo",
    "Profile",
    "ScheduleResult",
    "Scheduler",
    "SchedulingQueue",
    "Status",
]
