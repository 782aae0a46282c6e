"""Lease (coordination.k8s.io/v1): the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_qualified_name
from pinnace.api.validation import is_int, object_field, string_field, type_error

LEASE_STRATEGIES = ("OldestEmulationVersion",)
# Behind the CoordinatedLeaderElection gate (alpha, off in v1.32): dropped unless in use.
_GATED_FIELDS = ("strategy", "preferredHolder")


def prepare_lease_for_create(lease: dict[str, Any]) -> None:
    spec = lease.get("spec")
    if isinstance(spec, dict):
        for key in _GATED_FIELDS:
            spec.pop(key, None)


def prepare_lease_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    spec, old_spec = new.get("spec"), old.get("spec")
    if not isinstance(spec, dict):
        return
    in_use = isinstance(old_spec, dict) and any(old_spec.get(k) for k in _GATED_FIELDS)
    if not in_use:
        for key in _GATED_FIELDS:
            spec.pop(key, None)


def validate_lease(lease: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(lease, namespaced=True) + _validate_spec(lease)


def validate_lease_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + _validate_spec(new)


def _validate_spec(lease: dict[str, Any]) -> list[FieldError]:
    path = Path("spec")
    spec, errs = object_field(lease.get("spec"), path)
    for key, minimum, message in (
        ("leaseDurationSeconds", 1, "must be greater than 0"),
        ("leaseTransitions", 0, "must be greater than or equal to 0"),
    ):
        value = spec.get(key)
        if value is None:
            continue
        if not is_int(value):
            errs.append(type_error(path.child(key), value, "integer"))
        elif value < minimum:
            errs.append(field.invalid(path.child(key), value, message))
    strategy, e = string_field(spec.get("strategy"), path.child("strategy"))
    errs += e
    if spec.get("strategy") is not None:
        errs += _validate_strategy(strategy, path.child("strategy"))
    holder, e = string_field(spec.get("preferredHolder"), path.child("preferredHolder"))
    errs += e
    if holder and not strategy:
        errs.append(
            field.forbidden(
                path.child("preferredHolder"), "may only be specified if `strategy` is defined"
            )
        )
    return errs


def _validate_strategy(strategy: str, path: Path) -> list[FieldError]:
    # Kubernetes names the field twice in these errors: spec.strategy.strategy.
    at = path.child("strategy")
    if "/" not in strategy:
        if strategy not in LEASE_STRATEGIES:
            return [field.not_supported(at, strategy, LEASE_STRATEGIES)]
        return []
    return [field.invalid(at, strategy, m) for m in is_qualified_name(strategy)]


LEASE = Kind(
    group="coordination.k8s.io",
    version="v1",
    kind="Lease",
    plural="leases",
    namespaced=True,
    allow_create_on_update=True,
    model="V1Lease",
    prepare_for_create=prepare_lease_for_create,
    prepare_for_update=prepare_lease_for_update,
    validate=validate_lease,
    validate_update=validate_lease_update,
)
