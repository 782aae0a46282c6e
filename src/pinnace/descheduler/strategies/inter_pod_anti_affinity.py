"""RemovePodsViolatingInterPodAntiAffinity: a pod whose required anti-affinity selects another
pod in the same topology domain is evicted (lowest priority first, node by node); once it is
evicted the pods it conflicted with no longer count it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import DESCHEDULE, Context, low_priority_first
from pinnace.descheduler.snapshot import Snapshot
from pinnace.scheduler.plugins.pod_affinity_terms import pod_affinity_terms
from pinnace.scheduler.podinfo import PodInfo


def _conflict(pod: Object, others: list[Object], snapshot: Snapshot) -> Object | None:
    """The first other pod the pod's required anti-affinity rejects in its domain."""
    terms = pod_affinity_terms(PodInfo.from_pod(pod)).required_anti_affinity
    if not terms:
        return None
    table = snapshot.table
    here = table.labels[table.index[pod["spec"]["nodeName"]]]
    for term in terms:
        if term.topology_key not in here:
            continue
        for other in others:
            if other is pod:
                continue
            i = table.index.get(other["spec"].get("nodeName", ""))
            if i is None or table.labels[i].get(term.topology_key) != here[term.topology_key]:
                continue
            meta = other["metadata"]
            if term.matches(meta["namespace"], meta.get("labels") or {}, {}):
                return other
    return None


@dataclass(frozen=True)
class RemovePodsViolatingInterPodAntiAffinity:
    name: ClassVar[str] = "RemovePodsViolatingInterPodAntiAffinity"
    point: ClassVar[str] = DESCHEDULE
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> RemovePodsViolatingInterPodAntiAffinity:
        return cls(PodSelection.read(args))

    async def run(self, ctx: Context) -> None:
        remaining = ctx.snapshot.active_pods()
        for name in ctx.snapshot.table.names:
            try:
                for pod in low_priority_first(ctx.evictable_pods_on(name, self.selection.selects)):
                    other = _conflict(pod, remaining, ctx.snapshot)
                    if other is None:
                        continue
                    reason = f"anti-affinity rejects pod {other['metadata']['name']} in its domain"
                    if await ctx.evict(pod, self.name, reason):
                        remaining.remove(pod)
            except NodeLimitError:
                continue
