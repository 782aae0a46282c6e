"""ResourceQuota: admission as kube-apiserver v1.32's plugin, recalculation as the resource
quota controller's sync.

`admit` runs in the validating phase, after the object was validated and before it is
stored. It finds the namespace's quotas that track the object (by `status.hard` and scopes),
refuses the object when one of them cannot take it, and otherwise returns those quotas with
the object's usage added to `status.used`; the server writes them with a resourceVersion
precondition, and on a conflict reads the quotas again and calls `admit` again.

Creates are charged, and of updates (`charges_update`) pods' resizes (the `resize`
subresource, served while InPlacePodVerticalScaling is on) and Services' and
PersistentVolumeClaims' own writes, by what they add: a Service's type can change, a claim's
request can grow; v1.32's evaluators for plain object counts handle no update. Deletes free
nothing here; `recalculate` measures a quota from scratch, as the controller does after
deletes and on a schedule.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.api import labels, status
from pinnace.apiserver.admission.errors import forbidden
from pinnace.apiserver.admission.quota_usage import (
    constraints,
    is_pods,
    matches_scope,
    matching_resources,
    scope_selectors,
    usage,
)
from pinnace.resources.lists import ResourceList, add, parse_resource_list
from pinnace.resources.quantity import Quantity

__all__ = [
    "IGNORED_RESOURCES",
    "admit",
    "charges_update",
    "recalculate",
    "tracked_resources",
    "usage",
]

# (group, resource) that quota never counts: virtual resources, and events.
IGNORED_RESOURCES = frozenset(
    {
        ("", "bindings"),
        ("", "componentstatuses"),
        ("authentication.k8s.io", "tokenreviews"),
        ("authentication.k8s.io", "selfsubjectreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectaccessreviews"),
        ("authorization.k8s.io", "localsubjectaccessreviews"),
        ("authorization.k8s.io", "selfsubjectrulesreviews"),
        ("", "events"),
        ("events.k8s.io", "events"),
    }
)


def charges_update(resource: str, group: str, subresource: str) -> bool:
    """Whether an update of `resource` through `subresource` ("" for the object itself) is
    charged what it adds: the v1.32 evaluators that handle updates."""
    if is_pods(resource, group):
        return subresource == "resize"
    return not group and not subresource and resource in ("services", "persistentvolumeclaims")


def admit(
    resource: str,
    group: str,
    operation: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    quotas: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The quotas whose `status.used` must change for the object to be stored, as new dicts
    (others unchanged); raises 403 when a quota refuses it. `quotas` are the namespace's, in
    the order they are checked. An update (one `charges_update` allows: `old` is the stored
    object) is charged what it adds to `old`'s usage, resource by resource."""
    if not (operation == "CREATE" or (operation == "UPDATE" and old is not None)):
        return []
    if (group, resource) in IGNORED_RESOURCES:
        return []
    if not quotas:
        return []
    charged = [q for q in quotas if _tracks(resource, group, q, obj)]
    delta = usage(resource, group, obj)
    negative = sorted(name for name, q in delta.items() if q.sign() < 0)
    if negative:
        raise _forbidden(
            resource, group, obj, f"quota usage is negative for resource(s): {','.join(negative)}"
        )
    if old is not None:
        previous = usage(resource, group, old)
        delta = {
            name: max(q - previous[name], Quantity(0)) if name in previous else q
            for name, q in delta.items()
        }
    delta = {name: q for name, q in delta.items() if not q.is_zero()}
    if not charged or not delta:
        return []
    changed = []
    for quota in charged:
        new_used = _charge(resource, group, obj, quota, delta)
        if new_used != _status_list(quota, "used"):
            changed.append(_with_status(quota, used=new_used))
    return changed


def _tracks(resource: str, group: str, quota: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Whether the quota counts the object; raises 403 when it cannot (missing requests, or
    no usage recorded yet)."""
    try:
        in_scope = all(
            matches_scope(resource, group, selector, obj) for selector in scope_selectors(quota)
        )
    except labels.SelectorError as e:
        raise status.internal_error(
            f"error matching scopes of quota {_name(quota)}, err: {e}"
        ) from None
    tracked = matching_resources(resource, group, _status_list(quota, "hard"))
    if not tracked or not in_scope:
        return False
    problem = constraints(resource, group, tracked, obj)
    if problem:
        raise _forbidden(resource, group, obj, f"failed quota: {_name(quota)}: {problem}")
    used = _status_list(quota, "used")
    if any(name not in used for name in tracked):
        raise _forbidden(
            resource,
            group,
            obj,
            f"status unknown for quota: {_name(quota)}, resources: {','.join(sorted(tracked))}",
        )
    return True


def _charge(
    resource: str,
    group: str,
    obj: Mapping[str, Any],
    quota: Mapping[str, Any],
    delta: ResourceList,
) -> ResourceList:
    """The quota's usage with the object's added; raises 403 when that exceeds a limit."""
    hard, used = _status_list(quota, "hard"), _status_list(quota, "used")
    requested = _mask(delta, hard)
    new_used = add(used, requested)
    exceeded = [name for name in requested if new_used[name] > hard[name]]
    if exceeded:
        raise _forbidden(
            resource,
            group,
            obj,
            f"exceeded quota: {_name(quota)}, requested: {_pretty(requested, exceeded)}, "
            f"used: {_pretty(used, exceeded)}, limited: {_pretty(hard, exceeded)}",
        )
    return new_used


def recalculate(
    quota: Mapping[str, Any],
    objects_by_resource: Mapping[str, list[dict[str, Any]]],
    *,
    now: float | None = None,
) -> dict[str, Any]:
    """The quota with `status.hard` set to `spec.hard` and `status.used` measured from the
    namespace's objects, keyed as `tracked_resources` names them (pass an empty list for a
    kind with no objects). A tracked resource whose kind is not given keeps its old usage.
    `now` lets pods deleted past their grace stop counting (see `quota_usage.usage`)."""
    hard = _spec_hard(quota)
    selectors = scope_selectors(quota)
    measured: ResourceList = {}
    for key, objects in objects_by_resource.items():
        resource, group = _split_key(key)
        tracked = matching_resources(resource, group, hard)
        if not tracked or (group, resource) in IGNORED_RESOURCES:
            continue
        total: ResourceList = dict.fromkeys(tracked, Quantity(0))
        for obj in objects:
            if _in_scopes(resource, group, selectors, obj):
                total = add(total, usage(resource, group, obj, now=now))
        measured = add(measured, _mask(total, tracked))
    used = _mask({**_status_list(quota, "used"), **measured}, hard)
    return _with_status(quota, hard=hard, used=used)


def _in_scopes(
    resource: str, group: str, selectors: list[dict[str, Any]], obj: Mapping[str, Any]
) -> bool:
    try:
        return all(matches_scope(resource, group, s, obj) for s in selectors)
    except labels.SelectorError:
        return False  # v1.32 stops counting at such a selector; Pinnace counts nothing for it


def tracked_resources(quota: Mapping[str, Any]) -> list[str]:
    """The resources whose objects `recalculate` needs for this quota: `pods`, `configmaps`,
    `apps/deployments` (group/plural, the group left out for the core group); a claim's
    `requests.storage` or per-class resources need `persistentvolumeclaims`."""
    keys = set()
    for name in _spec_hard(quota):
        if matching_resources("pods", "", [name]):
            keys.add("pods")
        elif matching_resources("services", "", [name]):
            keys.add("services")
        elif matching_resources("persistentvolumeclaims", "", [name]):
            keys.add("persistentvolumeclaims")
        elif name.startswith("count/"):
            resource, _, group = name.removeprefix("count/").partition(".")
            keys.add(f"{group}/{resource}" if group else resource)
        elif matching_resources(name, "", [name]):
            keys.add(name)
    return sorted(k for k in keys if _split_key(k)[::-1] not in IGNORED_RESOURCES)


def _split_key(key: str) -> tuple[str, str]:
    group, _, resource = key.rpartition("/")
    return resource, group


def _name(quota: Mapping[str, Any]) -> str:
    meta = quota.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _status_list(quota: Mapping[str, Any], list_name: str) -> ResourceList:
    quota_status = quota.get("status")
    raw = quota_status.get(list_name) if isinstance(quota_status, Mapping) else None
    return parse_resource_list(raw, f"status.{list_name}")


def _spec_hard(quota: Mapping[str, Any]) -> ResourceList:
    spec = quota.get("spec")
    return parse_resource_list(spec.get("hard") if isinstance(spec, Mapping) else None, "spec.hard")


def _with_status(quota: Mapping[str, Any], **lists: ResourceList) -> dict[str, Any]:
    updated = copy.deepcopy(dict(quota))
    quota_status = updated.get("status")
    if not isinstance(quota_status, dict):
        quota_status = updated["status"] = {}
    for list_name, resources in lists.items():
        quota_status[list_name] = {name: str(q) for name, q in sorted(resources.items())}
    return updated


def _mask(resources: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {name: q for name, q in resources.items() if name in keep}


def _pretty(resources: Mapping[str, Quantity], names: Iterable[str]) -> str:
    return ",".join(f"{name}={resources[name]}" for name in sorted(names) if name in resources)


def _forbidden(resource: str, group: str, obj: Mapping[str, Any], why: str) -> status.StatusError:
    return forbidden(resource, obj, why, group)
