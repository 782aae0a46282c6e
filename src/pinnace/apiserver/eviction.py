"""pods/eviction: a delete that honours the pod's PodDisruptionBudget, as v1.32's
EvictionREST.

Pods that are already disrupted (Pending, finished, being deleted) are deleted at once. Otherwise
the one budget that selects the pod must allow a disruption: it is decremented (and the pod
recorded in status.disruptedPods for the disruption controller) before the pod is deleted; a
budget that allows none answers 429 so clients such as `kubectl drain` retry. An unready pod may
go without spending the budget while enough healthy pods remain, or always under
unhealthyPodEvictionPolicy AlwaysAllow. Before it is deleted (unless in a dry run) the pod is
marked with the DisruptionTarget condition, reason EvictionByEvictionAPI, through its status,
as v1.32's addConditionAndDeletePod does, so that whoever watches it can tell why it went.

Before EvictionREST, the create handler's admission sees the Eviction (of `pods` with
subresource `eviction`): NamespaceLifecycle refuses one in a terminating namespace (403, cause
NamespaceTerminating, which `kubectl drain` takes as the pod going anyway), and NodeRestriction
lets a node evict only the pods bound to it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pinnace.api import catalog, status
from pinnace.api.decode import decode
from pinnace.api.kind import Kind
from pinnace.api.labels import selector_from_dict
from pinnace.api.objects import Object, meta
from pinnace.api.options import DeleteOptions
from pinnace.apiserver.keys import list_prefix, object_key
from pinnace.apiserver.server import check_delete_preconditions
from pinnace.store import ConflictError

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

MAX_DISRUPTED_POD_SIZE = 2000
EVICTION_RETRIES = 5
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
STATUS_SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
EVICTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}
EVICTION = Kind("policy", "v1", "Eviction", "evictions", namespaced=True, model="V1Eviction")
"""The body's kind, decoded as the create handler decodes any body."""


async def evict(
    server: APIServer, namespace: str, name: str, body: Any, dry_run: Sequence[str] = ()
) -> Object:
    """`dry_run`: the request's dryRun values (from the query), which the body's
    deleteOptions.dryRun, when it has some, must repeat."""
    eviction = _decoded(body)
    server.check_namespace(EVICTION, eviction, namespace)
    pods = catalog.kind("", "pods")
    try:
        target: Object | None = await server.get(pods, namespace, name)
    except status.StatusError as e:
        if e.code != 404:
            raise
        target = None
    # The pod it acts on goes as the old object: NodeRestriction reads its nodeName.
    await server.admission.admit("CREATE", pods, eviction, target, "eviction")
    if (eviction.get("metadata") or {}).get("name") != name:
        raise status.bad_request("name in URL does not match name in Eviction object")
    options = _delete_options(eviction.get("deleteOptions"), list(dry_run))
    pod = target if target is not None else await server.get(pods, namespace, name)
    if _can_ignore_budget(pod):
        if _enforce_resource_version(pod) and not options.precondition_resource_version:
            rv = pod["metadata"]["resourceVersion"]
            options = dataclasses.replace(options, precondition_resource_version=rv)
        await _mark_and_delete(server, namespace, name, options)
        return dict(STATUS_SUCCESS)
    budgets = await _budgets_selecting(server, pod)
    if len(budgets) > 1:
        # EvictionREST answers a Failure Status, which the handler's finishRequest makes the
        # request's error: a 500, to the HTTP client and the in-process one alike.
        raise status.StatusError(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support.",
        )
    unready_may_go = bool(budgets) and _unready_may_go(pod, budgets[0])
    if budgets and not unready_may_go:
        await _spend(server, namespace, name, budgets[0], options.dry_run)
    user_precondition = bool(options.precondition_resource_version)
    if unready_may_go and not user_precondition:
        # The pod must still be unready when it goes, or the budget would be bypassed.
        rv = pod["metadata"]["resourceVersion"]
        options = dataclasses.replace(options, precondition_resource_version=rv)
    try:
        await _mark_and_delete(server, namespace, name, options)
    except status.StatusError as e:
        if e.code == 409 and unready_may_go and not user_precondition:
            raise _still_processing(budgets[0]["metadata"]["name"]) from None
        raise
    return dict(STATUS_SUCCESS)


async def _mark_and_delete(
    server: APIServer, namespace: str, name: str, options: DeleteOptions
) -> None:
    """addConditionAndDeletePod: the pod's status gets the DisruptionTarget condition (on the
    latest pod, which must still meet the preconditions), then the pod is deleted; a
    resourceVersion precondition moves on to the marked pod's."""
    pods = catalog.kind("", "pods")
    if not options.dry_run:
        now = server.clock.now_rfc3339()

        def mark(pod: Object) -> Object:
            check_delete_preconditions(pods, name, pod, options)
            _set_condition(pod, {**EVICTION_TARGET, "lastTransitionTime": now})
            return pod

        marked = await server.modify(pods, namespace, name, mark, subresource="status")
        if options.precondition_resource_version:
            rv = marked.obj["metadata"]["resourceVersion"]
            options = dataclasses.replace(options, precondition_resource_version=rv)
    await server.delete(pods, namespace, name, options)


def _set_condition(pod: Object, condition: Object) -> None:
    """podutil.UpdatePodCondition: add or replace the condition of its type; one whose status
    does not change keeps its lastTransitionTime."""
    s = pod.setdefault("status", {})
    conditions = s["conditions"] = list(s.get("conditions") or [])
    for i, old in enumerate(conditions):
        if old.get("type") == condition["type"]:
            if old.get("status") == condition["status"]:
                condition = {**condition, "lastTransitionTime": old.get("lastTransitionTime")}
            conditions[i] = condition
            return
    conditions.append(condition)


def _decoded(body: Any) -> Object:
    """The Eviction in `body`: policy/v1, or policy/v1beta1, which v1.32 still takes here and
    which has the same fields. What does not decode is a 400, as for any other body."""
    if isinstance(body, dict) and body.get("apiVersion") == "policy/v1beta1":
        body = {**body, "apiVersion": EVICTION.api_version}
    return decode(body, EVICTION).obj


def _delete_options(raw: Any, dry_run: list[str]) -> DeleteOptions:
    """The body's deleteOptions with the request's dryRun (propagateDryRun): the body's own,
    when it has some, must be the same, or the request fails with the plain error EvictionREST
    returns, which the handler answers as a 500 without a reason."""
    raw = raw or {}
    body_dry_run = raw.get("dryRun") or []
    if dry_run and body_dry_run and dry_run != body_dry_run:
        raise status.StatusError(
            500,
            "",
            "Non-matching dry-run options in request and content: "
            f"{_go_list(dry_run)} and {_go_list(body_dry_run)}",
        )
    preconditions = raw.get("preconditions") or {}
    grace = raw.get("gracePeriodSeconds")
    return DeleteOptions(
        grace_period_seconds=grace if isinstance(grace, int) else None,
        propagation_policy=raw.get("propagationPolicy") or "",
        precondition_uid=preconditions.get("uid") or "",
        precondition_resource_version=preconditions.get("resourceVersion") or "",
        dry_run=bool(dry_run or body_dry_run),
    )


def _go_list(values: list[str]) -> str:
    """A []string as Go's %v prints it."""
    return "[" + " ".join(values) + "]"


def _can_ignore_budget(pod: Object) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def _enforce_resource_version(pod: Object) -> bool:
    """A Pending pod is deleted only as read: it must not turn ready in between."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _is_ready(pod: Object) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _unready_may_go(pod: Object, budget: Object) -> bool:
    if _is_ready(pod):
        return False
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    s = budget.get("status") or {}
    return s.get("currentHealthy", 0) >= s.get("desiredHealthy", 0) > 0


async def _budgets_selecting(server: APIServer, pod: Object) -> list[Object]:
    kind = catalog.kind("policy", "poddisruptionbudgets")
    labels = pod["metadata"].get("labels") or {}
    listed = await server.store.list(list_prefix(kind, pod["metadata"]["namespace"]))
    selected = []
    for budget in listed.items:
        raw = (budget.get("spec") or {}).get("selector")
        try:
            selector = selector_from_dict(raw)
        except ValueError:
            continue  # an invalid selector matches no pod
        # policy/v1: `{}` matches every pod of the namespace, an absent selector none.
        if selector.matches(labels):
            selected.append(budget)
    return selected


async def _spend(
    server: APIServer, namespace: str, pod_name: str, budget: Object, dry_run: bool
) -> None:
    kind = catalog.kind("policy", "poddisruptionbudgets")
    name = budget["metadata"]["name"]
    for _ in range(EVICTION_RETRIES):
        _check(budget)
        updated = dict(budget)
        s = updated["status"] = dict(budget.get("status") or {})
        s["disruptionsAllowed"] = s.get("disruptionsAllowed", 0) - 1
        if s["disruptionsAllowed"] == 0:
            _set_disruption_allowed_false(s, server.clock.now_rfc3339())
        if dry_run:
            return
        s["disruptedPods"] = {
            **(s.get("disruptedPods") or {}),
            pod_name: server.clock.now_rfc3339(),
        }
        updated["metadata"] = dict(meta(updated))
        try:
            await server.store.update(
                object_key(kind, namespace, name),
                updated,
                int(budget["metadata"]["resourceVersion"]),
            )
            return
        except ConflictError as e:
            if e.current is None:
                raise status.not_found(kind.plural, name, kind.group) from None
            budget = e.current
    raise status.timeout(f'couldn\'t update PodDisruptionBudget "{name}" due to conflicts', 10)


def _check(budget: Object) -> None:
    name = budget["metadata"]["name"]
    s = budget.get("status") or {}
    if s.get("observedGeneration", 0) < budget["metadata"].get("generation", 0):
        raise _still_processing(name)
    if s.get("disruptionsAllowed", 0) < 0:
        raise status.forbidden(
            "poddisruptionbudget", name, "pdb disruptions allowed is negative", "policy"
        )
    if len(s.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise status.forbidden(
            "poddisruptionbudget",
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            "policy",
        )
    if s.get("disruptionsAllowed", 0) == 0:
        raise _too_many(
            0,
            f"The disruption budget {name} needs {s.get('desiredHealthy', 0)} healthy pods "
            f"and has {s.get('currentHealthy', 0)} currently",
        )


def _still_processing(name: str) -> status.StatusError:
    return _too_many(10, f"The disruption budget {name} is still being processed by the server.")


def _too_many(retry_after: int, cause: str) -> status.StatusError:
    err = status.too_many_requests(VIOLATION, retry_after)
    err.details = {
        **(err.details or {}),
        "causes": [{"reason": "DisruptionBudget", "message": cause}],
    }
    return err


def _set_disruption_allowed_false(s: dict[str, Any], now: str) -> None:
    conditions = [c for c in s.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
    conditions.append(
        {
            "type": "DisruptionAllowed",
            "status": "False",
            "reason": "InsufficientPods",
            "message": "",
            "lastTransitionTime": now,
            "observedGeneration": s.get("observedGeneration", 0),
        }
    )
    s["conditions"] = conditions
