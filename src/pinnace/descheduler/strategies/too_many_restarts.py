"""RemovePodsHavingTooManyRestarts: a pod whose containers restarted podRestartThreshold
times or more in all (init containers too with includingInitContainers) is evicted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context
from pinnace.descheduler.strategies.pod_lifetime import in_states

STATES = ("Running", "CrashLoopBackOff")


@dataclass(frozen=True)
class RemovePodsHavingTooManyRestarts:
    name: ClassVar[str] = "RemovePodsHavingTooManyRestarts"
    point: ClassVar[str] = DESCHEDULE
    threshold: int
    including_init_containers: bool = False
    states: tuple[str, ...] = ()
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> RemovePodsHavingTooManyRestarts:
        threshold = args.integer("podRestartThreshold", minimum=1)
        if threshold is None:
            raise args.missing("podRestartThreshold")
        return cls(
            threshold,
            args.boolean("includingInitContainers"),
            args.strings("states", STATES),
            PodSelection.read(args),
        )

    def restarts(self, pod: Object) -> int:
        status = pod.get("status") or {}
        kinds = ["containerStatuses"]
        if self.including_init_containers:
            kinds.append("initContainerStatuses")
        return sum(int(c.get("restartCount") or 0) for k in kinds for c in status.get(k) or [])

    async def run(self, ctx: Context) -> None:
        for node in ctx.snapshot.nodes:
            name = node["metadata"]["name"]
            try:
                for pod in ctx.evictable_pods_on(name, self.selection.selects):
                    restarts = self.restarts(pod)
                    states = in_states(pod, self.states, init=self.including_init_containers)
                    if restarts >= self.threshold and states:
                        reason = f"{restarts} restarts, threshold {self.threshold}"
                        await ctx.evict(pod, self.name, reason)
            except NodeLimitError:
                continue
