"""RemovePodsViolatingNodeTaints: a pod on a node with a NoSchedule taint (PreferNoSchedule
too with includePreferNoSchedule) it does not tolerate is evicted. Taints named in
excludedTaints (`key` or `key=value`) are ignored; with includedTaints only those count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context
from pinnace.scheduling.taints import PREFER_NO_SCHEDULE, Taint, first_untolerated, pod_tolerations


def _named(taint: Taint, names: tuple[str, ...]) -> bool:
    return taint.key in names or f"{taint.key}={taint.value}" in names


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaints:
    name: ClassVar[str] = "RemovePodsViolatingNodeTaints"
    point: ClassVar[str] = DESCHEDULE
    excluded: tuple[str, ...] = ()
    included: tuple[str, ...] = ()
    include_prefer_no_schedule: bool = False
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> RemovePodsViolatingNodeTaints:
        excluded, included = args.strings("excludedTaints"), args.strings("includedTaints")
        if excluded and included:
            raise args.forbidden("either includedTaints or excludedTaints can be set")
        return cls(
            excluded, included, args.boolean("includePreferNoSchedule"), PodSelection.read(args)
        )

    def _counts(self, taint: Taint) -> bool:
        effects = (
            ("NoSchedule", PREFER_NO_SCHEDULE)
            if self.include_prefer_no_schedule
            else ("NoSchedule",)
        )
        if taint.effect not in effects or _named(taint, self.excluded):
            return False
        return not self.included or _named(taint, self.included)

    async def run(self, ctx: Context) -> None:
        table = ctx.snapshot.table
        for i, name in enumerate(table.names):
            taints = [t for t in table.taints[i] if self._counts(t)]
            if not taints:
                continue
            try:
                for pod in ctx.evictable_pods_on(name, self.selection.selects):
                    taint = first_untolerated(taints, pod_tolerations(pod["spec"]))
                    if taint is not None:
                        shown = f"{taint.key}={taint.value}:{taint.effect}"
                        await ctx.evict(pod, self.name, f"untolerated taint {shown}")
            except NodeLimitError:
                continue
