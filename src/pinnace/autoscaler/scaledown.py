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

A node kept by its pods (a blocking pod, or no place for one) is not tried again for 5 minutes
(--unremovable-node-recheck-timeout).

Pods below the expendable priority cutoff (-10, --expendable-pods-priority-cutoff) are not
looked at: they go with the node.

A node unneeded for --scale-down-unneeded-time (--scale-down-unready-time, 20 minutes, for one
that is not Ready) may go, as long as its group stays at or above
minSize: empty ones (no pod to move) up to --max-empty-bulk-delete at once, others one drain at
a time (--max-drain-parallelism).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
from pinnace.resources.quantity import Quantity
from pinnace.scheduler.podinfo import PodInfo

EXPENDABLE_PODS_PRIORITY_CUTOFF = -10
"""--expendable-pods-priority-cutoff"""
UNREADY_TIME = 1200.0
UNREMOVABLE_RECHECK_TIMEOUT = 300.0
"""--unremovable-node-recheck-timeout"""


@dataclass
class Removal:
    """An unneeded node: the pods that would have to move, and its utilisation."""

    node: str
    group: str
    utilisation: dict[str, float]
    move: list[Object]
    ready: bool = True

    @property
    def empty(self) -> bool:
        return not self.move


@dataclass
class Candidate:
    """A node that may be removed: its Node, its group and the pods on it."""

    node: Object
    group: str
    pods: list[Object]
    ready: bool = True

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])


@dataclass
class Planner:
    threshold: float
    unneeded_time: float
    unready_time: float = UNREADY_TIME
    """How long a node that is not Ready must be unneeded (--scale-down-unready-time)."""
    recheck_timeout: float = UNREMOVABLE_RECHECK_TIMEOUT
    unneeded_since: dict[str, float] = field(default_factory=dict)
    unneeded: dict[str, Removal] = field(default_factory=dict)
    unremovable: dict[str, str] = field(default_factory=dict)
    """Node -> why it cannot go (cluster-autoscaler's UnremovableReason)."""
    _simulated_at: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Nodes whose pods could not go, with why and when: not tried again until the recheck
    timeout has passed (--unremovable-node-recheck-timeout)."""

    def update(
        self,
        snapshot: Callable[[], Snapshot],
        candidates: Sequence[Candidate],
        destinations: Sequence[str],
        budgets: list[Budget],
        owners: Owners,
        now: float,
    ) -> None:
        """Find the unneeded nodes among `candidates`, whose pods may move to `destinations`;
        `snapshot` gives the simulation, made the first time a pod has to be placed."""
        shares = {c.name: utilisation(c.node, c.pods) for c in candidates}
        order = sorted(
            candidates,
            key=lambda c: (c.name not in self.unneeded_since, _highest(shares[c.name]), c.name),
        )
        unneeded: dict[str, Removal] = {}
        self.unremovable = {}
        for candidate in order:
            name = candidate.name
            found = self._check(candidate, shares[name], budgets, owners, now)
            gone = set(unneeded) | {name}
            if (
                isinstance(found, Removal)
                and found.move
                and not self._place(snapshot(), found, destinations, gone)
            ):
                found = NO_PLACE_TO_MOVE_PODS
            if isinstance(found, str):
                self.unremovable[name] = found
                if found not in (NOT_UNDERUTILIZED, SCALE_DOWN_DISABLED_ANNOTATION):
                    self._simulated_at.setdefault(name, (found, now))
                continue
            self._simulated_at.pop(name, None)
            spend(budgets, found.move)
            unneeded[name] = found
        self.unneeded = unneeded
        self.unneeded_since = {n: self.unneeded_since.get(n, now) for n in unneeded}
        present = {c.name for c in candidates}
        self._simulated_at = {n: v for n, v in self._simulated_at.items() if n in present}

    def _check(
        self,
        candidate: Candidate,
        shares: dict[str, float],
        budgets: list[Budget],
        owners: Owners,
        now: float,
    ) -> Removal | str:
        node = candidate.node
        if ((node.get("metadata") or {}).get("annotations") or {}).get(
            SCALE_DOWN_DISABLED
        ) == "true":
            return SCALE_DOWN_DISABLED_ANNOTATION
        if _highest(shares) >= self.threshold:
            return NOT_UNDERUTILIZED
        tried = self._simulated_at.get(candidate.name)
        if tried is not None:
            if now - tried[1] < self.recheck_timeout:
                return tried[0]
            del self._simulated_at[candidate.name]
        drained = drain(not_expendable(candidate.pods), budgets, owners, now)
        if drained.blocked is not None:
            return drained.blocked.reason
        return Removal(candidate.name, candidate.group, shares, drained.move, candidate.ready)

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

    def ready_to_go(self, now: float) -> list[Removal]:
        """The unneeded nodes unneeded for long enough (--scale-down-unneeded-time, or
        --scale-down-unready-time for a node that is not Ready), longest first."""
        ripe = [
            r
            for n, r in self.unneeded.items()
            if now - self.unneeded_since[n]
            >= (self.unneeded_time if r.ready else self.unready_time)
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


def not_expendable(pods: list[Object]) -> list[Object]:
    """Pods of a priority below the cutoff neither get nodes nor keep them."""
    return [
        p
        for p in pods
        if int((p.get("spec") or {}).get("priority") or 0) >= EXPENDABLE_PODS_PRIORITY_CUTOFF
    ]


def _unbound(pod: Object) -> Object:
    """The pod as its replacement would come: not bound to a node yet."""
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    return {**pod, "spec": spec}


def utilisation(node: Object, pods: Sequence[Object]) -> dict[str, float]:
    """cpu and memory requested by the pods (as the scheduler counts requests) over the
    node's allocatable."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    shares: dict[str, float] = {}
    requests = [PodInfo.from_pod(p).requests for p in pods]
    for resource in (CPU, MEMORY):
        amount = allocatable.get(resource)
        if amount is None:
            continue
        quantity = Quantity(str(amount))
        total = quantity.milli_value() if resource == CPU else quantity.value()
        if total > 0:
            requested = sum(r.get(resource, 0) for r in requests)
            shares[resource] = requested / total
    return shares


def _highest(utilisation: Mapping[str, float]) -> float:
    return max(utilisation.values(), default=0.0)
