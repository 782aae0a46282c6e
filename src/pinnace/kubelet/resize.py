"""The kubelet's side of in-place resize (InPlacePodVerticalScaling, alpha in v1.32), as
pkg/kubelet/kubelet.go (handlePodResourcesResize, canResizePod), pkg/kubelet/status (the
allocation checkpoint, status.resize) and kuberuntime's computePodResizeAction of v1.32.

The kubelet keeps, per pod, the resources it allocated to each regular container (what the
node's accounting holds for the pod) and those the runtime applied. When the spec asks for
others:
- more cpu or memory than the node's allocatable altogether: Infeasible;
- more than the node has left beside what the other pods hold (the admission check): Deferred,
  tried again when a pod on the node gives resources back or the pod changes;
- else the allocation becomes the spec's (InProgress) and the runtime applies it: a container
  is restarted when its resizePolicy says RestartContainer for a resource that changed,
  otherwise its cgroup settings change in place; once applied, status.resize is cleared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinnace.api.core.pod_containers import RESIZE_RESOURCES, RESTART_CONTAINER
from pinnace.api.core.pod_resize import DEFERRED, IN_PROGRESS, INFEASIBLE, same_resources
from pinnace.resources.names import CPU, MEMORY
from pinnace.resources.pod import pod_requests
from pinnace.resources.quantity import Quantity

if TYPE_CHECKING:
    from pinnace.kubelet.pod_status import ContainerRecord

__all__ = [
    "DEFERRED",
    "INFEASIBLE",
    "IN_PROGRESS",
    "PodAllocation",
    "allocated_pod",
    "infeasible",
    "restart_needed",
    "spec_resources",
]

Resources = Mapping[str, Any]
"""A container's `resources` as JSON: requests and limits."""


def spec_resources(pod: Mapping[str, Any]) -> dict[str, Resources]:
    """What the pod's spec asks for, by regular container."""
    return {
        c["name"]: c.get("resources") or {} for c in (pod.get("spec") or {}).get("containers") or ()
    }


@dataclass(slots=True)
class PodAllocation:
    """What the kubelet allocated to a pod's regular containers, what its runtime applied, and
    the resize status it reports."""

    allocated: dict[str, Resources]
    applied: dict[str, Resources]
    """What each running container runs with (its resources at its start, or as updated)."""
    report_allocated: bool = False
    """Show allocatedResources (InPlacePodVerticalScalingAllocatedStatus)."""
    resize: str = ""

    @classmethod
    def of(cls, pod: Mapping[str, Any], report_allocated: bool) -> PodAllocation:
        """As admitted: what the spec asks for, or, for a pod an earlier run of the agent
        started, what its status shows the containers run with."""
        wanted = spec_resources(pod)
        shown = {
            s.get("name"): s["resources"]
            for s in (pod.get("status") or {}).get("containerStatuses") or ()
            if s.get("resources") is not None
        }
        allocated = {name: shown.get(name, resources) for name, resources in wanted.items()}
        return cls(allocated, dict(allocated), report_allocated)

    def wants_change(self, pod: Mapping[str, Any]) -> bool:
        """The spec asks for other resources than those allocated."""
        return not _same(spec_resources(pod), self.allocated)

    def applying(self) -> bool:
        """The allocation is not yet what the runtime applied."""
        return not _same(self.allocated, self.applied)

    def started(self, container: str) -> None:
        """`container` (re)started: with its allocated resources."""
        if container in self.allocated:
            self.applied[container] = self.allocated[container]

    def status(self) -> str:
        """status.resize (determinePodResizeStatus): InProgress ends once applied."""
        if self.resize == IN_PROGRESS and not self.applying():
            self.resize = ""
        return self.resize

    def report(self, status: dict[str, Any], apps: Sequence[ContainerRecord], active: bool) -> None:
        """Add to the pod's `status` what the kubelet reports of the resize: each running
        container's resources, the allocated requests (when that gate is on) and
        status.resize (null to clear it: the status is written as a merge patch)."""
        for entry, c in zip(status["containerStatuses"], apps, strict=True):
            if c.running:
                entry["resources"] = self.applied.get(c.name, {})
            if self.report_allocated and c.name in self.allocated:
                entry["allocatedResources"] = self.allocated[c.name].get("requests") or {}
        status["resize"] = (self.status() if active else "") or None


def _same(a: Mapping[str, Resources], b: Mapping[str, Resources]) -> bool:
    return a.keys() == b.keys() and all(same_resources(a[k], b[k]) for k in a)


def allocated_pod(pod: Mapping[str, Any], allocation: PodAllocation) -> dict[str, Any]:
    """`pod` with its regular containers' resources as allocated (what the node holds for it
    and what its containers run with)."""
    spec = dict(pod.get("spec") or {})
    spec["containers"] = [
        {**c, "resources": allocation.allocated.get(c["name"], c.get("resources") or {})}
        for c in spec.get("containers") or ()
    ]
    return {**pod, "spec": spec}


def infeasible(pod: Mapping[str, Any], allocatable: Mapping[str, Quantity]) -> bool:
    """canResizePod's first check: the pod's cpu or memory requests exceed the node's
    allocatable, so no other pod going could make room."""
    requests = pod_requests(pod)
    return any(
        requests.get(name, Quantity(0)) > allocatable.get(name, Quantity(0))
        for name in (CPU, MEMORY)
    )


def restart_needed(container: Mapping[str, Any], old: Resources, new: Resources) -> bool:
    """Whether applying `new` over `old` restarts the container: a resource whose request or
    limit changed has the RestartContainer policy."""
    policies = {
        p.get("resourceName"): p.get("restartPolicy") for p in container.get("resizePolicy") or ()
    }
    for name in RESIZE_RESOURCES:
        changed = any(
            not same_resources(
                {key: {name: (old.get(key) or {}).get(name)}},
                {key: {name: (new.get(key) or {}).get(name)}},
            )
            for key in ("requests", "limits")
        )
        if changed and policies.get(name) == RESTART_CONTAINER:
            return True
    return False
