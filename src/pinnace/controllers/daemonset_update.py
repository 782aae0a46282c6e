"""The RollingUpdate step of the DaemonSet controller, as v1.32's daemon/update.go decides it:
which out-of-date pods to delete (maxSurge 0: up to maxUnavailable at a time, unavailable
old pods first) or, when surging, on which nodes to start a new pod beside the old one and
which old pods to delete once their replacement is available. The manage step then creates
what is missing and prunes what is left over."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pinnace.api.objects import Object
from pinnace.controllers.controller_utils import is_pod_available
from pinnace.controllers.daemonset_util import (
    DaemonPlacement,
    is_pod_updated,
    surge_count,
    template_generation_of,
    unavailable_count,
)


@dataclass
class RollingUpdatePlan:
    delete: list[str] = field(default_factory=list)
    """Names of the pods to delete."""
    create: list[str] = field(default_factory=list)
    """Names of the nodes to create a new pod on."""


def updated_pods_on_node(
    pods: list[Object], hash_: str, generation: int | None
) -> tuple[Object | None, Object | None, bool]:
    """findUpdatedPodsOnNode: (new pod, old pod, ok) among the pods not being deleted; not
    ok when there are two of either, for the manage step to clean up first."""
    new = old = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


def desired_node_counts(
    ds: Object,
    nodes: list[Object],
    placement: DaemonPlacement,
    node_to_pods: dict[str, list[Object]],
) -> tuple[int, int, int]:
    """updatedDesiredNodeCounts: (maxSurge, maxUnavailable, desiredNumberScheduled); every
    node that should run a pod gets an entry in `node_to_pods`, empty if it has none."""
    desired = 0
    for node in nodes:
        if not placement.should_run(node)[0]:
            continue
        desired += 1
        node_to_pods.setdefault(node["metadata"]["name"], [])
    max_unavailable = unavailable_count(ds, desired)
    max_surge = surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1  # an impossible configuration: accept unavailability
    return max_surge, max_unavailable, desired


def rolling_update(
    ds: Object,
    nodes: list[Object],
    node_to_pods: dict[str, list[Object]],
    placement: DaemonPlacement,
    hash_: str,
    now: float,
) -> RollingUpdatePlan:
    """The pods to delete and nodes to start a pod on in this step of the rollout. Nodes are
    taken in name order (Kubernetes walks a Go map, in no order)."""
    node_to_pods = {name: list(pods) for name, pods in node_to_pods.items()}
    max_surge, max_unavailable, desired = desired_node_counts(ds, nodes, placement, node_to_pods)
    generation = template_generation_of(ds)
    min_ready = ds["spec"].get("minReadySeconds") or 0

    def available(pod: Object) -> bool:
        return is_pod_available(pod, min_ready, now)

    if max_surge == 0:
        return _without_surge(node_to_pods, hash_, generation, max_unavailable, available)
    by_name = {node["metadata"]["name"]: node for node in nodes}

    def should_run(name: str) -> bool:
        # A node gone from the cache is one the pod should not run on (Kubernetes errors out
        # and retries until the pod GC removes the pod; here the rollout goes on meanwhile).
        node = by_name.get(name)
        return node is not None and placement.should_run(node)[0]

    plan = RollingUpdatePlan()
    should_not_run: list[Object] = []
    candidates: list[str] = []
    allowed: list[str] = []
    surging = 0
    num_available = 0
    for name in sorted(node_to_pods):
        new, old, ok = updated_pods_on_node(node_to_pods[name], hash_, generation)
        if not ok:
            surging += 1  # the manage step cleans this node up; count it as surging
            continue
        if old is not None:
            num_available += available(old)
        elif new is not None:
            num_available += available(new)
        if old is None:
            continue  # nothing to replace: the manage step creates a pod if one is missing
        if new is None:
            if not should_run(name):
                if available(old):
                    should_not_run.append(old)
                else:
                    plan.delete.append(old["metadata"]["name"])
            elif not available(old):
                allowed.append(name)
            elif surging < max_surge:
                candidates.append(name)
        elif not available(new):
            surging += 1  # waiting for the new pod to become available
        else:
            plan.delete.append(old["metadata"]["name"])
    # With surge, an owner expects full availability: a pod on a node it no longer fits
    # goes only once as many pods are available elsewhere.
    deletable = min(num_available - desired, len(should_not_run))
    for pod in should_not_run[: max(deletable, 0)]:
        plan.delete.append(pod["metadata"]["name"])
    remaining = min(max(max_surge - surging, 0), len(candidates))
    plan.create = allowed + candidates[:remaining]
    return plan


def _without_surge(
    node_to_pods: dict[str, list[Object]],
    hash_: str,
    generation: int | None,
    max_unavailable: int,
    available: Callable[[Object], bool],
) -> RollingUpdatePlan:
    """Delete just enough old pods to stay within maxUnavailable; the manage step creates
    their replacements once they are gone. Deleted pods do not count as unavailable."""
    unavailable = 0
    allowed: list[str] = []
    candidates: list[str] = []
    for name in sorted(node_to_pods):
        new, old, ok = updated_pods_on_node(node_to_pods[name], hash_, generation)
        if not ok:
            unavailable += 1  # the manage step cleans this node up
        elif (old is None) == (new is None):
            unavailable += 1  # the manage step creates or deletes here
        elif new is not None:
            unavailable += not available(new)
        elif old is not None and not available(old):
            allowed.append(old["metadata"]["name"])  # unavailable anyway: replace it
            unavailable += 1
        elif old is not None and unavailable < max_unavailable:
            candidates.append(old["metadata"]["name"])
    remaining = min(max(max_unavailable - unavailable, 0), len(candidates))
    return RollingUpdatePlan(delete=allowed + candidates[:remaining])
