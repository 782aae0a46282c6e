"""What the VPA's components share about a VerticalPodAutoscaler's spec, as
kubernetes/autoscaler's vertical-pod-autoscaler/pkg/utils/vpa (api.go, capping.go,
limit_proportion_maintaining.go) and admission-controller/resource/pod (recommendation
provider, patch calculators): the update mode, the container policies, capping a
recommendation to minAllowed/maxAllowed, and the resources a pod's containers get from a
recommendation, limits kept in proportion to requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pinnace.api.autoscaling.vpa import DEFAULT_CONTAINER
from pinnace.api.objects import Object
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import BINARY_SI, Quantity

RESOURCES = ("cpu", "memory")
UPDATES_ANNOTATION = "vpaUpdates"
OBSERVED_CONTAINERS_ANNOTATION = "vpaObservedContainers"

Resources = dict[str, Quantity]


def update_mode(vpa: Object) -> str:
    """spec.updatePolicy.updateMode, Auto when unset."""
    policy = (vpa.get("spec") or {}).get("updatePolicy") or {}
    return str(policy.get("updateMode") or "Auto")


def container_policy(vpa: Object, container: str) -> Object:
    """The container's own entry of containerPolicies, else the `*` entry, else {}."""
    policies = ((vpa.get("spec") or {}).get("resourcePolicy") or {}).get("containerPolicies")
    default: Object = {}
    for policy in policies or ():
        if policy.get("containerName") == container:
            return dict(policy)
        if policy.get("containerName") == DEFAULT_CONTAINER:
            default = dict(policy)
    return default


def scaling_off(vpa: Object, container: str) -> bool:
    return container_policy(vpa, container).get("mode") == "Off"


def controlled_resources(vpa: Object, container: str) -> tuple[str, ...]:
    named = container_policy(vpa, container).get("controlledResources")
    return RESOURCES if named is None else tuple(r for r in named if r in RESOURCES)


def controls_limits(vpa: Object, container: str) -> bool:
    values = container_policy(vpa, container).get("controlledValues")
    return values in (None, "RequestsAndLimits")


def resource_list(raw: Any) -> Resources:
    return {name: parse_quantity(value) for name, value in (raw or {}).items()}


def cap(resources: Mapping[str, Quantity], policy: Object) -> Resources:
    """capping.go's applyVPAPolicy: each resource raised to minAllowed, lowered to maxAllowed."""
    low, high = resource_list(policy.get("minAllowed")), resource_list(policy.get("maxAllowed"))
    capped = dict(resources)
    for name, value in resources.items():
        if name in low and value < low[name]:
            capped[name] = low[name]
        if name in high and capped[name] > high[name]:
            capped[name] = high[name]
    return capped


def recommendation_for(vpa: Object, container: str) -> Object | None:
    recommendation = (vpa.get("status") or {}).get("recommendation") or {}
    for entry in recommendation.get("containerRecommendations") or ():
        if entry.get("containerName") == container:
            return dict(entry)
    return None


def _scaled(limit: Quantity, request: Quantity, new_request: Quantity, name: str) -> Quantity:
    """limit * new_request / request, in the unit the resource is counted in (millicores,
    bytes), rounded down as scaleQuantityProportionally's integer arithmetic."""
    if name == "cpu":
        milli = Fraction(limit.milli_value()) * new_request.milli_value() / request.milli_value()
        return Quantity.from_milli(int(milli))
    value = Fraction(limit.value()) * new_request.value() / request.value()
    return Quantity.from_milli(int(value) * 1000, BINARY_SI)


def proportional_limits(
    limits: Mapping[str, Quantity], requests: Mapping[str, Quantity], new: Mapping[str, Quantity]
) -> Resources:
    """GetProportionalLimit: the limits of the resources whose request changes, kept at the
    ratio they had to the original requests (a request that was unset equals its limit)."""
    scaled: Resources = {}
    for name, new_request in new.items():
        limit = limits.get(name)
        request = requests.get(name, limit)
        if limit is None or request is None or request.is_zero():
            continue
        scaled[name] = _scaled(limit, request, new_request, name)
    return scaled


@dataclass
class ContainerChange:
    requests: Resources = field(default_factory=dict)
    limits: Resources = field(default_factory=dict)


def container_resources(vpa: Object, containers: list[Object]) -> list[ContainerChange]:
    """GetContainersResources: per container, the recommended target as requests (capped by
    the policy again, as the recommendation processor does) and, under RequestsAndLimits, the
    limits in proportion; nothing for a container without a recommendation."""
    changes = []
    for container in containers:
        name = str(container.get("name", ""))
        resources = container.get("resources") or {}
        requests, limits = (
            resource_list(resources.get("requests")),
            resource_list(resources.get("limits")),
        )
        recommendation = recommendation_for(vpa, name)
        change = ContainerChange()
        if recommendation is not None and not scaling_off(vpa, name):
            target = resource_list(recommendation.get("target"))
            controlled = controlled_resources(vpa, name)
            policy = container_policy(vpa, name)
            change.requests = cap({r: q for r, q in target.items() if r in controlled}, policy)
            if controls_limits(vpa, name):
                change.limits = proportional_limits(limits, requests, change.requests)
        changes.append(change)
    return changes


def apply_to_pod(vpa: Object, pod: Object) -> list[str]:
    """Set the recommended resources on `pod`'s containers in place, as the admission
    webhook's patches do, and its annotations; returns what changed, per container."""
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    updates = []
    for i, (container, change) in enumerate(
        zip(containers, container_resources(vpa, containers), strict=True)
    ):
        described = []
        resources = container.setdefault("resources", {})
        for key, word, values in (
            ("requests", "request", change.requests),
            ("limits", "limit", change.limits),
        ):
            if not values:
                continue
            target = resources.setdefault(key, {})
            for name in sorted(values):
                target[name] = str(values[name])
                described.append(f"{name} {word}")
        if described:
            updates.append(f"container {i}: " + ", ".join(described))
    annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[OBSERVED_CONTAINERS_ANNOTATION] = ", ".join(
        str(c.get("name", "")) for c in containers
    )
    if updates:
        name = (vpa.get("metadata") or {}).get("name", "")
        annotations[UPDATES_ANNOTATION] = f"Pod resources updated by {name}: " + "; ".join(updates)
    return updates


@dataclass(frozen=True)
class Owner:
    """A controller a controller reference names."""

    obj: Object
    scalable: bool
    """Whether its kind has the scale subresource (a custom resource's may)."""


OwnerGetter = Callable[[str, str, str, str], Awaitable["Owner | None"]]
"""(apiVersion, kind, namespace, name) -> the controller a reference names; None when it is
not there or its kind is not served."""

WELL_KNOWN = frozenset(
    (
        "CronJob",
        "DaemonSet",
        "Deployment",
        "Job",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
    )
)
"""The workload kinds a VPA may target whether or not they have a scale subresource."""


def _controller_ref(obj: Object) -> Object | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


async def top_controller(pod: Object, get: OwnerGetter) -> tuple[str, str] | None:
    """controllerFetcher.FindTopMostWellKnownOrScalable: up the pod's chain of controller
    references, (kind, name) of the top-most controller of a well-known workload kind or with
    the scale subresource (a Deployment above its ReplicaSet, a CronJob above its Job, an Argo
    Rollout or an operator's resource above the ReplicaSets or Deployment it made); None when
    no controller is either. The chain goes on only from a well-known kind's object: another
    kind's parent is read from its Scale's ownerReferences (getOwnerForScaleResource), which
    a Scale never has, so it ends there."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    ref = _controller_ref(pod)
    top: tuple[str, str] | None = None
    seen: set[tuple[str, str]] = set()
    while ref is not None:
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        if (kind, name) in seen:
            break
        seen.add((kind, name))
        owner = await get(str(ref.get("apiVersion", "")), kind, namespace, name)
        if kind in WELL_KNOWN or (owner is not None and owner.scalable):
            top = kind, name
        ref = None if owner is None or kind not in WELL_KNOWN else _controller_ref(owner.obj)
    return top


def targets(vpa: Object, controller: tuple[str, str] | None) -> bool:
    ref = (vpa.get("spec") or {}).get("targetRef") or {}
    return controller is not None and (ref.get("kind"), ref.get("name")) == controller
