"""PodLifeTime: pods (finished ones too) older than maxPodLifeTimeSeconds are evicted,
oldest first; with `states`, only pods in one of those phases, with that status reason
(`NodeAffinity`, `Shutdown` … of a pod the kubelet rejected) or with a container waiting for
one of those reasons (init and ephemeral containers when asked), as descheduler v0.32's
podlifetime plugin."""

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
    "Unknown",
    "NodeAffinity",
    "NodeLost",
    "Shutdown",
    "UnexpectedAdmissionError",
    "PodInitializing",
    "ContainerCreating",
    "ImagePullBackOff",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "ErrImagePull",
    "CreateContainerError",
    "InvalidImageName",
)


def in_states(
    pod: Object,
    states: tuple[str, ...],
    *,
    pod_reason: bool = False,
    init: bool = False,
    ephemeral: bool = False,
) -> bool:
    """The pod's phase (or, with `pod_reason`, its status reason), or the waiting reason of
    one of its containers (of its init or ephemeral containers too, if asked), is in
    `states`; any pod when there are none."""
    if not states:
        return True
    status = pod.get("status") or {}
    if status.get("phase") in states or (pod_reason and status.get("reason") in states):
        return True
    kinds = ["containerStatuses"]
    kinds += ["initContainerStatuses"] * init + ["ephemeralContainerStatuses"] * ephemeral
    return any(
        ((c.get("state") or {}).get("waiting") or {}).get("reason") in states
        for kind in kinds
        for c in status.get(kind) or []
    )


@dataclass(frozen=True)
class PodLifeTime:
    name: ClassVar[str] = "PodLifeTime"
    point: ClassVar[str] = DESCHEDULE
    max_seconds: int
    states: tuple[str, ...] = ()
    selection: PodSelection = ALL_PODS
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False

    @classmethod
    def from_args(cls, args: Args) -> PodLifeTime:
        seconds = args.integer("maxPodLifeTimeSeconds")
        if seconds is None:
            raise args.missing("maxPodLifeTimeSeconds")
        return cls(
            seconds,
            args.strings("states", STATES),
            PodSelection.read(args),
            args.boolean("includingInitContainers"),
            args.boolean("includingEphemeralContainers"),
        )

    def selects(self, pod: Object) -> bool:
        return self.selection.selects(pod) and in_states(
            pod,
            self.states,
            pod_reason=True,
            init=self.including_init_containers,
            ephemeral=self.including_ephemeral_containers,
        )

    async def run(self, ctx: Context) -> None:
        now = ctx.snapshot.now
        old: list[tuple[float, Object]] = []
        for node in ctx.snapshot.nodes:
            name = node["metadata"]["name"]
            for pod in ctx.evictable_pods_on(name, self.selects, finished=True):
                created = parse_time(pod["metadata"]["creationTimestamp"])
                # Whole seconds of age, as the plugin counts them.
                if int(now - created) > self.max_seconds:
                    old.append((created, pod))
        old.sort(key=lambda entry: entry[0])
        for created, pod in old:
            reason = f"running for {now - created:.0f}s, more than {self.max_seconds}s"
            try:
                await ctx.evict(pod, self.name, reason)
            except NodeLimitError:
                continue
