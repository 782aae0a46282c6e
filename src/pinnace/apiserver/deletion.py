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
from pinnace.clock.rfc3339 import format_time, parse_time

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
    if kind.kind == "Namespace" and not kind.group:
        return _namespace_decision(kind, obj, options, now)
    m = obj.get("metadata") or {}
    if kind.delete_finalizer and not m.get("deletionTimestamp"):
        # The CRD registry's own first step: its cleanup finalizer and a timestamp, nothing
        # the generic store would add.
        finalizers = list(m.get("finalizers") or [])
        if kind.delete_finalizer not in finalizers:
            finalizers.append(kind.delete_finalizer)
        marked = _stamped(obj, finalizers, now)
        kind.prepare_for_delete(marked)
        return Decision(False, marked)
    return _store_decision(kind, obj, options, now)


def _store_decision(kind: Kind, obj: Object, options: DeleteOptions, now: float) -> Decision:
    """The generic registry's Store.Delete: rest.BeforeDelete's graceful step (pods only),
    then the garbage collector's finalizers as the options ask, then mark or remove."""
    m = obj.get("metadata") or {}
    marked_at = m.get("deletionTimestamp")
    current_grace = m.get("deletionGracePeriodSeconds")
    deadline: float | None = None
    grace = 0
    if _is_pod(kind) and marked_at and current_grace:
        # Already deleted gracefully: only a shorter grace period changes anything, and the
        # deadline moves by as much (counted from the first delete, not from now).
        requested = options.grace_period_seconds
        if requested is not None and requested < 0:
            requested = 1  # as for a first delete
        if requested is None or requested >= current_grace:
            return Decision(False, None)
        grace = requested
        deadline = parse_time(marked_at) - current_grace + grace
    elif _is_pod(kind) and not marked_at:
        grace = graceful_period(kind, obj, options)
        deadline = now + grace
    finalizers = gc_finalizers(kind, m.get("finalizers") or [], options)
    if deadline is not None:
        if grace == 0 and not finalizers:
            return _remove_now(kind, obj, deadline)
        return Decision(False, _marked(obj, finalizers, grace, deadline))
    if not finalizers:
        return Decision(remove_now=True)
    if marked_at and parse_time(marked_at) <= now:
        if finalizers == list(m.get("finalizers") or []) and current_grace == 0:
            return Decision(False, None)
        return Decision(False, _marked(obj, finalizers, 0, parse_time(marked_at)))
    return Decision(False, _marked(obj, finalizers, 0, now))


def gc_finalizers(kind: Kind, finalizers: list[str], options: DeleteOptions) -> list[str]:
    """The object's finalizers with the garbage collector's as a DELETE with `options` leaves
    them (the store's deletionFinalizersForGarbageCollection): the propagation policy, or
    orphanDependents, replaces `orphan` and `foregroundDeletion`; without either, those the
    object has stay, and a kind whose default policy orphans gets `orphan`."""
    orphan, foreground = _gc_intent(options)
    if orphan is None:
        has_orphan = FINALIZER_ORPHAN_DEPENDENTS in finalizers
        has_foreground = FINALIZER_DELETE_DEPENDENTS in finalizers
        orphan = has_orphan or (kind.orphans_by_default and not has_foreground)
        foreground = has_foreground and not has_orphan
    return _with_gc_finalizers(finalizers, orphan, foreground)


def _with_gc_finalizers(finalizers: list[str], orphan: bool, foreground: bool) -> list[str]:
    """`finalizers` with `orphan` and `foregroundDeletion` as asked; the list itself when
    that changes nothing."""
    kept = [f for f in finalizers if f not in _GC_FINALIZERS]
    kept += [FINALIZER_ORPHAN_DEPENDENTS] * orphan + [FINALIZER_DELETE_DEPENDENTS] * foreground
    return list(finalizers) if set(kept) == set(finalizers) else kept


_GC_FINALIZERS = (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)


def _gc_intent(options: DeleteOptions) -> tuple[bool | None, bool]:
    """(orphan, foreground) the options ask for; orphan None when they ask nothing."""
    if options.orphan_dependents is not None:
        return options.orphan_dependents, False
    if options.propagation_policy:
        policy = options.propagation_policy
        return policy == "Orphan", policy == "Foreground"
    return None, False


def delete_warnings(kind: Kind, options: DeleteOptions) -> list[str]:
    """The Warning headers of a DELETE (one object or a collection): the job registry's, when
    the client left the policy to batch/v1's default, which keeps the pods."""
    asked = options.propagation_policy or options.orphan_dependents is not None
    if kind.orphans_by_default and kind.kind == "Job" and not asked:
        return [JOB_PODS_KEPT]
    return []


JOB_PODS_KEPT = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background "
    "to remove them or set propagationPolicy=Orphan to suppress this warning"
)


def _remove_now(kind: Kind, obj: Object, deadline: float) -> Decision:
    """Pods, whose deletion is graceful, are first stored marked with grace 0 (at `deadline`)
    and then removed, as kube-apiserver does it: watchers see them Terminating before they
    go."""
    if _is_pod(kind) and (obj.get("metadata") or {}).get("deletionGracePeriodSeconds") != 0:
        return Decision(True, _marked(obj, [], 0, deadline))
    return Decision(remove_now=True)


def _is_pod(kind: Kind) -> bool:
    return kind.kind == "Pod" and not kind.group


def _namespace_decision(kind: Kind, obj: Object, options: DeleteOptions, now: float) -> Decision:
    """The namespace registry's Delete. The first turns the namespace Terminating (a
    timestamp, no grace period), whatever finalizers it has; the namespace controller empties
    it and removes the `kubernetes` finalizer from spec.finalizers, and that write removes it.
    Until then another DELETE changes nothing and answers the namespace; after, it is the
    generic store's. A namespace that had no spec.finalizers left stays Terminating until
    such a DELETE or another write to it (the controller leaves a finalized one alone)."""
    m = obj.get("metadata") or {}
    if not m.get("deletionTimestamp"):
        finalizers = _namespace_gc_finalizers(list(m.get("finalizers") or []), options)
        updated = _stamped(obj, finalizers, now)
        updated["status"] = {**(updated.get("status") or {}), "phase": "Terminating"}
        return Decision(False, updated)
    if _spec_finalizers(obj):
        return Decision(False, None)
    return _store_decision(kind, obj, options, now)


def _namespace_gc_finalizers(finalizers: list[str], options: DeleteOptions) -> list[str]:
    """The namespace registry's own rule (ShouldHaveOrphanFinalizer and
    ShouldHaveDeleteDependentsFinalizer): orphanDependents=false asks for the foreground."""
    if options.orphan_dependents is not None:
        orphan = options.orphan_dependents
        foreground = not orphan
    elif options.propagation_policy:
        orphan = options.propagation_policy == "Orphan"
        foreground = options.propagation_policy == "Foreground"
    else:
        return finalizers
    return _with_gc_finalizers(finalizers, orphan, foreground)


def _spec_finalizers(obj: Object) -> list[str]:
    """Namespaces carry their own finalizers in spec (no other kind has spec.finalizers)."""
    spec = obj.get("spec")
    return (spec.get("finalizers") or []) if isinstance(spec, dict) else []


def _with_finalizers(obj: Object, finalizers: list[str]) -> Object:
    """The object with new metadata; what else it holds is the stored object's, shared and
    read-only as the store's objects are."""
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "finalizers": finalizers}}


def _stamped(obj: Object, finalizers: list[str], now: float) -> Object:
    """The object with a deletion timestamp (and `finalizers`), nothing else changed."""
    updated = _with_finalizers(obj, finalizers)
    if not finalizers:
        del meta(updated)["finalizers"]
    meta(updated)["deletionTimestamp"] = format_time(now)
    return updated


def _marked(obj: Object, finalizers: list[str], grace: int, deadline: float) -> Object:
    """Marked for deletion at `deadline` after `grace` seconds; the first mark bumps a
    generation the object has (markAsDeleting, and BeforeDelete for graceful kinds)."""
    updated = _stamped(obj, finalizers, deadline)
    m = meta(updated)
    m["deletionGracePeriodSeconds"] = grace
    old = obj.get("metadata") or {}
    if not old.get("deletionTimestamp") and (old.get("generation") or 0) > 0:
        m["generation"] = old["generation"] + 1
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
