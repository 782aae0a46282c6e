"""Scale-up: which node group to grow, and by how many nodes, for the pods that cannot be
scheduled (cluster-autoscaler/core/scaleup/orchestrator and estimator/binpacking_estimator).

For each node group below its maxSize, a node of its template (with the DaemonSet pods that
would run there) is added to the snapshot and each kind of pending pod (pods of one controller
and one spec) is tried on it with the scheduler's filters; the kinds that fit are bin-packed
onto as many new template nodes as they need, largest pods first, each pod going to a new node
already opened before another is opened, up to the group's maxSize (and --max-nodes-total).
The groups that would schedule something are the options; the expander picks one.

A pod no group helps gets NotTriggerScaleUp with the reasons of every group, counted:
"max node group size reached" for a group at its maxSize, else why the template node rejects
it, as the scheduler says it ("Insufficient cpu", "node(s) didn't match Pod's node
affinity/selector").
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pinnace.api.objects import Object
from pinnace.autoscaler.drainability import pod_key
from pinnace.autoscaler.expander import Expander, Option
from pinnace.autoscaler.simulator import Snapshot
from pinnace.controllers.controller_utils import controller_ref
from pinnace.kubelet.cluster_config import NodePool
from pinnace.resources.quantity import Quantity

MAX_SIZE_REACHED = "max node group size reached"


@dataclass
class Group:
    """A node group as the loop sees it."""

    pool: NodePool
    size: int
    """Its target size: nodes registered and not being removed, and nodes on their way."""
    template: Callable[[str], Object]
    """A Node of the group named so."""
    daemon_pods: Callable[[Object], list[Object]]
    """The DaemonSet pods that would run on a node of the group."""

    @property
    def room(self) -> int:
        assert self.pool.max_size is not None
        return self.pool.max_size - self.size


@dataclass
class ScaleUp:
    """What one scale-up attempt decided."""

    chosen: Option | None = None
    helpless: dict[str, tuple[Object, str]] = field(default_factory=dict)
    """The pods no group would help (by key), each with its NotTriggerScaleUp reasons."""
    warnings: list[tuple[str, str]] = field(default_factory=list)


def scale_up(
    pending: Sequence[Object],
    groups: Sequence[Group],
    snapshot: Snapshot,
    expander: Expander,
    total_room: int | None,
) -> ScaleUp:
    """The option to carry out for `pending` (none if no group helps); `total_room` is how many
    more nodes the cluster may have (None: no limit)."""
    kinds = _equivalence_groups(pending)
    reasons: dict[str, dict[str, list[str]]] = {}
    """pod kind -> group -> why the group does not help it."""
    options: list[Option] = []
    for group in sorted(groups, key=lambda g: g.pool.name):
        if group.room <= 0:
            for kind in kinds:
                reasons.setdefault(kind, {})[group.pool.name] = [MAX_SIZE_REACHED]
            continue
        room = group.room if total_room is None else min(group.room, total_room)
        option = _estimate(group, kinds, snapshot, reasons, room)
        if option is not None:
            options.append(option)
    chosen = expander.best(options)
    outcome = ScaleUp(chosen, warnings=[(w.reason, w.message) for w in expander.warnings])
    if chosen is None:
        for kind, pods in kinds.items():
            message = _reasons_message(reasons.get(kind, {}))
            for pod in pods:
                outcome.helpless[pod_key(pod)] = (pod, message)
    return outcome


def _estimate(
    group: Group,
    kinds: dict[str, list[Object]],
    snapshot: Snapshot,
    reasons: dict[str, dict[str, list[str]]],
    room: int,
) -> Option | None:
    """How many nodes of `group` the pods that fit its template need (the binpacking
    estimator), at most `room`; None when no pod fits."""
    added_nodes: list[str] = []
    added_pods: list[Object] = []

    def open_node() -> str:
        name = f"template-node-for-{group.pool.name}-{len(added_nodes)}"
        node = group.template(name)
        snapshot.add_node(node)
        added_nodes.append(name)
        for daemon in group.daemon_pods(node):
            added_pods.append(snapshot.add_pod(daemon, name))
        return name

    try:
        probe = open_node()
        template = group.template(probe)
        fitting: list[Object] = []
        for kind, pods in kinds.items():
            why = snapshot.reasons(pods[0], probe)
            if why:
                reasons.setdefault(kind, {})[group.pool.name] = why
            else:
                fitting += pods
        if not fitting:
            return None
        scheduled: list[Object] = []
        used: list[str] = []
        for pod in sorted(fitting, key=lambda p: -_score(p, template)):
            node = snapshot.find_place(pod, list(reversed(used)))
            if node is None:
                if len(used) >= room:
                    continue
                node = probe if not used else open_node()
                if not snapshot.fits(pod, node):
                    continue
                used.append(node)
            added_pods.append(snapshot.add_pod(pod, node))
            scheduled.append(pod)
        if not used:
            return None
        return Option(group.pool, len(used), scheduled, template)
    finally:
        for pod in added_pods:
            snapshot.remove_pod(pod)
        for name in added_nodes:
            snapshot.core.delete_node(name)


def _score(pod: Object, template: Object) -> float:
    """cpu and memory requested over the template's allocatable, added (the estimator's
    decreasing pod order)."""
    allocatable = (template.get("status") or {}).get("allocatable") or {}
    score = 0.0
    for resource in ("cpu", "memory"):
        total = Quantity(str(allocatable.get(resource, "0"))).milli_value()
        requested = sum(
            Quantity(str(r)).milli_value()
            for c in (pod.get("spec") or {}).get("containers") or ()
            for name, r in ((c.get("resources") or {}).get("requests") or {}).items()
            if name == resource
        )
        if total > 0:
            score += requested / total
    return score


def _equivalence_groups(pods: Sequence[Object]) -> dict[str, list[Object]]:
    """The pods by controller and spec: the scheduler answers alike for each group's pods."""
    kinds: dict[str, list[Object]] = {}
    for pod in pods:
        ref = controller_ref(pod)
        owner = ref.get("uid", "") if ref is not None else pod["metadata"].get("uid", "")
        spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
        labels = pod["metadata"].get("labels") or {}
        kinds.setdefault(json.dumps([owner, labels, spec], sort_keys=True), []).append(pod)
    return kinds


def _reasons_message(by_group: dict[str, list[str]]) -> str:
    """ "1 max node group size reached, 2 Insufficient cpu": each reason with the number of
    groups that gave it (cluster-autoscaler's ReasonsMessage, in a steady order)."""
    counts: Counter[str] = Counter(r for why in by_group.values() for r in dict.fromkeys(why))
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))


def scale_up_info(option: Option, size: int) -> str:
    """ScaleUpInfo as cluster-autoscaler prints it: {group current->new (max: max)}."""
    return (
        f"{{{option.group.name} {size}->{size + option.node_count} (max: {option.group.max_size})}}"
    )
