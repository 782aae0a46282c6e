"""What an object counts for in a ResourceQuota, as Kubernetes v1.32's quota evaluators
measure it (pkg/quota/v1/evaluator/core and k8s.io/apiserver/pkg/quota/v1/generic).

A pod counts once in `count/pods` while it is stored. Until it ends (phase Succeeded or
Failed, or deleted and past its grace period twice over: the deletion timestamp already
includes the grace) it also counts once in `pods` and for its effective requests and limits:
`requests.cpu` (and its old name `cpu`), `limits.cpu`, likewise memory and ephemeral-storage,
`hugepages-<size>` and `requests.hugepages-<size>`, and `requests.<name>` for extended
resources. Pods match quota scopes (Terminating, NotTerminating, BestEffort, NotBestEffort,
PriorityClass, CrossNamespacePodAffinity).

A Service counts once in `count/services` and `services`, once in `services.loadbalancers`
for a LoadBalancer, and in `services.nodeports` for each of its ports when it is a NodePort or
a LoadBalancer (only the ports asking for a node port by number when the LoadBalancer
allocates none).

A PersistentVolumeClaim counts once in `count/persistentvolumeclaims` and
`persistentvolumeclaims`, and for its storage request (or, when larger, the storage its
status says is allocated) in `requests.storage`; each also under its storage class,
`<class>.storageclass.storage.k8s.io/persistentvolumeclaims` and `…/requests.storage`
(pkg/quota/v1/evaluator/core/persistent_volume_claims.go).

Any other object counts once in `count/<resource>` (`count/<resource>.<group>` outside the
core group), and configmaps, secrets, resourcequotas and replicationcontrollers also under
their old names. Such objects match no scope, so a quota with scopes never counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pinnace.api import labels
from pinnace.api.core.persistentvolume import BETA_STORAGE_CLASS_ANNOTATION
from pinnace.api.core.pod_shape import as_dict, as_list, dict_items
from pinnace.api.core.resourcequota import (
    SCOPE_BEST_EFFORT,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_NOT_TERMINATING,
    SCOPE_PRIORITY_CLASS,
    SCOPE_TERMINATING,
)
from pinnace.clock.rfc3339 import parse_time
from pinnace.resources.lists import ResourceList, add
from pinnace.resources.names import (
    CPU,
    EPHEMERAL_STORAGE,
    LIMITS_PREFIX,
    MEMORY,
    PODS,
    REQUESTS_PREFIX,
    STANDARD_CONTAINER_RESOURCES,
    is_extended_resource_name,
    is_hugepage_resource_name,
    is_native_resource,
    is_quota_hugepage_resource_name,
)
from pinnace.resources.pod import containers, pod_limits, pod_requests, pod_spec
from pinnace.resources.qos import BEST_EFFORT, recorded_qos_class
from pinnace.resources.quantity import Quantity

POD_OBJECT_COUNT = "count/pods"

_ONE = Quantity(1)
_POD_RESOURCES = frozenset(
    {
        POD_OBJECT_COUNT,
        PODS,
        *(
            f"{prefix}{name}"
            for name in STANDARD_CONTAINER_RESOURCES
            for prefix in ("", REQUESTS_PREFIX, LIMITS_PREFIX)
        ),
    }
)
# Quotas on these make every container state its request or limit: a v1.0 mistake kept for
# compatibility, and not extended to any other resource.
_MUST_SPECIFY = frozenset(
    {CPU, MEMORY, *(p + n for p in (REQUESTS_PREFIX, LIMITS_PREFIX) for n in (CPU, MEMORY))}
)
# Core resources first counted under a name without `count/`.
_LEGACY_NAMES = frozenset({"configmaps", "resourcequotas", "replicationcontrollers", "secrets"})
SERVICE_RESOURCES = (
    "count/services",
    "services",
    "services.loadbalancers",
    "services.nodeports",
)

_SCOPE_OPERATORS = {
    "In": labels.IN,
    "NotIn": labels.NOT_IN,
    "Exists": labels.EXISTS,
    "DoesNotExist": labels.DOES_NOT_EXIST,
}


CLAIM_RESOURCES = ("count/persistentvolumeclaims", "persistentvolumeclaims", "requests.storage")
_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
STORAGE = "storage"


def is_pods(resource: str, group: str) -> bool:
    return resource == "pods" and not group


def object_count_name(resource: str, group: str) -> str:
    """`count/configmaps`, `count/deployments.apps`."""
    return f"count/{resource}.{group}" if group else f"count/{resource}"


def _count_names(resource: str, group: str) -> tuple[str, ...]:
    count = object_count_name(resource, group)
    return (count, resource) if not group and resource in _LEGACY_NAMES else (count,)


def usage(
    resource: str, group: str, obj: Mapping[str, Any], *, now: float | None = None
) -> ResourceList:
    """What one object of `resource` (in API `group`) counts for.

    `now` (seconds since the epoch) lets a pod deleted past its grace stop counting; without
    it a pod being deleted counts until it is gone.
    """
    if _is_services(resource, group):
        return _service_usage(obj)
    if _is_claims(resource, group):
        return _claim_usage(obj)
    if not is_pods(resource, group):
        return dict.fromkeys(_count_names(resource, group), _ONE)
    result: ResourceList = {POD_OBJECT_COUNT: _ONE}
    if not _pod_is_charged(obj, now):
        return result
    # As PodRequests with InPlacePodVerticalScaling on: a pod being resized counts the larger
    # of its spec and what its containers run with (only the gate's pods have the latter).
    requests = pod_requests(obj, use_status_resources=True)
    return add(result, _compute_usage(requests, pod_limits(obj, use_status_resources=True)))


def _is_services(resource: str, group: str) -> bool:
    return resource == "services" and not group


def _service_usage(service: Mapping[str, Any]) -> ResourceList:
    """The service evaluator's Usage (pkg/quota/v1/evaluator/core/services.go)."""
    spec = as_dict(service.get("spec"))
    ports = [p for _, p in dict_items(spec.get("ports"))]
    node_ports, balancers = 0, 0
    if spec.get("type") == "NodePort":
        node_ports = len(ports)
    elif spec.get("type") == "LoadBalancer":
        balancers = 1
        allocates = spec.get("allocateLoadBalancerNodePorts") is not False
        node_ports = len(ports) if allocates else sum(1 for p in ports if p.get("nodePort"))
    return {
        "count/services": _ONE,
        "services": _ONE,
        "services.loadbalancers": Quantity(balancers),
        "services.nodeports": Quantity(node_ports),
    }


def _is_claims(resource: str, group: str) -> bool:
    return resource == "persistentvolumeclaims" and not group


def _claim_usage(claim: Mapping[str, Any]) -> ResourceList:
    """The claim evaluator's Usage: the request, or what is allocated when that is larger
    (as with RecoverVolumeExpansionFailure, beta in v1.32)."""
    spec = as_dict(claim.get("spec"))
    requested = as_dict(as_dict(spec.get("resources")).get("requests")).get(STORAGE)
    allocated = as_dict(as_dict(claim.get("status")).get("allocatedResources")).get(STORAGE)
    amounts = [Quantity(q) for q in (requested, allocated) if isinstance(q, str)]
    result: ResourceList = {"count/persistentvolumeclaims": _ONE, "persistentvolumeclaims": _ONE}
    storage = max(amounts, default=None)
    if storage is not None:
        result["requests.storage"] = storage
    annotations = as_dict(as_dict(claim.get("metadata")).get("annotations"))
    # GetPersistentVolumeClaimClass: the beta annotation when it is there, even empty.
    class_name = annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if class_name is None:
        class_name = spec.get("storageClassName")
    if isinstance(class_name, str) and class_name:
        prefix = class_name + _CLASS_SUFFIX
        result[prefix + "persistentvolumeclaims"] = _ONE
        if storage is not None:
            result[prefix + "requests.storage"] = storage
    return result


def _pod_is_charged(pod: Mapping[str, Any], now: float | None) -> bool:
    if as_dict(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
        return False
    until = _charged_until(pod)
    return now is None or until is None or not now > until


def charge_ends(pod: Mapping[str, Any], now: float) -> float | None:
    """When a pod that counts at `now` stops counting though nothing is written: past its
    deletion timestamp plus its grace period (QuotaV1Pod), as seconds since the epoch; None
    for a pod not being deleted, or that no longer counts."""
    until = _charged_until(pod)
    return until if until is not None and _pod_is_charged(pod, now) else None


def _charged_until(pod: Mapping[str, Any]) -> float | None:
    meta = as_dict(pod.get("metadata"))
    deleted_at, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if isinstance(deleted_at, str) and isinstance(grace, int):
        return parse_time(deleted_at) + grace
    return None


def _compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    result: ResourceList = {PODS: _ONE}
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
        if name in requests:
            result[name] = result[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            result[LIMITS_PREFIX + name] = limits[name]
    for name, quantity in requests.items():
        if is_hugepage_resource_name(name):
            result[name] = quantity
        if is_hugepage_resource_name(name) or is_extended_resource_name(name):
            result[REQUESTS_PREFIX + name] = quantity
    return result


def matching_resources(resource: str, group: str, names: Iterable[str]) -> list[str]:
    """Those of `names` (a quota's hard resources) that objects of `resource` count for."""
    if _is_services(resource, group):
        return [name for name in names if name in SERVICE_RESOURCES]
    if _is_claims(resource, group):
        return [
            name
            for name in names
            if name in CLAIM_RESOURCES
            or (
                _CLASS_SUFFIX in name
                and name.endswith(("/persistentvolumeclaims", "/requests.storage"))
            )
        ]
    if not is_pods(resource, group):
        counted = _count_names(resource, group)
        return [name for name in names if name in counted]
    return [
        name
        for name in names
        if name in _POD_RESOURCES
        or is_quota_hugepage_resource_name(name)
        or (not is_native_resource(name) and name.startswith(REQUESTS_PREFIX))
    ]


def scope_selectors(quota: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The quota's scopes as selector requirements: `spec.scopes` (as Exists), then
    `spec.scopeSelector.matchExpressions`."""
    spec = as_dict(quota.get("spec"))
    selectors = [
        {"scopeName": scope, "operator": "Exists"} for scope in as_list(spec.get("scopes"))
    ]
    return selectors + [
        e for _, e in dict_items(as_dict(spec.get("scopeSelector")).get("matchExpressions"))
    ]


def matches_scope(
    resource: str, group: str, selector: Mapping[str, Any], obj: Mapping[str, Any]
) -> bool:
    """Whether the object is in one scope; raises labels.SelectorError for a PriorityClass
    selector Kubernetes cannot build."""
    if not is_pods(resource, group):
        return False
    scope = selector.get("scopeName")
    if scope in (SCOPE_TERMINATING, SCOPE_NOT_TERMINATING):
        return _is_terminating(obj) == (scope == SCOPE_TERMINATING)
    if scope in (SCOPE_BEST_EFFORT, SCOPE_NOT_BEST_EFFORT):
        return (recorded_qos_class(obj) == BEST_EFFORT) == (scope == SCOPE_BEST_EFFORT)
    if scope == SCOPE_PRIORITY_CLASS:
        return _matches_priority_class(selector, obj)
    if scope == SCOPE_CROSS_NAMESPACE_POD_AFFINITY:
        return _uses_cross_namespace_affinity(obj)
    return False


def _is_terminating(pod: Mapping[str, Any]) -> bool:
    deadline = pod_spec(pod).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= 0


def _matches_priority_class(selector: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    class_name = pod_spec(pod).get("priorityClassName") or ""
    operator = selector.get("operator")
    if operator == "Exists":
        return bool(class_name)
    op = _SCOPE_OPERATORS.get(operator) if isinstance(operator, str) else None
    if op is None:
        raise labels.SelectorError(f'"{operator}" is not a valid scope selector operator')
    requirement = labels.new_requirement(
        SCOPE_PRIORITY_CLASS, op, [v for v in as_list(selector.get("values")) if isinstance(v, str)]
    )
    return requirement.matches({SCOPE_PRIORITY_CLASS: class_name} if class_name else {})


def _uses_cross_namespace_affinity(pod: Mapping[str, Any]) -> bool:
    return any(
        term.get("namespaces") or term.get("namespaceSelector") is not None
        for term in _pod_affinity_terms(pod)
    )


def _pod_affinity_terms(pod: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    affinity = as_dict(pod_spec(pod).get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = as_dict(affinity.get(kind))
        for _, term in dict_items(terms.get("requiredDuringSchedulingIgnoredDuringExecution")):
            yield term
        for _, weighted in dict_items(terms.get("preferredDuringSchedulingIgnoredDuringExecution")):
            yield as_dict(weighted.get("podAffinityTerm"))


def constraints(resource: str, group: str, required: Iterable[str], obj: Mapping[str, Any]) -> str:
    """Why the object cannot be counted by a quota on `required`, or "": a pod whose
    containers leave out a cpu or memory request or limit such a quota tracks."""
    wanted = _MUST_SPECIFY.intersection(required)
    if not is_pods(resource, group) or not wanted:
        return ""
    missing: dict[str, set[str]] = {}
    for c in containers(obj):
        for name in wanted - _compute_usage(c.requests, c.limits).keys():
            missing.setdefault(name, set()).add(c.name)
    if not missing:
        return ""
    return "must specify " + "; ".join(
        f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)
    )
