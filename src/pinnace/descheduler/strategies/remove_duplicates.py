"""RemoveDuplicates: pods of one owner with the same images that share a node are spread out.
For each owner, pods above ceil(owner's pods / nodes the pods may run on) on one node are
evicted, so the scheduler places them on other nodes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_NAMESPACES, Args, Namespaces
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import BALANCE, Context
from pinnace.scheduling.nodeaffinity import RequiredNodeAffinity
from pinnace.scheduling.taints import Taint, Toleration, first_untolerated, pod_tolerations

OwnerKey = tuple[str, str, str, str]  # namespace, owner kind, owner name, images


@dataclass(frozen=True)
class RemoveDuplicates:
    name: ClassVar[str] = "RemoveDuplicates"
    point: ClassVar[str] = BALANCE
    exclude_owner_kinds: tuple[str, ...] = ()
    namespaces: Namespaces = ALL_NAMESPACES

    @classmethod
    def from_args(cls, args: Args) -> RemoveDuplicates:
        return cls(args.strings("excludeOwnerKinds"), args.namespaces())

    def _keys(self, pod: Object) -> tuple[OwnerKey, ...]:
        owners = pod["metadata"].get("ownerReferences") or []
        if not owners or any(o.get("kind") in self.exclude_owner_kinds for o in owners):
            return ()
        images = "#".join(sorted(c.get("image", "") for c in pod["spec"].get("containers") or []))
        namespace = pod["metadata"]["namespace"]
        return tuple(
            sorted((namespace, o.get("kind", ""), o.get("name", ""), images) for o in owners)
        )

    async def run(self, ctx: Context) -> None:
        occurrences: dict[OwnerKey, int] = {}
        # owner key -> node -> the pods beyond the first with the same keys on that node
        duplicates: dict[OwnerKey, dict[str, list[Object]]] = {}
        for node in ctx.snapshot.nodes:
            name = node["metadata"]["name"]
            seen: set[tuple[OwnerKey, ...]] = set()
            for pod in ctx.evictable_pods_on(
                name, lambda p: self.namespaces.allows(p["metadata"]["namespace"])
            ):
                keys = self._keys(pod)
                if not keys:
                    continue
                for key in keys:
                    occurrences[key] = occurrences.get(key, 0) + 1
                if keys in seen:
                    for key in keys:
                        duplicates.setdefault(key, {}).setdefault(name, []).append(pod)
                else:
                    seen.add(keys)
        for key, by_node in duplicates.items():
            targets = self._target_nodes(ctx, [p for pods in by_node.values() for p in pods])
            if targets < 2:
                continue
            upper = math.ceil(occurrences[key] / targets)
            for pods in by_node.values():
                if len(pods) + 1 <= upper:
                    continue
                reason = f"{len(pods) + 1} pods of {key[1]} {key[2]} on the node, {upper} wanted"
                try:
                    for pod in pods[upper - 1 :]:
                        await ctx.evict(pod, self.name, reason)
                except NodeLimitError:
                    continue

    @staticmethod
    def _target_nodes(ctx: Context, pods: list[Object]) -> int:
        """How many nodes the duplicates could run on (NoSchedule taints, node selection)."""
        table = ctx.snapshot.table
        targets: set[str] = set()
        distinct = {_placement_rules(p): p for p in pods}  # alike pods fit alike nodes
        for pod in distinct.values():
            tolerations = pod_tolerations(pod["spec"])
            affinity = RequiredNodeAffinity(pod["spec"])
            matching = {
                name
                for i, name in enumerate(table.names)
                if _tolerates_no_schedule(table.taints[i], tolerations)
                and affinity.matches(table.labels[i], name)
            }
            if len(matching) > 1:
                targets |= matching
        return len(targets)


def _tolerates_no_schedule(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> bool:
    hard = [t for t in taints if t.effect == "NoSchedule"]
    return first_untolerated(hard, tolerations) is None


def _placement_rules(pod: Object) -> str:
    spec = pod["spec"]
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity")
    return repr((spec.get("tolerations"), spec.get("nodeSelector"), node_affinity))
