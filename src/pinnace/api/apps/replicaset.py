"""ReplicaSet (apps/v1): defaulting, the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api.apps import (
    GREATER_THAN_REPLICAS,
    SPEC,
    STATUS,
    Object,
    bump_generation,
    default_template,
    ensure_spec,
    reset_for_create,
    spec_changed,
    status_of,
    validate_nonnegative_fields,
    validate_not_above,
    validate_required_selector,
    validate_selected_template,
    validate_selector_unchanged,
)
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import object_field

# ReplicaSetStatus{} as apps/v1 serializes it: `replicas` has no omitempty.
EMPTY_STATUS: Object = {"replicas": 0}
_STATUS_COUNTERS = (
    "replicas",
    "fullyLabeledReplicas",
    "readyReplicas",
    "availableReplicas",
    "observedGeneration",
)
_STATUS_BOUNDS = (
    ("fullyLabeledReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("readyReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas"),
)


def default_replica_set(rs: Any) -> None:
    spec = ensure_spec(rs)
    if spec is None:
        return
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_template(spec)


def prepare_replica_set_for_create(rs: Object) -> None:
    reset_for_create(rs, EMPTY_STATUS)


def prepare_replica_set_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


def _validate_spec(rs: Object) -> list[FieldError]:
    """ValidateReplicaSetSpec."""
    spec, errs = object_field(rs.get("spec"), SPEC)
    errs += validate_nonnegative_fields(spec, SPEC, ("replicas", "minReadySeconds"))
    errs += validate_required_selector(spec, SPEC.child("selector"), "deployment")
    return errs + validate_selected_template(spec, SPEC)


def validate_replica_set(rs: Any) -> list[FieldError]:
    errs = validate_object_meta(rs, namespaced=True)
    if not isinstance(rs, dict):
        return errs
    return errs + _validate_spec(rs)


def validate_replica_set_update(new: Any, old: Any) -> list[FieldError]:
    """The strategy checks the object as on create, then as an update (its spec twice, as
    Kubernetes does), then that the selector stays."""
    errs = validate_replica_set(new) + validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + _validate_spec(new) + validate_selector_unchanged(new, old)


def validate_replica_set_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    status, e = status_of(new)
    errs += e + validate_nonnegative_fields(status, STATUS, _STATUS_COUNTERS)
    return errs + validate_not_above(status, STATUS, _STATUS_BOUNDS)


REPLICA_SET = Kind(
    group="apps",
    version="v1",
    kind="ReplicaSet",
    plural="replicasets",
    namespaced=True,
    model="V1ReplicaSet",
    short_names=("rs",),
    categories=("all",),
    subresources=("scale", "status"),
    default=default_replica_set,
    prepare_for_create=prepare_replica_set_for_create,
    prepare_for_update=prepare_replica_set_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_replica_set,
    validate_update=validate_replica_set_update,
    validate_status_update=validate_replica_set_status_update,
    drop_disabled=template_dropper("spec", "template"),
    **template_warnings("spec", "template", name=True),
)
