"""The in-tree plugins, one module each, and kube-scheduler v1.32's default profile."""

from __future__ import annotations

from collections.abc import Callable

from pinnace.scheduler.framework import Plugin
from pinnace.scheduler.plugins.balanced_allocation import NodeResourcesBalancedAllocation
from pinnace.scheduler.plugins.default_binder import Binding, DefaultBinder
from pinnace.scheduler.plugins.default_preemption import DefaultPreemption
from pinnace.scheduler.plugins.image_locality import ImageLocality
from pinnace.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from pinnace.scheduler.plugins.node_affinity import NodeAffinity
from pinnace.scheduler.plugins.node_name import NodeName
from pinnace.scheduler.plugins.node_ports import NodePorts
from pinnace.scheduler.plugins.node_resources_fit import NodeResourcesFit
from pinnace.scheduler.plugins.node_unschedulable import NodeUnschedulable
from pinnace.scheduler.plugins.node_volume_limits import NodeVolumeLimits
from pinnace.scheduler.plugins.pod_topology_spread import PodTopologySpread
from pinnace.scheduler.plugins.priority_sort import PrioritySort
from pinnace.scheduler.plugins.scheduling_gates import SchedulingGates
from pinnace.scheduler.plugins.taint_toleration import TaintToleration
from pinnace.scheduler.plugins.volume_binding import VolumeBinding
from pinnace.scheduler.plugins.volume_restrictions import VolumeRestrictions
from pinnace.scheduler.plugins.volume_zone import VolumeZone
from pinnace.scheduler.profile import Profile

__all__ = [
    "DEFAULT_WEIGHTS",
    "DefaultBinder",
    "DefaultPreemption",
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodeName",
    "NodePorts",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "NodeUnschedulable",
    "NodeVolumeLimits",
    "PodTopologySpread",
    "PrioritySort",
    "SchedulingGates",
    "TaintToleration",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
    "default_plugins",
    "default_profile",
]

DEFAULT_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}
"""Score weights of the default plugins (pkg/scheduler/apis/config/v1/default_plugins.go)."""


def default_plugins(bind: Callable[[Binding], object]) -> list[Plugin]:
    """The default plugins in kube-scheduler's MultiPoint order, which is also the order each
    extension point runs them in."""
    return [
        SchedulingGates(),
        PrioritySort(),
        NodeUnschedulable(),
        NodeName(),
        TaintToleration(),
        NodeAffinity(),
        NodePorts(),
        NodeResourcesFit(),
        VolumeRestrictions(),
        NodeVolumeLimits(),
        VolumeBinding(),
        VolumeZone(),
        PodTopologySpread(),
        InterPodAffinity(),
        DefaultPreemption(),
        NodeResourcesBalancedAllocation(),
        ImageLocality(),
        DefaultBinder(bind),
    ]


def default_profile(
    bind: Callable[[Binding], object], *, percentage_of_nodes_to_score: int | None = None
) -> Profile:
    return Profile(
        default_plugins(bind),
        DEFAULT_WEIGHTS,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
    )
