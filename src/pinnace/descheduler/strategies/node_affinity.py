"""RemovePodsViolatingNodeAffinity: a pod whose node no longer satisfies its required node
affinity (or node selector) is evicted when another node does; with
preferredDuringSchedulingIgnoredDuringExecution, a pod is evicted when a node it fits on
satisfies more of its preferred terms' weight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from pinnace.api.field import Path
from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context
from pinnace.scheduling.nodeaffinity import NodeSelectorTerm, RequiredNodeAffinity

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class RemovePodsViolatingNodeAffinity:
    name: ClassVar[str] = "RemovePodsViolatingNodeAffinity"
    point: ClassVar[str] = DESCHEDULE
    types: tuple[str, ...]
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> RemovePodsViolatingNodeAffinity:
        types = args.strings("nodeAffinityType", (REQUIRED, PREFERRED))
        if not types:
            raise args.fail("nodeAffinityType", [], "at least one node affinity type is needed")
        return cls(types, PodSelection.read(args))

    async def run(self, ctx: Context) -> None:
        for node in ctx.snapshot.nodes:
            name = node["metadata"]["name"]
            labels = node["metadata"].get("labels") or {}
            try:
                for pod in ctx.evictable_pods_on(name, self.selection.selects):
                    reason = self._violation(ctx, pod, name, labels)
                    if reason:
                        await ctx.evict(pod, self.name, reason)
            except NodeLimitError:
                continue

    def _violation(self, ctx: Context, pod: Object, node: str, labels: Mapping[str, str]) -> str:
        table = ctx.snapshot.table
        feasible = ctx.snapshot.feasible(pod)
        if REQUIRED in self.types:
            matches = RequiredNodeAffinity(pod["spec"]).matches(labels, node)
            if not matches and feasible.any():
                return "the node no longer satisfies the pod's required node affinity"
        if PREFERRED in self.types:
            here = _preferred_weight(pod, labels, node)
            best = max(
                (
                    _preferred_weight(pod, table.labels[i], n)
                    for i, n in enumerate(table.names)
                    if feasible[i]
                ),
                default=0,
            )
            if best > here:
                return f"another node satisfies more preferred node affinity ({best} > {here})"
        return ""


_PATH = Path("spec", "affinity", "nodeAffinity", PREFERRED)


def _preferred_weight(pod: Object, labels: Mapping[str, str], node: str) -> int:
    """The summed weight of the pod's preferred node affinity terms the node satisfies."""
    affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    terms = affinity.get(PREFERRED) or []
    return sum(
        int(t.get("weight") or 0)
        for i, t in enumerate(terms)
        if NodeSelectorTerm.parse(t.get("preference") or {}, _PATH.index(i)).matches(labels, node)
    )
