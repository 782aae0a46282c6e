"""LowNodeUtilization and HighNodeUtilization: node usage is what the pods on a node request,
as a percentage of its allocatable, per resource.

LowNodeUtilization evicts from nodes above `targetThresholds` (any resource) while nodes under
`thresholds` (every resource) can take the pods, so the scheduler spreads them there.
HighNodeUtilization evicts from nodes under `thresholds` while the other nodes have room, so a
scheduler scoring MostAllocated packs the pods onto fewer nodes, freeing whole nodes (room for
large pods the fragments could not hold).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pinnace.api import field
from pinnace.api.objects import Object
from pinnace.descheduler.args import ALL_NAMESPACES, Args, Namespaces, PolicyError
from pinnace.descheduler.evictor import NodeLimitError
from pinnace.descheduler.framework import BALANCE, Context, low_priority_first
from pinnace.descheduler.snapshot import Snapshot
from pinnace.resources.names import CPU, MEMORY, PODS
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduling.taints import Taint, first_untolerated, pod_tolerations

BASIC = (CPU, MEMORY, PODS)
MAX_PERCENTAGE = 100.0


@dataclass
class NodeUsage:
    name: str
    node: Mapping[str, Any]
    allocatable: dict[str, int]
    usage: dict[str, int]  # requested, cpu in millicores
    low: dict[str, float]  # thresholds as amounts
    high: dict[str, float]  # targetThresholds as amounts

    def percentages(self) -> str:
        return ", ".join(
            f"{r} {_percent(self.usage[r], self.allocatable[r]):.0f}%" for r in self.usage
        )

    def total(self) -> int:
        return sum(self.usage.values())


def _with_defaults(
    thresholds: dict[str, float], default: float = MAX_PERCENTAGE
) -> dict[str, float]:
    """cpu, memory and pods left out count as 100% (as a deviation from the mean: 0%), so
    they never decide."""
    return {**{r: default for r in BASIC}, **thresholds}


def _node_usages(
    snapshot: Snapshot, low: dict[str, float], high: dict[str, float], deviation: bool
) -> list[NodeUsage]:
    resources = tuple(low)
    nodes = [n["metadata"]["name"] for n in snapshot.nodes]
    usage = {n: snapshot.usage(n, resources) for n in nodes}
    allocatable = {n: snapshot.allocatable(n, resources) for n in nodes}
    if deviation and nodes:
        average = {
            r: sum(_percent(usage[n][r], allocatable[n][r]) for n in nodes) / len(nodes)
            for r in resources
        }
        low = {r: _clamp(average[r] - low[r]) for r in resources}
        high = {r: _clamp(average[r] + high[r]) for r in resources}
    result = []
    for n in nodes:
        alloc = allocatable[n]
        result.append(
            NodeUsage(
                n,
                snapshot.node(n) or {},
                alloc,
                usage[n],
                {r: low[r] * alloc[r] / 100 for r in resources},
                {r: high[r] * alloc[r] / 100 for r in resources},
            )
        )
    return result


def _percent(amount: int, allocatable: int) -> float:
    return 100 * amount / allocatable if allocatable else 0.0


def _clamp(percent: float) -> float:
    return min(max(percent, 0.0), MAX_PERCENTAGE)


def _is_low(n: NodeUsage) -> bool:
    return all(n.usage[r] <= n.low[r] for r in n.usage)


def _is_above_target(n: NodeUsage) -> bool:
    return any(n.usage[r] > n.high[r] for r in n.usage)


def _unschedulable(n: NodeUsage) -> bool:
    return bool((n.node.get("spec") or {}).get("unschedulable"))


def _why_idle(low: list[NodeUsage], nodes: int, number_of_nodes: int) -> str | None:
    """Why the underutilized nodes give the plugin nothing to do, in the words the
    descheduler logs it; None when they do not."""
    if not low:
        return (
            "No node is underutilized, nothing to do here, you might tune your thresholds further"
        )
    if len(low) <= number_of_nodes:
        return (
            f"Number of nodes underutilized ({len(low)}) is less or equal than NumberOfNodes "
            f"({number_of_nodes}), nothing to do here"
        )
    if len(low) == nodes:
        return "All nodes are underutilized, nothing to do here"
    return None


async def _evict_from_sources(
    ctx: Context,
    strategy: str,
    sources: list[NodeUsage],
    destinations: list[NodeUsage],
    keep_going: Callable[[NodeUsage, dict[str, float]], bool],
    excluded: Namespaces,
    why: str,
) -> None:
    """evictPodsFromSourceNodes: move pods off the sources while the destinations have room
    (up to their high threshold) and `keep_going` says so."""
    available: dict[str, float] = {r: 0.0 for r in destinations[0].usage}
    for d in destinations:
        for r in available:
            available[r] += d.high[r] - d.usage[r]
    destination_taints = [
        ctx.snapshot.table.taints[ctx.snapshot.table.index[d.name]] for d in destinations
    ]
    for source in sources:
        pods = low_priority_first(ctx.evictable_pods_on(source.name))
        if not keep_going(source, available):
            continue
        reason = f"{why} ({source.percentages()})"
        try:
            for pod in pods:
                if not _tolerates_any(pod, destination_taints):
                    continue
                if not excluded.allows(pod["metadata"]["namespace"]):
                    continue
                requests = PodInfo.from_pod(pod).requests
                if not await ctx.evict(pod, strategy, reason):
                    continue
                for r in available:
                    amount = 1 if r == PODS else requests.get(r, 0)
                    source.usage[r] -= amount
                    available[r] -= amount
                if not keep_going(source, available):
                    break
        except NodeLimitError:
            continue


def _tolerates_any(pod: Object, taint_sets: list[tuple[Taint, ...]]) -> bool:
    tolerations = pod_tolerations(pod["spec"])
    return any(first_untolerated(taints, tolerations) is None for taints in taint_sets)


def _room_left(available: dict[str, float]) -> bool:
    return all(v > 0 for v in available.values())


@dataclass(frozen=True)
class LowNodeUtilization:
    name: ClassVar[str] = "LowNodeUtilization"
    point: ClassVar[str] = BALANCE
    thresholds: dict[str, float]
    target_thresholds: dict[str, float]
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces = ALL_NAMESPACES

    @classmethod
    def from_args(cls, args: Args) -> LowNodeUtilization:
        thresholds = args.percentages("thresholds")
        targets = args.percentages("targetThresholds")
        if thresholds is None:
            raise args.missing("thresholds")
        if targets is None:
            raise args.missing("targetThresholds")
        if set(thresholds) != set(targets):
            detail = "thresholds and targetThresholds configured different resources"
            raise args.fail("targetThresholds", sorted(targets), detail)
        for r, percent in thresholds.items():
            if percent > targets[r]:
                path = args.path.child("thresholds").key(r)
                detail = f"greater than targetThresholds' {targets[r]:g}"
                raise PolicyError(str(field.invalid(path, args.raw["thresholds"][r], detail)))
        deviation = args.boolean("useDeviationThresholds")
        default = 0.0 if deviation else MAX_PERCENTAGE
        return cls(
            _with_defaults(thresholds, default),
            _with_defaults(targets, default),
            deviation,
            args.integer("numberOfNodes", 0) or 0,
            args.namespaces("evictableNamespaces", exclude_only=True),
        )

    async def run(self, ctx: Context) -> None:
        nodes = _node_usages(
            ctx.snapshot, self.thresholds, self.target_thresholds, self.use_deviation_thresholds
        )
        low = [n for n in nodes if not _unschedulable(n) and _is_low(n)]
        sources = [n for n in nodes if _is_above_target(n)]
        idle = _why_idle(low, len(nodes), self.number_of_nodes)
        if idle is None and not sources:
            idle = "All nodes are under target utilization, nothing to do here"
        if idle is not None:
            ctx.note(self.name, idle)
            return
        sources.sort(key=NodeUsage.total, reverse=True)

        def keep_going(node: NodeUsage, available: dict[str, float]) -> bool:
            return _is_above_target(node) and _room_left(available)

        await _evict_from_sources(
            ctx,
            self.name,
            sources,
            low,
            keep_going,
            self.evictable_namespaces,
            "node is overutilized",
        )


@dataclass(frozen=True)
class HighNodeUtilization:
    name: ClassVar[str] = "HighNodeUtilization"
    point: ClassVar[str] = BALANCE
    thresholds: dict[str, float]
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces = ALL_NAMESPACES

    @classmethod
    def from_args(cls, args: Args) -> HighNodeUtilization:
        thresholds = args.percentages("thresholds")
        if thresholds is None:
            raise args.missing("thresholds")
        return cls(
            _with_defaults(thresholds),
            args.integer("numberOfNodes", 0) or 0,
            args.namespaces("evictableNamespaces", exclude_only=True),
        )

    async def run(self, ctx: Context) -> None:
        full = {r: MAX_PERCENTAGE for r in self.thresholds}
        nodes = _node_usages(ctx.snapshot, self.thresholds, full, False)
        sources = [n for n in nodes if _is_low(n)]
        destinations = [n for n in nodes if not _unschedulable(n) and not _is_low(n)]
        idle = _why_idle(sources, len(nodes), self.number_of_nodes)
        if idle is None and not destinations:
            idle = "No node is available to schedule the pods, nothing to do here"
        if idle is not None:
            ctx.note(self.name, idle)
            return
        sources.sort(key=NodeUsage.total)
        await _evict_from_sources(
            ctx,
            self.name,
            sources,
            destinations,
            lambda node, available: _room_left(available),
            self.evictable_namespaces,
            "node is underutilized",
        )
