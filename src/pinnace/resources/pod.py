"""A pod's effective requests and limits, as PodRequests / PodLimits in Kubernetes v1.32
(k8s.io/component-helpers/resource).

App containers run together, so their resources add up. Init containers run one at a time
before them, so each counts as a peak, and the pod needs the larger of that peak and the app
containers' sum. Restartable init containers (sidecars, `restartPolicy: Always`) keep running
once started: each adds to the app containers' sum and to the peak of every init container
after it (KEP-753). Pod overhead (RuntimeClass) is added on top.

With `use_status_resources` (in-place resize, InPlacePodVerticalScaling, alpha in v1.32: v1.32
sets it while the gate is on; the scheduler and quota pass it always, as only the gate's pods
have the field), an app container counts the larger of its spec and what its status says it
runs with (`status.containerStatuses[].resources`), or the latter alone while the resize is
Infeasible: a pod being resized holds both its old and its new size.

Not modelled, as it is alpha and off by default in v1.32: pod-level `spec.resources`
(PodLevelResources).

Pods are read as decoded JSON. A container with a limit but no request for a resource counts
the limit as its request, which is what API defaulting stores. A pod of the wrong shape raises
ValueError naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from reprlib import repr as brief
from types import MappingProxyType
from typing import Any

import orjson

from pinnace.resources.lists import ResourceList, add, maximum, parse_resource_list
from pinnace.resources.names import CPU, MEMORY
from pinnace.resources.quantity import Quantity

__all__ = [
    "NON_ZERO_DEFAULTS",
    "ContainerResources",
    "containers",
    "pod_limits",
    "pod_non_zero_requests",
    "pod_requests",
    "pod_spec",
]

# What the scheduler assumes a container without a cpu/memory request uses when it scores
# nodes (DefaultMilliCPURequest, DefaultMemoryRequest): never used to decide whether a pod fits.
NON_ZERO_DEFAULTS: Mapping[str, Quantity] = MappingProxyType(
    {CPU: Quantity.from_milli(100), MEMORY: Quantity(200 * 1024 * 1024)}
)


@dataclass(frozen=True)
class ContainerResources:
    """One container of a pod with its requests (defaulted from limits) and limits."""

    kind: str  # "containers", "initContainers" or "ephemeralContainers"
    name: str
    requests: ResourceList
    limits: ResourceList
    is_sidecar: bool  # an init container with restartPolicy Always


def containers(pod: Any, *kinds: str) -> Iterator[ContainerResources]:
    """The pod's containers of the given kinds (default: app then init containers)."""
    spec = pod_spec(pod)
    for kind in kinds or ("containers", "initContainers"):
        items = spec.get(kind)
        if items is None:
            continue
        if not isinstance(items, list):
            raise ValueError(f"spec.{kind}: must be a list of containers, not {brief(items)}")
        for i, container in enumerate(items):
            yield _container_resources(container, kind, f"spec.{kind}[{i}]")


def pod_spec(pod: Any) -> Mapping[str, Any]:
    if not isinstance(pod, Mapping):
        raise ValueError(f"a pod must be an object, not {brief(pod)}")
    spec = pod.get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise ValueError(f"spec: must be an object, not {brief(spec)}")
    return spec


def pod_requests(
    pod: Any,
    *,
    exclude_overhead: bool = False,
    non_missing: Mapping[str, Quantity] | None = None,
    use_status_resources: bool = False,
) -> ResourceList:
    """The pod's effective requests: what the scheduler and the kubelet reserve for it.

    `non_missing` fills in, per container, a request the container does not set at all (an
    explicit zero stays zero); that is how the scheduler's scoring treats requestless pods.
    """

    def requests_of(c: ContainerResources) -> ResourceList:
        if not non_missing:
            return c.requests
        return {**non_missing, **c.requests}

    total = _aggregate(pod, requests_of, use_status_resources)
    if not exclude_overhead:
        total = add(total, _overhead(pod))
    return total


def spec_resources_key(pod: Mapping[str, Any]) -> bytes:
    """What `pod_requests` and `pod_limits` read of the pod's spec, as written: pods of one
    template share it, so that whoever reads their resources often can do it once per key
    (their status resources, when used, are read besides)."""
    spec = pod.get("spec") or {}
    return value_key(
        (
            [
                (c.get("resources"), c.get("restartPolicy"))
                for c in spec.get("initContainers") or ()
            ],
            [c.get("resources") for c in spec.get("containers") or ()],
            spec.get("overhead"),
        )
    )


def value_key(value: Any) -> bytes:
    """A key equal for equal JSON values: their JSON text (a tenth of `repr`'s cost), or for
    what orjson cannot write, a NUL then their `repr` (no JSON text starts with NUL)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return b"\0" + repr(value).encode()


def pod_limits(
    pod: Any, *, exclude_overhead: bool = False, use_status_resources: bool = False
) -> ResourceList:
    """The pod's effective limits. Overhead is added only to limits that are set and non-zero:
    a resource without a limit stays unlimited."""
    total = _aggregate(pod, lambda c: c.limits, use_status_resources)
    if not exclude_overhead:
        for name, q in _overhead(pod).items():
            if name in total and not total[name].is_zero():
                total[name] = total[name] + q
    return total


def pod_non_zero_requests(pod: Any, *, use_status_resources: bool = False) -> ResourceList:
    """Requests as the scheduler scores them (NodeResourcesFit's scoring strategies,
    NodeResourcesBalancedAllocation): missing cpu/memory requests count as NON_ZERO_DEFAULTS."""
    return pod_requests(
        pod, non_missing=NON_ZERO_DEFAULTS, use_status_resources=use_status_resources
    )


def _aggregate(
    pod: Any,
    resources_of: Callable[[ContainerResources], ResourceList],
    use_status_resources: bool = False,
) -> ResourceList:
    total: ResourceList = {}
    shown = _status_resources(pod) if use_status_resources else {}
    infeasible = shown and (pod.get("status") or {}).get("resize") == "Infeasible"
    for c in containers(pod, "containers"):
        own = resources_of(c)
        status = shown.get(c.name)
        if status is not None:
            own = resources_of(status) if infeasible else maximum(own, resources_of(status))
        total = add(total, own)
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for c in containers(pod, "initContainers"):
        own = resources_of(c)
        if c.is_sidecar:
            total = add(total, own)
            sidecars = add(sidecars, own)
            running = sidecars
        else:
            running = add(own, sidecars)
        init_peak = maximum(init_peak, running)
    return maximum(total, init_peak)


def _status_resources(pod: Any) -> dict[str, ContainerResources]:
    """What the pod's status says its app containers run with, by name."""
    status = pod.get("status") or {}
    if not isinstance(status, Mapping):
        return {}
    found = {}
    for i, entry in enumerate(status.get("containerStatuses") or ()):
        if isinstance(entry, Mapping) and entry.get("resources") is not None:
            where = f"status.containerStatuses[{i}]"
            found[entry.get("name", "")] = _container_resources(entry, "containers", where)
    return found


def _overhead(pod: Any) -> ResourceList:
    return parse_resource_list(pod_spec(pod).get("overhead"), "spec.overhead")


def _container_resources(container: Any, kind: str, field: str) -> ContainerResources:
    if not isinstance(container, Mapping):
        raise ValueError(f"{field}: must be an object, not {brief(container)}")
    name = container.get("name", "")
    if not isinstance(name, str):
        raise ValueError(f"{field}.name: must be a string, not {brief(name)}")
    resources = container.get("resources")
    if resources is None:
        resources = {}
    elif not isinstance(resources, Mapping):
        raise ValueError(f"{field}.resources: must be an object, not {brief(resources)}")
    limits = parse_resource_list(resources.get("limits"), f"{field}.resources.limits")
    requests = parse_resource_list(resources.get("requests"), f"{field}.resources.requests")
    return ContainerResources(
        kind=kind,
        name=name,
        requests={**limits, **requests},
        limits=limits,
        is_sidecar=kind == "initContainers" and container.get("restartPolicy") == "Always",
    )
