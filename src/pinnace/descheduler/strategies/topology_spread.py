"""RemovePodsViolatingTopologySpreadConstraint: for every constraint the pods of a namespace
declare (DoNotSchedule; ScheduleAnyway too when listed in `constraints`), the matching pods
are counted per topology domain, and pods are evicted from the fullest domains until no two
domains differ by more than maxSkew (moving at most half the excess at a time, as the
descheduler's balanceDomains)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pinnace.api.labels import selector_from_dict
from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_PODS, Args, PodSelection
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import BALANCE, Context, priority

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
Constraint = tuple[str, int, str, str]  # namespace, maxSkew, topologyKey, selector (repr)


@dataclass(frozen=True)
class RemovePodsViolatingTopologySpreadConstraint:
    name: ClassVar[str] = "RemovePodsViolatingTopologySpreadConstraint"
    point: ClassVar[str] = BALANCE
    constraints: tuple[str, ...] = (DO_NOT_SCHEDULE,)
    topology_balance_node_fit: bool = True
    selection: PodSelection = ALL_PODS

    @classmethod
    def from_args(cls, args: Args) -> RemovePodsViolatingTopologySpreadConstraint:
        constraints = args.strings("constraints", (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY))
        if args.boolean("includeSoftConstraints"):
            constraints = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
        return cls(
            constraints or (DO_NOT_SCHEDULE,),
            args.boolean("topologyBalanceNodeFit", True),
            PodSelection.read(args),
        )

    async def run(self, ctx: Context) -> None:
        pods = ctx.snapshot.active_pods()
        seen: dict[Constraint, Mapping[str, Any]] = {}
        for pod in pods:
            if not self.selection.namespaces.allows(pod["metadata"]["namespace"]):
                continue
            for c in pod["spec"].get("topologySpreadConstraints") or []:
                if c.get("whenUnsatisfiable", DO_NOT_SCHEDULE) not in self.constraints:
                    continue
                key = (
                    pod["metadata"]["namespace"],
                    int(c.get("maxSkew") or 1),
                    c.get("topologyKey", ""),
                    repr(c.get("labelSelector")),
                )
                seen.setdefault(key, c)
        for key, c in seen.items():
            try:
                await self._balance(ctx, pods, key, c)
            except NodeLimitError:
                continue

    async def _balance(
        self, ctx: Context, pods: list[Object], key: Constraint, spec: Mapping[str, Any]
    ) -> None:
        namespace, max_skew, topology_key, _ = key
        try:
            selector = selector_from_dict(spec.get("labelSelector"))
        except ValueError:
            return
        table = ctx.snapshot.table
        domains: dict[str, list[Object]] = {}
        for labels in table.labels:
            if topology_key in labels:
                domains.setdefault(labels[topology_key], [])
        for pod in pods:
            meta = pod["metadata"]
            if meta["namespace"] != namespace or not selector.matches(meta.get("labels") or {}):
                continue
            value = table.labels[table.index[pod["spec"]["nodeName"]]].get(topology_key)
            if value is not None:
                domains[value].append(pod)
        if len(domains) < 2:
            return
        total = sum(len(p) for p in domains.values())
        ideal = total / len(domains)

        def last_to_go(pod: Object) -> tuple[bool, int]:
            # Pods that may not be evicted first, then by priority high to low: evict from the end.
            return (ctx.evictor.evictable(pod), -priority(pod))

        ordered = sorted((sorted(p, key=last_to_go) for p in domains.values()), key=len)
        evict: list[Object] = []
        i, j = 0, len(ordered) - 1
        while i < j:
            low, high = ordered[i], ordered[j]
            if len(low) >= ideal:
                i += 1
                continue
            if len(high) <= ideal:
                j -= 1
                continue
            skew = len(high) - len(low)
            if skew <= max_skew:
                j -= 1
                continue
            above = math.ceil(len(high) - ideal)
            below = math.ceil(ideal - len(low))
            move = int(min(above, below, math.ceil((skew - max_skew) / 2)))
            if move <= 0:
                i += 1
                continue
            moved = high[len(high) - move :]
            del high[len(high) - move :]
            low.extend(moved)
            for pod in moved:
                if self.topology_balance_node_fit and not ctx.snapshot.fits_other_node(pod):
                    continue
                evict.append(pod)
        reason = f"{topology_key} domains differ by more than maxSkew {max_skew}"
        for pod in evict:
            if self.selection.selects(pod) and ctx.evictable(pod):
                await ctx.evict(pod, self.name, reason)
