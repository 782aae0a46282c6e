"""PodLifeTime: pods older than maxPodLifeTimeSeconds are evicted, oldest first; with
`states`, only pods in one of those phases or with a container waiting for one of those
reasons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import parse_time
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context

STATES = (
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Unknown",
    "PodInitializing",
    "ContainerCreating",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "ImagePullBackOff",
    "CreateContainerError",
    "InvalidImageName",
)


def in_states(pod: Object, states: tuple[str, ...]) -> bool:
    """The pod's phase, or a waiting reason of one of its containers, is in `states`."""
    if not states:
        return True
    status = pod.get("status") or {}
    if status.get("phase") in states:
        return True
    containers = (status.get("initContainerStatuses") or []) + (
        status.get("containerStatuses") or []
    )
    return any(
        ((c.get("state") or {}).get("waiting") or {}).get("reason") in states for c in containers
    )


@dataclass(frozen=True)
class PodLifeTime:
    name: ClassVar[str] = "PodLifeTime"
    point: ClassVar[str] = DESCHEDULE
    max_seconds: int
    states: tuple[str, ...] = ()
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> PodLifeTime:
        seconds = args.integer("maxPodLifeTimeSeconds")
        if seconds is None:
            raise args.missing("maxPodLifeTimeSeconds")
        return cls(seconds, args.strings("states", STATES), PodSelection.read(args))

    async def run(self, ctx: Context) -> None:
        now = ctx.snapshot.now
        old: list[tuple[float, Object]] = []
        for node in ctx.snapshot.nodes:
            for pod in ctx.evictable_pods_on(node["metadata"]["name"], self.selection.selects):
                created = parse_time(pod["metadata"]["creationTimestamp"])
                if now - created > self.max_seconds and in_states(pod, self.states):
                    old.append((created, pod))
        old.sort(key=lambda entry: entry[0])
        for created, pod in old:
            reason = f"running for {now - created:.0f}s, more than {self.max_seconds}s"
            try:
                await ctx.evict(pod, self.name, reason)
            except NodeLimitError:
                continue
