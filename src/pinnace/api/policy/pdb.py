"""PodDisruptionBudget (policy/v1): the registry strategy and validation as Kubernetes v1.32.

policy/v1 defaults nothing, and its validation does not check the name beyond what every
object's metadata gets: any name usable in a URL path is accepted.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    SPEC,
    STATUS,
    Object,
    bump_generation,
    is_not_more_than_100_percent,
    reset_for_create,
    spec_changed,
    status_of,
    validate_nonnegative_fields,
    validate_positive_int_or_percent,
    validate_selector,
)
from pinnace.api.field import FieldError
from pinnace.api.kind import Kind
from pinnace.api.meta import is_path_segment_name, validate_object_meta, validate_object_meta_update
from pinnace.api.policy.conditions import validate_conditions
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import GoValue, object_field

UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
# PodDisruptionBudgetStatus{} as policy/v1 serializes it: these have no omitempty.
EMPTY_STATUS: Object = {
    "disruptionsAllowed": 0,
    "currentHealthy": 0,
    "desiredHealthy": 0,
    "expectedPods": 0,
}
_STATUS_COUNTERS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


def prepare_pdb_for_create(pdb: Object) -> None:
    reset_for_create(pdb, EMPTY_STATUS)


def prepare_pdb_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


def _validate_spec(pdb: Object) -> list[FieldError]:
    """ValidatePodDisruptionBudgetSpec."""
    spec, errs = object_field(pdb.get("spec"), SPEC)
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        # Kubernetes shows the whole policy.PodDisruptionBudgetSpec struct here.
        shown = GoValue("policy.PodDisruptionBudgetSpec{...}")
        errs.append(
            field.invalid(SPEC, shown, "minAvailable and maxUnavailable cannot be both set")
        )
    for name in ("minAvailable", "maxUnavailable"):
        if spec.get(name) is not None:
            errs += validate_positive_int_or_percent(spec[name], SPEC.child(name))
            errs += is_not_more_than_100_percent(spec[name], SPEC.child(name))
    errs += validate_selector(spec.get("selector"), SPEC.child("selector"))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        path = SPEC.child("unhealthyPodEvictionPolicy")
        errs.append(field.not_supported(path, policy, UNHEALTHY_POD_EVICTION_POLICIES))
    return errs


def validate_pdb(pdb: Any) -> list[FieldError]:
    errs = validate_object_meta(pdb, namespaced=True, name_rule=is_path_segment_name)
    if not isinstance(pdb, dict):
        return errs
    return errs + _validate_spec(pdb)


def validate_pdb_update(new: Any, old: Any) -> list[FieldError]:
    """The spec may change in policy/v1; it is checked as on create."""
    errs = validate_pdb(new) + validate_object_meta_update(new, old)
    return errs


def validate_pdb_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    status, e = status_of(new)
    errs += e + validate_nonnegative_fields(status, STATUS, _STATUS_COUNTERS)
    return errs + validate_conditions(status.get("conditions"), STATUS.child("conditions"))


POD_DISRUPTION_BUDGET = Kind(
    group="policy",
    version="v1",
    kind="PodDisruptionBudget",
    plural="poddisruptionbudgets",
    namespaced=True,
    model="V1PodDisruptionBudget",
    short_names=("pdb",),
    subresources=("status",),
    prepare_for_create=prepare_pdb_for_create,
    prepare_for_update=prepare_pdb_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_pdb,
    validate_update=validate_pdb_update,
    validate_status_update=validate_pdb_status_update,
)
