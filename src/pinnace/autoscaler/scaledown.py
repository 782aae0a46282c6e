"""Scale-down planning: which nodes are unneeded, since when, and which to remove now
(cluster-autoscaler/core/scaledown: planner, eligibility, unneeded; simulator's
RemovalSimulator).

Every loop each node of a node group is looked at, the nodes already found unneeded first
(so the set stays steady), then by utilisation, least first:

- a node being removed, or annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled:
  "true"` (ScaleDownDisabledAnnotation), is not a candidate;
- utilisation, the larger of cpu and memory requested (every pod bound there, DaemonSet pods
  included) over allocatable, at or above --scale-down-utilization-threshold: NotUnderutilized;
- its pods judged by the drainability rules (`drainability`): a blocking pod keeps the node;
- the pods to move must each fit on another node (the scheduler's filters; not on the node
  itself, nor on nodes already found unneeded in this pass); a pod that fits nowhere keeps the
  node (NoPlaceToMovePods). Otherwise the node is unneeded and the moved pods stay where they
  were placed for the rest of the pass, so later nodes cannot count on that room.

A node unneeded for --scale-down-unneeded-time may go, as long as its group stays at or above
minSize: empty ones (no pod to move) up to --max-empty-bulk-delete at once, others one drain at
a time (--max-drain-parallelism).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pinnace.api.objects import Object
from pinnace.autoscaler.drainability import (
    NO_PLACE_TO_MOVE_PODS,
    NOT_UNDERUTILIZED,
    SCALE_DOWN_DISABLED,
    SCALE_DOWN_DISABLED_ANNOTATION,
    Budget,
    Owners,
    drain,
    spend,
)
from pinnace.autoscaler.simulator import Snapshot
from pinnace.resources.names import CPU, MEMORY


@dataclass
class Removal:
    """An unneeded node: the pods that would have to move, and its utilisation."""

    node: str
    group: str
    utilisation: dict[str, float]
    move: list[Object]

    @property
    def empty(self) -> bool:
        return not self.move


@dataclass
class Planner:
    threshold: float
    unneeded_time: float
    unneeded_since: dict[str, float] = field(default_factory=dict)
    unneeded: dict[str, Removal] = field(default_factory=dict)
    unremovable: dict[str, str] = field(default_factory=dict)
    """Node -> why it cannot go (cluster-autoscaler's UnremovableReason)."""

    def update(
        self,
        snapshot: Snapshot,
        candidates: Mapping[str, str],
        destinations: Sequence[str],
        pods_on: Mapping[str, list[Object]],
        budgets: list[Budget],
        owners: Owners,
        now: float,
    ) -> None:
        """Find the unneeded nodes among `candidates` (node -> group), whose pods may move to
        `destinations`."""
        utilisation = {n: self._utilisation(snapshot, n) for n in candidates}
        order = sorted(
            candidates,
            key=lambda n: (
                n not in self.unneeded_since,
                max(utilisation[n].values(), default=0),
                n,
            ),
        )
        unneeded: dict[str, Removal] = {}
        self.unremovable = {}
        for name in order:
            found = self._check(snapshot, name, utilisation[name], pods_on, budgets, owners, now)
            if isinstance(found, str):
                self.unremovable[name] = found
                continue
            if not self._place(snapshot, found, destinations, set(unneeded) | {name}):
                self.unremovable[name] = NO_PLACE_TO_MOVE_PODS
                continue
            spend(budgets, found.move)
            found.group = candidates[name]
            unneeded[name] = found
        self.unneeded = unneeded
        self.unneeded_since = {n: self.unneeded_since.get(n, now) for n in unneeded}

    def _check(
        self,
        snapshot: Snapshot,
        name: str,
        utilisation: dict[str, float],
        pods_on: Mapping[str, list[Object]],
        budgets: list[Budget],
        owners: Owners,
        now: float,
    ) -> Removal | str:
        node = snapshot.core.table.nodes[snapshot.core.table.index[name]]
        if ((node.get("metadata") or {}).get("annotations") or {}).get(
            SCALE_DOWN_DISABLED
        ) == "true":
            return SCALE_DOWN_DISABLED_ANNOTATION
        if _highest(utilisation) >= self.threshold:
            return NOT_UNDERUTILIZED
        drained = drain(pods_on.get(name, []), budgets, owners, now)
        if drained.blocked is not None:
            return drained.blocked.reason
        return Removal(name, "", utilisation, drained.move)

    @staticmethod
    def _place(
        snapshot: Snapshot, removal: Removal, destinations: Sequence[str], gone: set[str]
    ) -> bool:
        """Place the node's pods elsewhere in the snapshot; undone if one fits nowhere."""
        among = [n for n in destinations if n not in gone]
        placed: list[tuple[Object, Object]] = []
        for pod in removal.move:
            snapshot.remove_pod(pod)
            target = snapshot.find_place(_unbound(pod), among)
            if target is None:
                snapshot.core.add_pod(pod)
                for original, bound in reversed(placed):
                    snapshot.remove_pod(bound)
                    snapshot.core.add_pod(original)
                return False
            placed.append((pod, snapshot.add_pod(_unbound(pod), target)))
        return True

    @staticmethod
    def _utilisation(snapshot: Snapshot, name: str) -> dict[str, float]:
        table = snapshot.core.table
        i = table.index[name]
        shares = {}
        for resource in (CPU, MEMORY):
            column = table.column(resource)
            allocatable = int(table.allocatable[i, column])
            if allocatable > 0:
                shares[resource] = int(table.requested[i, column]) / allocatable
        return shares

    def ready_to_go(self, now: float) -> list[Removal]:
        """The unneeded nodes unneeded for long enough, longest first."""
        ripe = [
            r
            for n, r in self.unneeded.items()
            if now - self.unneeded_since[n] >= self.unneeded_time
        ]
        return sorted(ripe, key=lambda r: (self.unneeded_since[r.node], r.node))

    def forget(self, node: str) -> None:
        self.unneeded.pop(node, None)
        self.unneeded_since.pop(node, None)


def nodes_to_delete(
    ripe: Sequence[Removal],
    room: dict[str, int],
    max_empty: int,
    drains_left: int,
) -> tuple[list[Removal], list[Removal]]:
    """(empty, to drain): what may go now, keeping each group at or above its minSize
    (`room`: how many nodes each group may lose) and within the bulk and drain limits."""
    empty: list[Removal] = []
    drains: list[Removal] = []
    for removal in ripe:
        if room.get(removal.group, 0) <= 0:
            continue
        if removal.empty and len(empty) < max_empty:
            empty.append(removal)
        elif not removal.empty and len(drains) < drains_left:
            drains.append(removal)
        else:
            continue
        room[removal.group] -= 1
    return empty, drains


def _unbound(pod: Object) -> Object:
    """The pod as its replacement would come: not bound to a node yet."""
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    return {**pod, "spec": spec}


def _highest(utilisation: Mapping[str, float]) -> float:
    return max(utilisation.values(), default=0.0)
