"""Deployment (apps/v1): defaulting, the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    GREATER_THAN_REPLICAS,
    SPEC,
    STATUS,
    Object,
    bump_generation,
    changed,
    counter,
    default_template,
    ensure_spec,
    go_int_or_string,
    go_rollout_strategy,
    int_or_percent_value,
    is_not_more_than_100_percent,
    keep_labels,
    reset_for_create,
    set_default,
    spec_changed,
    status_of,
    validate_collision_count,
    validate_nonnegative_fields,
    validate_not_above,
    validate_positive_int_or_percent,
    validate_required_selector,
    validate_selected_template,
    validate_selector_unchanged,
)
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.strategy import keep_old
from pinnace.api.validation import object_field

RECREATE = "Recreate"
ROLLING_UPDATE = "RollingUpdate"
STRATEGY_TYPES = (RECREATE, ROLLING_UPDATE)
_ROLLING_TYPE = "apps.RollingUpdateDeployment"
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_MAX_SURGE = "25%"
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
# DeploymentStatus{} as apps/v1 serializes it: every field is omitempty.
EMPTY_STATUS: Object = {}
_STATUS_COUNTERS = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "collisionCount",
)
_STATUS_BOUNDS = (
    ("updatedReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("readyReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas"),
)


def default_deployment(deployment: Any) -> None:
    spec = ensure_spec(deployment)
    if spec is None:
        return
    set_default(spec, "replicas", 1)
    set_default(spec, "strategy", {})
    strategy = child_dict(spec, "strategy")
    if strategy is not None:
        _default_strategy(strategy)
    set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    set_default(spec, "progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)
    default_template(spec)


def _default_strategy(strategy: Object) -> None:
    if not strategy.get("type"):
        strategy["type"] = ROLLING_UPDATE
    if strategy["type"] != ROLLING_UPDATE:
        return
    set_default(strategy, "rollingUpdate", {})
    rolling = child_dict(strategy, "rollingUpdate")
    if rolling is not None:
        set_default(rolling, "maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
        set_default(rolling, "maxSurge", DEFAULT_MAX_SURGE)


def prepare_deployment_for_create(deployment: Object) -> None:
    reset_for_create(deployment, EMPTY_STATUS)


def prepare_deployment_for_update(new: Object, old: Object) -> None:
    """Spec writes keep the status; a changed spec or changed annotations (which are copied
    to the replica sets) bump the generation."""
    keep_old(new, old, "status")
    annotations = as_dict(new.get("metadata")).get("annotations")
    old_annotations = as_dict(as_dict(old).get("metadata")).get("annotations")
    if spec_changed(new, old) or changed(annotations, old_annotations):
        bump_generation(new, old)


def prepare_deployment_for_status_update(new: Object, old: Object) -> None:
    keep_old(new, old, "spec")
    keep_labels(new, old)


def _validate_strategy(spec: Object, path: Path) -> list[FieldError]:
    """ValidateDeploymentStrategy."""
    strategy, errs = object_field(spec.get("strategy"), path)
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == RECREATE:
        if rolling is not None:
            errs.append(
                field.forbidden(
                    path.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            )
    elif kind == ROLLING_UPDATE:
        if rolling is None:
            errs.append(
                field.required(
                    path.child("rollingUpdate"), "this should be defaulted and never be nil"
                )
            )
        else:
            errs += _validate_rolling_update(rolling, path.child("rollingUpdate"))
    else:
        shown = go_rollout_strategy(strategy, "apps.DeploymentStrategy", _ROLLING_TYPE)
        errs.append(field.not_supported(path, shown, STRATEGY_TYPES))
    return errs


def _validate_rolling_update(value: Any, path: Path) -> list[FieldError]:
    """ValidateRollingUpdateDeployment: both bounds are int-or-percent, not both zero, and
    no more than all pods may be unavailable."""
    rolling, errs = object_field(value, path)
    max_unavailable = rolling.get("maxUnavailable", 0)
    max_surge = rolling.get("maxSurge", 0)
    errs += validate_positive_int_or_percent(max_unavailable, path.child("maxUnavailable"))
    errs += validate_positive_int_or_percent(max_surge, path.child("maxSurge"))
    if int_or_percent_value(max_unavailable) == 0 and int_or_percent_value(max_surge) == 0:
        errs.append(
            field.invalid(
                path.child("maxUnavailable"),
                go_int_or_string(max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    return errs + is_not_more_than_100_percent(max_unavailable, path.child("maxUnavailable"))


def _validate_spec(deployment: Object) -> list[FieldError]:
    """ValidateDeploymentSpec."""
    spec, errs = object_field(deployment.get("spec"), SPEC)
    errs += validate_nonnegative_fields(spec, SPEC, ("replicas",))
    errs += validate_required_selector(spec, SPEC.child("selector"), "deployment")
    errs += validate_selected_template(spec, SPEC)
    errs += _validate_strategy(spec, SPEC.child("strategy"))
    errs += validate_nonnegative_fields(
        spec, SPEC, ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds")
    )
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and counter(spec, "progressDeadlineSeconds") <= counter(
        spec, "minReadySeconds"
    ):
        errs.append(
            field.invalid(
                SPEC.child("progressDeadlineSeconds"),
                deadline,
                "must be greater than minReadySeconds",
            )
        )
    return errs


def validate_deployment(deployment: Any) -> list[FieldError]:
    errs = validate_object_meta(deployment, namespaced=True)
    if not isinstance(deployment, dict):
        return errs
    return errs + _validate_spec(deployment)


def validate_deployment_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + _validate_spec(new) + validate_selector_unchanged(new, old)


def validate_deployment_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    status, e = status_of(new)
    errs += e + validate_nonnegative_fields(status, STATUS, _STATUS_COUNTERS)
    errs += validate_not_above(status, STATUS, _STATUS_BOUNDS)
    return errs + validate_collision_count(new, old)


DEPLOYMENT = Kind(
    group="apps",
    version="v1",
    kind="Deployment",
    plural="deployments",
    namespaced=True,
    model="V1Deployment",
    short_names=("deploy",),
    categories=("all",),
    subresources=("scale", "status"),
    default=default_deployment,
    prepare_for_create=prepare_deployment_for_create,
    prepare_for_update=prepare_deployment_for_update,
    prepare_for_status_update=prepare_deployment_for_status_update,
    validate=validate_deployment,
    validate_update=validate_deployment_update,
    validate_status_update=validate_deployment_status_update,
    drop_disabled=template_dropper("spec", "template"),
    **template_warnings("spec", "template", name=True),
)
