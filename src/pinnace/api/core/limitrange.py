"""LimitRange (v1): defaulting and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_resources import validate_container_resource_name
from pinnace.api.core.resourcequota import validate_resource_name
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_qualified_name
from pinnace.api.validation import (
    go_quantity,
    list_field,
    object_field,
    parse_quantity_field,
    string_field,
)
from pinnace.resources.names import is_overcommit_allowed
from pinnace.resources.quantity import Quantity

LIMIT_TYPE_POD = "Pod"
LIMIT_TYPE_CONTAINER = "Container"
LIMIT_TYPE_PVC = "PersistentVolumeClaim"
_STANDARD_LIMIT_TYPES = (LIMIT_TYPE_POD, LIMIT_TYPE_CONTAINER, LIMIT_TYPE_PVC)
_LISTS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def default_limit_range(lr: dict[str, Any]) -> None:
    spec = lr.get("spec")
    limits = spec.get("limits") if isinstance(spec, dict) else None
    for item in limits if isinstance(limits, list) else []:
        if isinstance(item, dict) and item.get("type") == LIMIT_TYPE_CONTAINER:
            _default_container_item(item)


def _default_container_item(item: dict[str, Any]) -> None:
    """A container's default limit comes from max; its default request from the default limit,
    else from min."""
    maximum, minimum = _as_map(item.get("max")), _as_map(item.get("min"))
    default = dict(_as_map(item.get("default")))
    for name, value in maximum.items():
        default.setdefault(name, value)
    request = dict(_as_map(item.get("defaultRequest")))
    for name, value in [*default.items(), *minimum.items()]:
        request.setdefault(name, value)
    if default:
        item["default"] = default
    if request:
        item["defaultRequest"] = request


def _as_map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def validate_limit_range(lr: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(lr, namespaced=True)
    spec, e = object_field(lr.get("spec"), Path("spec"))
    errs += e
    path = Path("spec", "limits")
    items, e = list_field(spec.get("limits"), path)
    errs += e
    seen_types: set[str] = set()
    for i, item in enumerate(items):
        item, e = object_field(item, path.index(i))
        errs += e
        errs += _validate_item(item, path.index(i), seen_types)
    return errs


def validate_limit_range_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The strategy checks the new object as on create; the metadata update rules are the
    ones kube-apiserver applies to every update."""
    return validate_object_meta_update(new, old) + validate_limit_range(new)


def _validate_type(value: str, path: Path) -> list[FieldError]:
    errs = [field.invalid(path, value, m) for m in is_qualified_name(value)]
    if not errs and "/" not in value and value not in _STANDARD_LIMIT_TYPES:
        errs.append(field.invalid(path, value, "must be a standard limit type or fully qualified"))
    return errs


def _validate_item(item: dict[str, Any], at: Path, seen_types: set[str]) -> list[FieldError]:
    limit_type, errs = string_field(item.get("type"), at.child("type"))
    errs += _validate_type(limit_type, at.child("type"))
    if limit_type in seen_types:
        errs.append(field.duplicate(at.child("type"), limit_type))
    seen_types.add(limit_type)

    def validate_name(name: str, path: Path) -> list[FieldError]:
        if limit_type in (LIMIT_TYPE_POD, LIMIT_TYPE_CONTAINER):
            return validate_container_resource_name(name, path)
        return validate_resource_name(name, path)

    lists: dict[str, dict[str, Quantity]] = {name: {} for name in _LISTS}
    keys: dict[str, None] = {}

    def collect(list_name: str) -> None:
        resources, e = object_field(item.get(list_name), at.child(list_name))
        errs.extend(e)
        for name, value in resources.items():
            path = at.child(list_name).key(name)
            errs.extend(validate_name(name, path))
            keys[name] = None
            quantity, e = parse_quantity_field(value, path)
            errs.extend(e)
            if quantity is not None:
                lists[list_name][name] = quantity

    collect("max")
    collect("min")
    if limit_type == LIMIT_TYPE_POD:
        for list_name in ("default", "defaultRequest"):
            if item.get(list_name):
                errs.append(
                    field.forbidden(
                        at.child(list_name), "may not be specified when `type` is 'Pod'"
                    )
                )
    else:
        collect("default")
        collect("defaultRequest")
    if (
        limit_type == LIMIT_TYPE_PVC
        and "storage" not in lists["min"]
        and "storage" not in lists["max"]
    ):
        errs.append(
            field.required(
                at.child("limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            )
        )
    collect("maxLimitRequestRatio")
    for name in keys:
        errs += _validate_bounds(name, lists, at)
    return errs


def _validate_bounds(
    name: str, lists: dict[str, dict[str, Quantity]], at: Path
) -> list[FieldError]:
    lo = lists["min"].get(name)
    hi = lists["max"].get(name)
    default = lists["default"].get(name)
    request = lists["defaultRequest"].get(name)
    ratio = lists["maxLimitRequestRatio"].get(name)
    errs = []

    def invalid(list_name: str, shown: Quantity, detail: str) -> None:
        errs.append(field.invalid(at.child(list_name).key(name), go_quantity(shown), detail))

    if lo is not None and hi is not None and lo > hi:
        invalid("min", lo, f"min value {lo} is greater than max value {hi}")
    if request is not None and lo is not None and lo > request:
        invalid(
            "defaultRequest",
            request,
            f"min value {lo} is greater than default request value {request}",
        )
    if request is not None and hi is not None and request > hi:
        invalid(
            "defaultRequest",
            request,
            f"default request value {request} is greater than max value {hi}",
        )
    if request is not None and default is not None and request > default:
        invalid(
            "defaultRequest",
            request,
            f"default request value {request} is greater than default limit value {default}",
        )
    if default is not None and lo is not None and lo > default:
        invalid("default", lo, f"min value {lo} is greater than default value {default}")
    if default is not None and hi is not None and default > hi:
        invalid("default", hi, f"default value {default} is greater than max value {hi}")
    if ratio is not None and ratio < Quantity(1):
        invalid("maxLimitRequestRatio", ratio, f"ratio {ratio} is less than 1")
    if ratio is not None and lo is not None and hi is not None:
        # Go divides the milli-values in float64 (the plain values for very large amounts).
        if max(ratio.value(), lo.value(), hi.value()) < _MAX_MILLI_VALUE:
            ratio_value = ratio.milli_value() / 1000
            lo_value, hi_value = lo.milli_value(), hi.milli_value()
        else:
            ratio_value, lo_value, hi_value = float(ratio.value()), lo.value(), hi.value()
        limit = _go_float_div(hi_value, lo_value)
        if ratio_value > limit:
            invalid(
                "maxLimitRequestRatio", ratio, f"ratio {ratio} is greater than max/min = {limit:f}"
            )
    if (
        not is_overcommit_allowed(name)
        and default is not None
        and request is not None
        and default != request
    ):
        invalid(
            "defaultRequest",
            request,
            f"default value {default} must equal to defaultRequest value {request} in {name}",
        )
    return errs


_MAX_MILLI_VALUE = (2**63 - 1) // 1000


def _go_float_div(a: int, b: int) -> float:
    if b == 0:
        return float("inf") if a > 0 else (float("nan") if a == 0 else float("-inf"))
    return a / b


LIMIT_RANGE = Kind(
    group="",
    version="v1",
    kind="LimitRange",
    plural="limitranges",
    namespaced=True,
    allow_create_on_update=True,
    model="V1LimitRange",
    short_names=("limits",),
    default=default_limit_range,
    validate=validate_limit_range,
    validate_update=validate_limit_range_update,
)
