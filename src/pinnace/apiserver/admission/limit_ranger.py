"""LimitRanger, as kube-apiserver v1.32's admission plugin of that name, for pods and
PersistentVolumeClaims.

`mutate` (the mutating phase) gives every container and init container the requests and
limits it lacks from the namespace's `Container` LimitRange items (`defaultRequest`,
`default`) and records what it set in the `kubernetes.io/limit-ranger` annotation. `validate`
(the validating phase) checks each LimitRange's `min`, `max` and `maxLimitRequestRatio`:
`Container` items against every container and init container, `Pod` items against the pod's
effective requests and limits (without overhead), `PersistentVolumeClaim` items' `min` and
`max` against a claim's storage request (claims get no defaults). `admit` does both.

Pods are handled when created (v1.32 skips pod updates: containers cannot change), claims
when created or updated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pinnace.api.core.limitrange import LIMIT_TYPE_CONTAINER, LIMIT_TYPE_POD, LIMIT_TYPE_PVC
from pinnace.api.core.pod_shape import as_dict, child_dict, dict_items
from pinnace.apiserver.admission.errors import aggregate, forbidden
from pinnace.resources.lists import ResourceList, parse_resource_list
from pinnace.resources.pod import containers, pod_limits, pod_requests
from pinnace.resources.quantity import Quantity

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"

_POD_KINDS = ("Pod", "pods")
_CLAIM_KINDS = ("PersistentVolumeClaim", "persistentvolumeclaims")
# resource.MaxMilliValue: beyond it, Kubernetes compares whole units instead of milli-units.
_MAX_MILLI_VALUE = (2**63 - 1) // 1000
_ZERO = Quantity(0)


def admit(kind_name: str, obj: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> None:
    """Default, then check, a pod being created (`kind_name` "Pod" or "pods"); raises 403."""
    mutate(kind_name, obj, limit_ranges)
    validate(kind_name, obj, limit_ranges)


def mutate(kind_name: str, obj: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> None:
    """Fill in missing container requests and limits from each LimitRange in turn."""
    spec = child_dict(obj, "spec")
    if kind_name not in _POD_KINDS or spec is None:
        return
    for limit_range in limit_ranges:
        requests, limits = _container_defaults(limit_range)
        notes: list[str] = []
        for list_name, label in (("containers", "container"), ("initContainers", "init container")):
            for _, container in dict_items(spec.get(list_name)):
                notes += _default_container(container, label, requests, limits)
        if notes:
            meta = obj.setdefault("metadata", {})
            annotations = meta.get("annotations") or {}
            # Each LimitRange that sets something replaces the note of the one before.
            meta["annotations"] = {
                **annotations,
                LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: " + "; ".join(notes),
            }


def _items(limit_range: Mapping[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return dict_items(as_dict(limit_range.get("spec")).get("limits"))


def _container_defaults(limit_range: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for _, item in _items(limit_range):
        if item.get("type") == LIMIT_TYPE_CONTAINER:
            requests.update(_canonical(item.get("defaultRequest")))
            limits.update(_canonical(item.get("default")))
    return requests, limits


def _canonical(raw: Any) -> dict[str, str]:
    return {name: str(q) for name, q in parse_resource_list(raw).items()}


def _default_container(
    container: dict[str, Any], label: str, requests: dict[str, str], limits: dict[str, str]
) -> list[str]:
    resources = container.get("resources")
    if resources is None:
        resources = {}
    if not isinstance(resources, dict):
        return []  # validation reports it
    notes = []
    lists = (("requests", requests, "request"), ("limits", limits, "limit"))
    for list_name, defaults, what in lists:
        current = resources.get(list_name) or {}
        if not isinstance(current, dict):
            continue
        missing = sorted(name for name in defaults if name not in current)
        if missing:
            resources[list_name] = {**current, **{name: defaults[name] for name in missing}}
            notes.append(f"{', '.join(missing)} {what} for {label} {container.get('name', '')}")
    if notes:
        container["resources"] = resources
    return notes


def validate(kind_name: str, obj: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> None:
    """Check the pod or claim against each LimitRange; the first one it violates raises 403
    listing all that LimitRange's violations."""
    problems_of: Callable[[dict[str, Any], Mapping[str, Any]], list[str]]
    if kind_name in _POD_KINDS:
        resource, problems_of = "pods", _pod_problems
    elif kind_name in _CLAIM_KINDS:
        resource, problems_of = "persistentvolumeclaims", _claim_problems
    else:
        return
    for limit_range in limit_ranges:
        try:
            problems = problems_of(obj, limit_range)
        except ValueError:
            return  # a malformed object: validation reports it
        if problems:
            raise forbidden(resource, obj, aggregate(problems))


def _pod_problems(pod: dict[str, Any], limit_range: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for _, item in _items(limit_range):
        kind = item.get("type")
        if kind == LIMIT_TYPE_CONTAINER:
            for c in containers(pod):
                problems += _item_problems(item, kind, c.requests, c.limits, _CHECKS)
        elif kind == LIMIT_TYPE_POD:
            requests = pod_requests(pod, exclude_overhead=True)
            limits = pod_limits(pod, exclude_overhead=True)
            problems += _item_problems(item, kind, requests, limits, _CHECKS)
    return problems


def _claim_problems(claim: dict[str, Any], limit_range: Mapping[str, Any]) -> list[str]:
    """PersistentVolumeClaimValidateLimitFunc: only the claim's requests are the user's."""
    resources = as_dict(as_dict(claim.get("spec")).get("resources"))
    requests = parse_resource_list(resources.get("requests"))
    problems: list[str] = []
    for _, item in _items(limit_range):
        if item.get("type") == LIMIT_TYPE_PVC:
            problems += _item_problems(item, LIMIT_TYPE_PVC, requests, {}, _CLAIM_CHECKS)
    return problems


Check = Callable[[str, str, Quantity, ResourceList, ResourceList], str | None]


def _item_problems(
    item: Mapping[str, Any],
    kind: str,
    requests: ResourceList,
    limits: ResourceList,
    checks: tuple[tuple[str, Check], ...],
) -> list[str]:
    # Go walks each list as a map, in random order; Pinnace goes by resource name.
    found = []
    for list_name, check in checks:
        for name, enforced in sorted(parse_resource_list(item.get(list_name)).items()):
            problem = check(kind, name, enforced, requests, limits)
            if problem:
                found.append(problem)
    return found


def _comparable(*quantities: Quantity) -> list[int]:
    """Milli-units when every value allows, else whole units (requestLimitEnforcedValues)."""
    values = [q.value() for q in quantities]
    if all(v <= _MAX_MILLI_VALUE for v in values):
        return [q.milli_value() for q in quantities]
    return values


def _min_problem(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    request_v, limit_v, enforced_v = _comparable(request or _ZERO, limit or _ZERO, enforced)
    prefix = f"minimum {name} usage per {kind} is {enforced}"
    if request is None:
        return f"{prefix}.  No request is specified"
    if request_v < enforced_v:
        return f"{prefix}, but request is {request}"
    if limit is not None and limit_v < enforced_v:
        return f"{prefix}, but limit is {limit}"
    return None


def _max_problem(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    request_v, limit_v, enforced_v = _comparable(request or _ZERO, limit or _ZERO, enforced)
    prefix = f"maximum {name} usage per {kind} is {enforced}"
    if limit is None:
        return f"{prefix}.  No limit is specified"
    if limit_v > enforced_v:
        return f"{prefix}, but limit is {limit}"
    if request is not None and request_v > enforced_v:
        return f"{prefix}, but request is {request}"
    return None


def _max_request_problem(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> str | None:
    """maxRequestConstraint: the max against the request, for kinds without limits."""
    request = requests.get(name)
    prefix = f"maximum {name} usage per {kind} is {enforced}"
    if request is None:
        return f"{prefix}.  No request is specified"
    request_v, enforced_v = _comparable(request, enforced)
    if request_v > enforced_v:
        return f"{prefix}, but request is {request}"
    return None


def _ratio_problem(
    kind: str, name: str, enforced: Quantity, requests: ResourceList, limits: ResourceList
) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    request_v, limit_v, _ = _comparable(request or _ZERO, limit or _ZERO, enforced)
    prefix = f"{name} max limit to request ratio per {kind} is {enforced}"
    if request is None or request_v == 0:
        return f"{prefix}, but no request is specified or request is 0"
    if limit is None or limit_v == 0:
        return f"{prefix}, but no limit is specified or limit is 0"
    # float64 arithmetic, as Go does it: the comparison can round, and the ratio is shown
    # with %f.
    observed = float(limit_v) / float(request_v)
    shown = observed
    allowed = float(enforced.value())
    if enforced.value() <= _MAX_MILLI_VALUE:
        observed *= 1000
        allowed = float(enforced.milli_value())
    if observed > allowed:
        return f"{prefix}, but provided ratio is {shown:f}"
    return None


_CHECKS: tuple[tuple[str, Check], ...] = (
    ("min", _min_problem),
    ("max", _max_problem),
    ("maxLimitRequestRatio", _ratio_problem),
)
_CLAIM_CHECKS: tuple[tuple[str, Check], ...] = (
    ("min", _min_problem),
    ("max", _max_request_problem),
)
