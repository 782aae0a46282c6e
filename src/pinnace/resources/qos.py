"""A pod's quality of service class, as Kubernetes v1.32 computes it (ComputePodQOS).

Only cpu and memory count, across app and init containers (sidecars included); only positive
amounts count, and a request missing where a limit is set is the limit (API defaulting).

- BestEffort: no container has a positive cpu or memory request or limit.
- Guaranteed: every container has positive cpu and memory limits, and the pod's summed
  requests equal its summed limits for both.
- Burstable: anything else.

The alpha pod-level resources (PodLevelResources, off by default in v1.32) are not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pinnace.resources.lists import ResourceList
from pinnace.resources.names import CPU, MEMORY
from pinnace.resources.pod import containers

__all__ = [
    "BEST_EFFORT",
    "BURSTABLE",
    "GUARANTEED",
    "QOS_COMPUTE_RESOURCES",
    "QOSClass",
    "qos_class",
    "recorded_qos_class",
]

QOSClass = Literal["Guaranteed", "Burstable", "BestEffort"]
GUARANTEED: QOSClass = "Guaranteed"
BURSTABLE: QOSClass = "Burstable"
BEST_EFFORT: QOSClass = "BestEffort"

QOS_COMPUTE_RESOURCES = (CPU, MEMORY)
"""The resources whose requests and limits decide a pod's QoS class."""


def qos_class(pod: Any) -> QOSClass:
    """The class computed from the pod's containers, as kube-apiserver sets `status.qosClass`
    when the pod is created."""
    requests: ResourceList = {}
    limits: ResourceList = {}
    every_container_limited = True
    for c in containers(pod):
        _add_positive(requests, c.requests)
        if _add_positive(limits, c.limits) < len(QOS_COMPUTE_RESOURCES):
            every_container_limited = False
    if not requests and not limits:
        return BEST_EFFORT
    if every_container_limited and requests == limits:
        return GUARANTEED
    return BURSTABLE


def recorded_qos_class(pod: Any) -> QOSClass:
    """`status.qosClass` when the pod has one (it never changes once set), else computed; the
    kubelet reads a pod's class this way (GetPodQOS)."""
    status = pod.get("status") if isinstance(pod, Mapping) else None
    recorded = status.get("qosClass") if isinstance(status, Mapping) else None
    if recorded in (GUARANTEED, BURSTABLE, BEST_EFFORT):
        return recorded
    return qos_class(pod)


def _add_positive(total: ResourceList, resources: ResourceList) -> int:
    """Add the positive cpu and memory amounts to `total`, in place; how many there were."""
    added = 0
    for name in QOS_COMPUTE_RESOURCES:
        amount = resources.get(name)
        if amount is not None and amount > 0:
            summed = total.get(name)
            total[name] = amount if summed is None else summed + amount
            added += 1
    return added
