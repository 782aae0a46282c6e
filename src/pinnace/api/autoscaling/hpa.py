"""HorizontalPodAutoscaler (autoscaling/v2): defaulting, the registry strategy and validation
as Kubernetes v1.32.

Unlike the workload kinds, the HPA strategy leaves `metadata.generation` alone.
"""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import field
from pinnace.api.apps import SPEC, STATUS, Object, ensure_spec, set_default, status_of
from pinnace.api.apps import validate_nonnegative_fields as nonnegative_fields
from pinnace.api.core.pod_resources import validate_container_resource_name
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import is_path_segment_name, validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label
from pinnace.api.strategy import keep_spec, keep_status
from pinnace.api.validation import (
    go_quantity,
    is_int,
    list_field,
    object_field,
    parse_quantity_field,
    string_field,
)

DEFAULT_CPU_UTILIZATION = 80
MIN_REPLICAS_LOWER_BOUND = 1
MAX_STABILIZATION_WINDOW_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800
METRIC_SOURCE_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
# The field of a MetricSpec that each source type fills in.
_SOURCE_FIELDS = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}
METRIC_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Disabled", "Max", "Min")
SCALING_POLICY_TYPES = ("Percent", "Pods")
# HorizontalPodAutoscalerStatus{} as autoscaling/v2 serializes it.
EMPTY_STATUS: Object = {"desiredReplicas": 0}
_DEFAULT_SCALE_UP: Object = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
# No stabilization window: the controller's --horizontal-pod-autoscaler-downscale-
# stabilization flag applies.
_DEFAULT_SCALE_DOWN: Object = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


# --- defaulting and the registry strategy ------------------------------------------------------


def default_hpa(hpa: Any) -> None:
    spec = ensure_spec(hpa)
    if spec is None:
        return
    set_default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    behavior = child_dict(spec, "behavior")
    if behavior is not None:
        behavior["scaleUp"] = _with_defaults(behavior.get("scaleUp"), _DEFAULT_SCALE_UP)
        behavior["scaleDown"] = _with_defaults(behavior.get("scaleDown"), _DEFAULT_SCALE_DOWN)


def _with_defaults(rules: Any, defaults: Object) -> Any:
    """The default rules with what the user set laid over them, field by field."""
    if rules is not None and not isinstance(rules, dict):
        return rules
    given = as_dict(rules)
    result = copy.deepcopy(defaults)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
        if given.get(key) is not None:
            result[key] = given[key]
    return result


def prepare_hpa_for_create(hpa: Object) -> None:
    hpa["status"] = copy.deepcopy(EMPTY_STATUS)


# --- validation --------------------------------------------------------------------------------


def validate_cross_version_object_reference(value: Any, path: Path) -> list[FieldError]:
    """A kind and a name, both usable in a URL path."""
    ref, errs = object_field(value, path)
    for name in ("kind", "name"):
        text, e = string_field(ref.get(name), path.child(name))
        errs += e
        if not text:
            errs.append(field.required(path.child(name)))
        else:
            errs += [field.invalid(path.child(name), text, m) for m in is_path_segment_name(text)]
    return errs


def _validate_metric_identifier(value: Any, path: Path) -> list[FieldError]:
    metric, errs = object_field(value, path)
    name, e = string_field(metric.get("name"), path.child("name"))
    errs += e
    if not name:
        return [*errs, field.required(path.child("name"), "must specify a metric name")]
    return errs + [field.invalid(path.child("name"), name, m) for m in is_path_segment_name(name)]


def _validate_positive_quantity(target: Object, name: str, path: Path) -> list[FieldError]:
    if target.get(name) is None:
        return []
    quantity, errs = parse_quantity_field(target[name], path.child(name))
    if quantity is not None and quantity.sign() != 1:
        errs.append(field.invalid(path.child(name), go_quantity(quantity), "must be positive"))
    return errs


def _validate_metric_target(target: Object, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = target.get("type") or ""
    if not kind:
        errs.append(field.required(path.child("type"), "must specify a metric target type"))
    if kind not in METRIC_TARGET_TYPES:
        detail = "must be either Utilization, Value, or AverageValue"
        errs.append(field.invalid(path.child("type"), kind, detail))
    errs += _validate_positive_quantity(target, "value", path)
    errs += _validate_positive_quantity(target, "averageValue", path)
    utilization = target.get("averageUtilization")
    if utilization is not None and (not is_int(utilization) or utilization < 1):
        path = path.child("averageUtilization")
        errs.append(field.invalid(path, utilization, "must be greater than 0"))
    return errs


def _target_of(source: Object, path: Path) -> tuple[Object, list[FieldError]]:
    target, errs = object_field(source.get("target"), path.child("target"))
    return target, errs + _validate_metric_target(target, path.child("target"))


def _validate_resource_name(source: Object, path: Path) -> list[FieldError]:
    name, errs = string_field(source.get("name"), path.child("name"))
    if not name:
        return [*errs, field.required(path.child("name"), "must specify a resource name")]
    return errs + validate_container_resource_name(name, path.child("name"))


def _validate_resource_target(target: Object, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    utilization, average = target.get("averageUtilization"), target.get("averageValue")
    if utilization is None and average is None:
        detail = "must set either a target raw value or a target utilization"
        errs.append(field.required(path.child("target", "averageUtilization"), detail))
    if utilization is not None and average is not None:
        detail = "may not set both a target raw value and a target utilization"
        errs.append(field.forbidden(path.child("target", "averageValue"), detail))
    return errs


def _validate_resource_source(source: Object, path: Path) -> list[FieldError]:
    errs = _validate_resource_name(source, path)
    target, e = _target_of(source, path)
    return errs + e + _validate_resource_target(target, path)


def _validate_container_resource_source(source: Object, path: Path) -> list[FieldError]:
    errs = _validate_resource_name(source, path)
    container, e = string_field(source.get("container"), path.child("container"))
    errs += e
    if not container:
        errs.append(field.required(path.child("container"), "must specify a container"))
    else:
        errs += [
            field.invalid(path.child("container"), container, m)
            for m in is_dns1123_label(container)
        ]
    target, e = _target_of(source, path)
    return errs + e + _validate_resource_target(target, path)


def _validate_pods_source(source: Object, path: Path) -> list[FieldError]:
    errs = _validate_metric_identifier(source.get("metric"), path.child("metric"))
    target, e = _target_of(source, path)
    errs += e
    if target.get("averageValue") is None:
        detail = "must specify a positive target averageValue"
        errs.append(field.required(path.child("target", "averageValue"), detail))
    return errs


def _validate_object_source(source: Object, path: Path) -> list[FieldError]:
    errs = validate_cross_version_object_reference(
        source.get("describedObject"), path.child("describedObject")
    )
    errs += _validate_metric_identifier(source.get("metric"), path.child("metric"))
    target, e = _target_of(source, path)
    errs += e
    if target.get("value") is None and target.get("averageValue") is None:
        detail = "must set either a target value or averageValue"
        errs.append(field.required(path.child("target", "averageValue"), detail))
    return errs


def _validate_external_source(source: Object, path: Path) -> list[FieldError]:
    errs = _validate_metric_identifier(source.get("metric"), path.child("metric"))
    target, e = _target_of(source, path)
    errs += e
    value, average = target.get("value"), target.get("averageValue")
    if value is None and average is None:
        detail = "must set either a target value for metric or a per-pod target"
        errs.append(field.required(path.child("target", "averageValue"), detail))
    if value is not None and average is not None:
        detail = "may not set both a target value for metric and a per-pod target"
        errs.append(field.forbidden(path.child("target", "value"), detail))
    return errs


_SOURCE_VALIDATORS = {
    "object": _validate_object_source,
    "external": _validate_external_source,
    "pods": _validate_pods_source,
    "resource": _validate_resource_source,
    "containerResource": _validate_container_resource_source,
}


def _validate_metric_spec(value: Any, path: Path) -> list[FieldError]:
    """validateMetricSpec: a known type whose source, and only that one, is filled in."""
    metric, errs = object_field(value, path)
    kind = metric.get("type") or ""
    if not kind:
        errs.append(field.required(path.child("type"), "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        errs.append(field.not_supported(path.child("type"), kind, METRIC_SOURCE_TYPES))
    present = [name for name in _SOURCE_VALIDATORS if metric.get(name) is not None]
    if present:
        source, e = object_field(metric[present[0]], path.child(present[0]))
        errs += e + _SOURCE_VALIDATORS[present[0]](source, path.child(present[0]))
    expected = _SOURCE_FIELDS.get(kind)
    if expected is not None and metric.get(expected) is None:
        detail = "must populate information for the given metric source"
        errs.append(field.required(path.child(expected), detail))
    if len(present) > 1:
        for name in present:
            if name != expected:
                detail = "must populate the given metric source only"
                errs.append(field.forbidden(path.child(name), detail))
    return errs


def _validate_metrics(spec: Object, path: Path) -> list[FieldError]:
    metrics, errs = list_field(spec.get("metrics"), path)
    for i, metric in enumerate(metrics):
        errs += _validate_metric_spec(metric, path.index(i))
    if spec.get("minReplicas") == 0:
        types = {as_dict(m).get("type") for m in metrics}
        if not types & {"Object", "External"}:
            detail = (
                "must specify at least one Object or External metric to support scaling to "
                "zero replicas"
            )
            errs.append(field.forbidden(path, detail))
    return errs


def _validate_scaling_policy(value: Any, path: Path) -> list[FieldError]:
    policy, errs = object_field(value, path)
    kind = policy.get("type") or ""
    if kind not in SCALING_POLICY_TYPES:
        errs.append(field.not_supported(path.child("type"), kind, SCALING_POLICY_TYPES))
    for name in ("value", "periodSeconds"):
        number = policy.get(name, 0)
        if not is_int(number) or number <= 0:
            errs.append(field.invalid(path.child(name), number, "must be greater than zero"))
    period = policy.get("periodSeconds")
    if is_int(period) and period > MAX_PERIOD_SECONDS:
        detail = f"must be less than or equal to {MAX_PERIOD_SECONDS}"
        errs.append(field.invalid(path.child("periodSeconds"), period, detail))
    return errs


def _validate_scaling_rules(value: Any, path: Path) -> list[FieldError]:
    if value is None:
        return []
    rules, errs = object_field(value, path)
    window = rules.get("stabilizationWindowSeconds")
    window_path = path.child("stabilizationWindowSeconds")
    if is_int(window) and window < 0:
        errs.append(field.invalid(window_path, window, "must be greater than or equal to zero"))
    if is_int(window) and window > MAX_STABILIZATION_WINDOW_SECONDS:
        detail = f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"
        errs.append(field.invalid(window_path, window, detail))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errs.append(field.not_supported(path.child("selectPolicy"), select, SELECT_POLICIES))
    policies, e = list_field(rules.get("policies"), path.child("policies"))
    errs += e
    if not policies:
        errs.append(field.required(path.child("policies"), "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        errs += _validate_scaling_policy(policy, path.child("policies").index(i))
    return errs


def _validate_spec(hpa: Object) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec."""
    spec, errs = object_field(hpa.get("spec"), SPEC)
    min_replicas, max_replicas = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if min_replicas is not None and (not is_int(min_replicas) or min_replicas < 1):
        detail = f"must be greater than or equal to {MIN_REPLICAS_LOWER_BOUND}"
        errs.append(field.invalid(SPEC.child("minReplicas"), min_replicas, detail))
    if not is_int(max_replicas) or max_replicas < 1:
        errs.append(
            field.invalid(SPEC.child("maxReplicas"), max_replicas, "must be greater than 0")
        )
    if is_int(min_replicas) and is_int(max_replicas) and max_replicas < min_replicas:
        detail = "must be greater than or equal to `minReplicas`"
        errs.append(field.invalid(SPEC.child("maxReplicas"), max_replicas, detail))
    errs += validate_cross_version_object_reference(
        spec.get("scaleTargetRef"), SPEC.child("scaleTargetRef")
    )
    errs += _validate_metrics(spec, SPEC.child("metrics"))
    behavior, e = object_field(spec.get("behavior"), SPEC.child("behavior"))
    errs += e
    for name in ("scaleUp", "scaleDown"):
        errs += _validate_scaling_rules(behavior.get(name), SPEC.child("behavior", name))
    return errs


def validate_hpa(hpa: Any) -> list[FieldError]:
    errs = validate_object_meta(hpa, namespaced=True)
    if not isinstance(hpa, dict):
        return errs
    return errs + _validate_spec(hpa)


def validate_hpa_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    return errs + _validate_spec(new)


def validate_hpa_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    status, e = status_of(new)
    return errs + e + nonnegative_fields(status, STATUS, ("currentReplicas", "desiredReplicas"))


HORIZONTAL_POD_AUTOSCALER = Kind(
    group="autoscaling",
    version="v2",
    kind="HorizontalPodAutoscaler",
    plural="horizontalpodautoscalers",
    namespaced=True,
    model="V2HorizontalPodAutoscaler",
    short_names=("hpa",),
    categories=("all",),
    subresources=("status",),
    default=default_hpa,
    prepare_for_create=prepare_hpa_for_create,
    prepare_for_update=keep_status,
    prepare_for_status_update=keep_spec,
    validate=validate_hpa,
    validate_update=validate_hpa_update,
    validate_status_update=validate_hpa_status_update,
)
