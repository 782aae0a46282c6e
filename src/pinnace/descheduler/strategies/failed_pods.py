"""RemoveFailedPods: pods in phase Failed are evicted (deleted through the eviction API), if
their reason (the pod's, or a container's terminated or waiting reason; init containers too
with includingInitContainers) is one of `reasons` when given, a container's exit code one of
`exitCodes` when given, they are older than minPodLifetimeSeconds when given, and no owner is
of a kind in excludeOwnerKinds. Bare failed pods go only with the DefaultEvictor's
evictFailedBarePods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pinnace.api.objects import Object
from pinnace.clock.rfc3339 import parse_time
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context


@dataclass(frozen=True)
class RemoveFailedPods:
    name: ClassVar[str] = "RemoveFailedPods"
    point: ClassVar[str] = DESCHEDULE
    reasons: tuple[str, ...] = ()
    exclude_owner_kinds: tuple[str, ...] = ()
    including_init_containers: bool = False
    min_lifetime_seconds: int | None = None
    selection: PodSelection = ALL_PODS
    exit_codes: tuple[int, ...] = ()

    @classmethod
    def from_args(cls, args: Args) -> RemoveFailedPods:
        return cls(
            args.strings("reasons"),
            args.strings("excludeOwnerKinds"),
            args.boolean("includingInitContainers"),
            args.integer("minPodLifetimeSeconds"),
            PodSelection.read(args),
            args.integers("exitCodes"),
        )

    def _states(self, pod: Object) -> list[dict[str, Any]]:
        """The states of the pod's containers (and init containers, if asked)."""
        status = pod.get("status") or {}
        kinds = ["containerStatuses"] + ["initContainerStatuses"] * self.including_init_containers
        return [c.get("state") or {} for kind in kinds for c in status.get(kind) or []]

    def _reasons(self, pod: Object) -> set[str]:
        found = {(pod.get("status") or {}).get("reason", "")}
        for state in self._states(pod):
            for name in ("terminated", "waiting"):
                found.add((state.get(name) or {}).get("reason", ""))
        return found - {""}

    def _exit_codes(self, pod: Object) -> set[int]:
        return {
            int(state["terminated"].get("exitCode") or 0)
            for state in self._states(pod)
            if isinstance(state.get("terminated"), dict)
        }

    def _selects(self, pod: Object, now: float) -> bool:
        if (pod.get("status") or {}).get("phase") != "Failed" or not self.selection.selects(pod):
            return False
        owners = pod["metadata"].get("ownerReferences") or []
        if any(o.get("kind") in self.exclude_owner_kinds for o in owners):
            return False
        if self.min_lifetime_seconds is not None:
            age = int(now - parse_time(pod["metadata"]["creationTimestamp"]))  # whole seconds
            if age < self.min_lifetime_seconds:
                return False
        if self.exit_codes and not self._exit_codes(pod) & set(self.exit_codes):
            return False
        return not self.reasons or bool(self._reasons(pod) & set(self.reasons))

    async def run(self, ctx: Context) -> None:
        now = ctx.snapshot.now
        for node in ctx.snapshot.nodes:
            name = node["metadata"]["name"]
            pods = ctx.evictable_pods_on(name, lambda p: self._selects(p, now), finished=True)
            try:
                for pod in pods:
                    reasons = ", ".join(sorted(self._reasons(pod))) or "no reason given"
                    await ctx.evict(pod, self.name, f"pod failed ({reasons})")
            except NodeLimitError:
                continue
