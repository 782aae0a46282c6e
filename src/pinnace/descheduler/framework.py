"""What a descheduling plugin sees: the cycle's snapshot, the profile's evictor rules, and
the evictions made so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from pinnace.api.objects import Object
from pinnace.descheduler.args import Args
from pinnace.descheduler.evictor import DefaultEvictor, PodEvictor
from pinnace.descheduler.snapshot import Snapshot
from pinnace.resources.qos import BEST_EFFORT, BURSTABLE, qos_class

DESCHEDULE = "deschedule"
BALANCE = "balance"


@dataclass
class Context:
    snapshot: Snapshot
    evictor: DefaultEvictor
    pod_evictor: PodEvictor

    def evictable_pods_on(
        self, node: str, selects: Callable[[Object], bool] | None = None, finished: bool = False
    ) -> list[Object]:
        """The pods on `node` the evictor may evict (and `selects` picks), not yet evicted."""
        return [
            p
            for p in self.snapshot.pods_on(node, finished)
            if not self.pod_evictor.evicted(p)
            and (selects is None or selects(p))
            and self.evictable(p)
        ]

    def evictable(self, pod: Object) -> bool:
        """The evictor's checks allow evicting `pod`; when they do not, the cycle reports why."""
        reason = self.evictor.unevictable(pod)
        if reason:
            self.pod_evictor.hold_back(pod, reason)
        return not reason

    def note(self, strategy: str, text: str) -> None:
        """Why `strategy` did nothing this cycle, for the report."""
        self.pod_evictor.notes.setdefault(f"{strategy}: {text}")

    async def evict(self, pod: Object, strategy: str, reason: str) -> bool:
        return await self.pod_evictor.evict(self.evictor, pod, strategy, reason)


class Strategy(Protocol):
    name: ClassVar[str]
    point: ClassVar[str]
    """DESCHEDULE (pods one by one) or BALANCE (pods as groups)."""

    @classmethod
    def from_args(cls, args: Args) -> Strategy: ...

    async def run(self, ctx: Context) -> None: ...


_QOS_RANK = {BEST_EFFORT: 0, BURSTABLE: 1}


def priority(pod: Object) -> int:
    return int(pod["spec"].get("priority") or 0)


def low_priority_first(pods: list[Object]) -> list[Object]:
    """SortPodsBasedOnPriorityLowToHigh: by priority, then BestEffort, Burstable, Guaranteed."""
    return sorted(pods, key=lambda p: (priority(p), _QOS_RANK.get(qos_class(p), 2)))
