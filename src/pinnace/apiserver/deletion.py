"""What a DELETE does to an object, as the generic registry's BeforeDelete and the pod
strategy's graceful deletion decide it: remove it now, or mark it and let someone finish.

An object with finalizers gets `deletionTimestamp` and stays until its last finalizer is
gone. A pod bound to a node and not finished is deleted gracefully: it gets a deletion
timestamp `grace` seconds ahead and stays until the node agent confirms its containers have
stopped (a delete with grace 0). A second delete may only shorten the grace period.
"""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api import field, status
from pinnace.api.kind import Kind
from pinnace.api.meta import FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS
from pinnace.api.objects import Object, meta
from pinnace.api.options import DeleteOptions
from pinnace.clock.rfc3339 import format_time

DEFAULT_TERMINATION_GRACE_PERIOD = 30
PROPAGATION_POLICIES = ("Orphan", "Background", "Foreground")


@dataclass(frozen=True)
class Decision:
    remove_now: bool
    """Delete from the store now (after storing `updated`, a marked copy, if any); otherwise
    store `updated`, if any."""
    updated: Object | None = None


def graceful_period(kind: Kind, obj: Object, options: DeleteOptions) -> int:
    """The grace period the object gets: pods' rules, 0 for every other kind."""
    if not _is_pod(kind):
        return 0
    spec = obj.get("spec") or {}
    if options.grace_period_seconds is not None:
        grace = options.grace_period_seconds
    else:
        grace = spec.get("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
    if not spec.get("nodeName"):
        return 0  # never scheduled: nothing is running that needs time to stop
    if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    # A negative period is stored as 1 s, as kube-apiserver does, so the node agent still
    # gets to stop the containers.
    return 1 if grace < 0 else int(grace)


def validate_options(options: DeleteOptions) -> None:
    """apimachinery's ValidateDeleteOptions (dryRun is checked as the options are read)."""
    errors: list[field.FieldError] = []
    policy = options.propagation_policy
    if options.orphan_dependents is not None and policy:
        errors.append(
            field.invalid(
                "propagationPolicy",
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            )
        )
    if policy and policy not in PROPAGATION_POLICIES:
        errors.append(
            field.not_supported(
                "propagationPolicy", policy, ("Foreground", "Background", "Orphan", "nil")
            )
        )
    if errors:
        raise status.invalid("DeleteOptions", "", errors, "meta.k8s.io")


def decide(kind: Kind, obj: Object, options: DeleteOptions, now: float) -> Decision:
    """What deleting `obj` (the stored object, read-only) does at time `now`."""
    m = obj.get("metadata") or {}
    finalizers = list(m.get("finalizers") or [])
    policy = options.propagation_policy or ("Orphan" if options.orphan_dependents else "")
    if policy == "Orphan" and FINALIZER_ORPHAN_DEPENDENTS not in finalizers:
        finalizers.append(FINALIZER_ORPHAN_DEPENDENTS)
    elif policy == "Foreground" and FINALIZER_DELETE_DEPENDENTS not in finalizers:
        finalizers.append(FINALIZER_DELETE_DEPENDENTS)
    if kind.kind == "Namespace" and not kind.group:
        return _namespace_decision(obj, finalizers, now)
    if kind.delete_finalizer and not m.get("deletionTimestamp"):
        if kind.delete_finalizer not in finalizers:
            finalizers.append(kind.delete_finalizer)
        marked = _marked(obj, finalizers, 0, now)
        kind.prepare_for_delete(marked)
        return Decision(False, marked)
    grace = graceful_period(kind, obj, options)
    current_grace = m.get("deletionGracePeriodSeconds")
    if m.get("deletionTimestamp"):
        # Already being deleted: a shorter grace period moves the deadline earlier.
        if grace == 0 and not finalizers:
            return _remove_now(kind, obj, now)
        if current_grace is not None and grace < current_grace:
            return Decision(False, _marked(obj, finalizers, grace, now))
        if finalizers != list(m.get("finalizers") or []):
            return Decision(False, _with_finalizers(obj, finalizers))
        return Decision(False, None)
    if grace == 0 and not finalizers:
        return _remove_now(kind, obj, now)
    return Decision(False, _marked(obj, finalizers, grace, now))


def _remove_now(kind: Kind, obj: Object, now: float) -> Decision:
    """Pods, whose deletion is graceful, are first stored marked with grace 0 and then
    removed, as kube-apiserver does it: watchers see them Terminating before they go."""
    if _is_pod(kind) and (obj.get("metadata") or {}).get("deletionGracePeriodSeconds") != 0:
        return Decision(True, _marked(obj, [], 0, now))
    return Decision(remove_now=True)


def _is_pod(kind: Kind) -> bool:
    return kind.kind == "Pod" and not kind.group


def _namespace_decision(obj: Object, finalizers: list[str], now: float) -> Decision:
    """A namespace is emptied first: it turns Terminating, the namespace controller deletes
    its content and removes the `kubernetes` finalizer from spec.finalizers, then it goes."""
    m = obj.get("metadata") or {}
    if not _spec_finalizers(obj) and not finalizers:
        return Decision(remove_now=True)
    if m.get("deletionTimestamp"):
        return Decision(False, None)
    updated = _marked(obj, finalizers, 0, now)
    updated["status"] = {**(updated.get("status") or {}), "phase": "Terminating"}
    return Decision(False, updated)


def _spec_finalizers(obj: Object) -> list[str]:
    """Namespaces carry their own finalizers in spec (no other kind has spec.finalizers)."""
    spec = obj.get("spec")
    return (spec.get("finalizers") or []) if isinstance(spec, dict) else []


def _with_finalizers(obj: Object, finalizers: list[str]) -> Object:
    """The object with new metadata; what else it holds is the stored object's, shared and
    read-only as the store's objects are."""
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "finalizers": finalizers}}


def _marked(obj: Object, finalizers: list[str], grace: int, now: float) -> Object:
    updated = _with_finalizers(obj, finalizers)
    if not finalizers:
        del meta(updated)["finalizers"]
    m = meta(updated)
    m["deletionTimestamp"] = format_time(now + grace)
    m["deletionGracePeriodSeconds"] = grace
    return updated


def deletion_due(obj: Object) -> bool:
    """An object whose deletion waits on nothing any more: marked, no finalizers, no grace."""
    m = obj.get("metadata") or {}
    return (
        bool(m.get("deletionTimestamp"))
        and not m.get("finalizers")
        and m.get("deletionGracePeriodSeconds", 0) == 0
        and not _spec_finalizers(obj)
    )
