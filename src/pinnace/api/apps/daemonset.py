"""DaemonSet (apps/v1): defaulting, the registry strategy and validation as Kubernetes v1.32.

apps/v1 has no `templateGeneration` field: Kubernetes keeps it in the annotation
`deprecated.daemonset.template.generation`, which the server owns. It starts at 1 and goes up
by one whenever the pod template changes; whatever a client writes there is replaced.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    SPEC,
    STATUS,
    Object,
    as_label_selector,
    bump_generation,
    changed,
    default_template,
    ensure_spec,
    go_int_or_string,
    go_label_selector,
    go_rollout_strategy,
    int_or_percent_value,
    is_empty_selector,
    is_not_more_than_100_percent,
    reset_for_create,
    set_default,
    spec_changed,
    status_of,
    validate_always_restarting_template,
    validate_collision_count,
    validate_nonnegative_fields,
    validate_positive_int_or_percent,
    validate_selector,
    validate_selector_matches_template,
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

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
ON_DELETE = "OnDelete"
ROLLING_UPDATE = "RollingUpdate"
_ROLLING_TYPE = "apps.RollingUpdateDaemonSet"
DEFAULT_MAX_UNAVAILABLE = 1
DEFAULT_MAX_SURGE = 0
DEFAULT_REVISION_HISTORY_LIMIT = 10
# DaemonSetStatus{} as apps/v1 serializes it: these four counters have no omitempty.
EMPTY_STATUS: Object = {
    "currentNumberScheduled": 0,
    "numberMisscheduled": 0,
    "desiredNumberScheduled": 0,
    "numberReady": 0,
}
_STATUS_COUNTERS = (
    "currentNumberScheduled",
    "numberMisscheduled",
    "desiredNumberScheduled",
    "numberReady",
    "observedGeneration",
    "updatedNumberScheduled",
    "numberAvailable",
    "numberUnavailable",
)


def default_daemon_set(ds: Any) -> None:
    spec = ensure_spec(ds)
    if spec is None:
        return
    set_default(spec, "updateStrategy", {})
    strategy = child_dict(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = ROLLING_UPDATE
        if strategy["type"] == ROLLING_UPDATE:
            set_default(strategy, "rollingUpdate", {})
            rolling = child_dict(strategy, "rollingUpdate")
            if rolling is not None:
                set_default(rolling, "maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
                set_default(rolling, "maxSurge", DEFAULT_MAX_SURGE)
    set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    default_template(spec)


def template_generation(ds: Any) -> int:
    """The generation of the pod template, 0 when the annotation is absent or not a number."""
    annotations = as_dict(as_dict(as_dict(ds).get("metadata")).get("annotations"))
    value = annotations.get(TEMPLATE_GENERATION_ANNOTATION)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return 0


def _set_template_generation(ds: Object, generation: int) -> None:
    meta = child_dict(ds, "metadata")
    if meta is None:
        return
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    meta["annotations"][TEMPLATE_GENERATION_ANNOTATION] = str(generation)


def prepare_daemon_set_for_create(ds: Object) -> None:
    reset_for_create(ds, EMPTY_STATUS)
    _set_template_generation(ds, max(template_generation(ds), 1))


def prepare_daemon_set_for_update(new: Object, old: Object) -> None:
    """Spec writes keep the status; a new template bumps the template generation, and any
    spec change the generation."""
    keep_old(new, old, "status")
    generation = template_generation(old)
    template = as_dict(new.get("spec")).get("template")
    if changed(template, as_dict(old.get("spec")).get("template")):
        generation += 1
    _set_template_generation(new, generation)
    if spec_changed(new, old):
        bump_generation(new, old)


def prepare_daemon_set_for_status_update(new: Object, old: Object) -> None:
    keep_old(new, old, "spec")
    _set_template_generation(new, template_generation(old))


def _validate_update_strategy(spec: Object, path: Path) -> list[FieldError]:
    """ValidateDaemonSetUpdateStrategy."""
    strategy, errs = object_field(spec.get("updateStrategy"), path)
    kind = strategy.get("type")
    if kind == ON_DELETE:
        return errs
    if kind != ROLLING_UPDATE:
        shown = go_rollout_strategy(strategy, "apps.DaemonSetUpdateStrategy", _ROLLING_TYPE)
        return [*errs, field.not_supported(path, shown, (ROLLING_UPDATE, ON_DELETE))]
    if strategy.get("rollingUpdate") is None:
        return [*errs, field.required(path.child("rollingUpdate"))]
    return errs + _validate_rolling_update(strategy["rollingUpdate"], path.child("rollingUpdate"))


def _validate_rolling_update(value: Any, path: Path) -> list[FieldError]:
    """ValidateRollingUpdateDaemonSet: int-or-percent bounds of which exactly one is
    non-zero."""
    rolling, errs = object_field(value, path)
    max_unavailable = rolling.get("maxUnavailable", 0)
    max_surge = rolling.get("maxSurge", 0)
    unavailable_path, surge_path = path.child("maxUnavailable"), path.child("maxSurge")
    errs += validate_positive_int_or_percent(max_unavailable, unavailable_path)
    errs += validate_positive_int_or_percent(max_surge, surge_path)
    errs += is_not_more_than_100_percent(max_unavailable, unavailable_path)
    errs += is_not_more_than_100_percent(max_surge, surge_path)
    has_unavailable = int_or_percent_value(max_unavailable) != 0
    has_surge = int_or_percent_value(max_surge) != 0
    if has_unavailable and has_surge:
        shown = go_int_or_string(max_surge)
        errs.append(
            field.invalid(surge_path, shown, "may not be set when maxUnavailable is non-zero")
        )
    elif not has_unavailable and not has_surge:
        errs.append(field.required(unavailable_path, "cannot be 0 when maxSurge is 0"))
    return errs


def _validate_spec(ds: Object) -> list[FieldError]:
    """ValidateDaemonSetSpec."""
    spec, errs = object_field(ds.get("spec"), SPEC)
    selector_path, template_path = SPEC.child("selector"), SPEC.child("template")
    errs += validate_selector(spec.get("selector"), selector_path)
    selector = as_label_selector(spec.get("selector"))
    if selector is not None:
        errs += validate_selector_matches_template(selector, spec.get("template"), template_path)
    if spec.get("selector") is not None and is_empty_selector(spec["selector"]):
        shown = go_label_selector(spec["selector"])
        errs.append(field.invalid(selector_path, shown, "empty selector is invalid for daemonset"))
    errs += validate_always_restarting_template(spec.get("template"), template_path, "DaemonSet")
    errs += validate_nonnegative_fields(spec, SPEC, ("minReadySeconds",))
    errs += _validate_update_strategy(spec, SPEC.child("updateStrategy"))
    return errs + validate_nonnegative_fields(spec, SPEC, ("revisionHistoryLimit",))


def validate_daemon_set(ds: Any) -> list[FieldError]:
    errs = validate_object_meta(ds, namespaced=True)
    if not isinstance(ds, dict):
        return errs
    return errs + _validate_spec(ds)


def validate_daemon_set_update(new: Any, old: Any) -> list[FieldError]:
    """As on create, then as an update, then that the selector stays (apps/v1)."""
    errs = validate_daemon_set(new) + validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + _validate_spec(new) + validate_selector_unchanged(new, old)


def validate_daemon_set_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    status, e = status_of(new)
    errs += e + validate_nonnegative_fields(status, STATUS, _STATUS_COUNTERS)
    return errs + validate_collision_count(new, old)


DAEMON_SET = Kind(
    group="apps",
    version="v1",
    kind="DaemonSet",
    plural="daemonsets",
    namespaced=True,
    model="V1DaemonSet",
    short_names=("ds",),
    categories=("all",),
    subresources=("status",),
    default=default_daemon_set,
    prepare_for_create=prepare_daemon_set_for_create,
    prepare_for_update=prepare_daemon_set_for_update,
    prepare_for_status_update=prepare_daemon_set_for_status_update,
    validate=validate_daemon_set,
    validate_update=validate_daemon_set_update,
    validate_status_update=validate_daemon_set_status_update,
    drop_disabled=template_dropper("spec", "template"),
    **template_warnings("spec", "template"),
)
