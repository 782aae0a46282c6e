"""Validation of container resource requirements (and pod overhead), as Kubernetes words it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_fields import read_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.names import is_qualified_name
from pinnace.api.validation import (
    parse_quantity_field,
    type_error,
    validate_resource_quantity,
)
from pinnace.resources.names import (
    hugepage_size_from_resource_name,
    is_extended_resource_name,
    is_hugepage_resource_name,
    is_native_resource,
    is_overcommit_allowed,
    is_standard_container_resource_name,
    is_standard_resource_name,
)
from pinnace.resources.qos import QOS_COMPUTE_RESOURCES
from pinnace.resources.quantity import Quantity


def validate_container_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = [field.invalid(path, name, m) for m in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name:
        if not is_standard_resource_name(name):
            errs.append(
                field.invalid(path, name, "must be a standard resource type or fully qualified")
            )
        if not is_standard_container_resource_name(name):
            errs.append(field.invalid(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource_name(name):
        errs.append(field.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def validate_resource_requirements(resources: Any, path: Path) -> list[FieldError]:
    """A container's `resources` (limits and requests); overhead goes through here too with
    limits only, as in Kubernetes."""
    if resources is None:
        return []
    if not isinstance(resources, dict):
        return [type_error(path, resources, "object")]
    errs: list[FieldError] = []
    limits_path = path.child("limits")
    requests_path = path.child("requests")
    limits = _parse_list(read_dict(resources, "limits", path, errs), limits_path, errs)
    requests = _parse_list(read_dict(resources, "requests", path, errs), requests_path, errs)
    has_compute = any(name in QOS_COMPUTE_RESOURCES for name in (*limits, *requests))
    has_hugepages = False
    for name, quantity in limits.items():
        if is_hugepage_resource_name(name):
            has_hugepages = True
            errs += _validate_hugepage_value(name, quantity, limits_path.key(name))
    for name, quantity in requests.items():
        limit = limits.get(name)
        if limit is not None and quantity is not None:
            if quantity != limit and not is_overcommit_allowed(name):
                errs.append(
                    field.invalid(
                        requests_path, str(quantity), f"must be equal to {name} limit of {limit}"
                    )
                )
            elif quantity > limit:
                errs.append(
                    field.invalid(
                        requests_path,
                        str(quantity),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif name not in limits and not is_overcommit_allowed(name):
            errs.append(
                field.required(limits_path, "Limit must be set for non overcommitable resources")
            )
        if is_hugepage_resource_name(name):
            has_hugepages = True
            errs += _validate_hugepage_value(name, quantity, requests_path.key(name))
    if has_hugepages and not has_compute:
        errs.append(field.forbidden(path, "HugePages require cpu or memory"))
    return errs


def validate_overhead(overhead: Any, path: Path) -> list[FieldError]:
    return validate_resource_requirements({"limits": overhead}, path)


def _parse_list(
    resources: dict[str, Any], path: Path, errs: list[FieldError]
) -> dict[str, Quantity | None]:
    """Validate names and amounts; map each name to its quantity (None when unparseable)."""
    parsed: dict[str, Quantity | None] = {}
    for name, value in resources.items():
        quantity = None
        if isinstance(name, str) and isinstance(value, str):
            quantity = _clean_quantity(name, value)
        if quantity is None:
            quantity = _parse_entry(name, value, path.key(name), errs)
        parsed[name] = quantity
    return parsed


def _parse_entry(name: str, value: Any, path: Path, errs: list[FieldError]) -> Quantity | None:
    errs += validate_container_resource_name(name, path)
    quantity, parse_errs = parse_quantity_field(value, path)
    if quantity is None:
        errs += parse_errs
    else:
        errs += validate_resource_quantity(name, value, path)
    return quantity


@lru_cache(maxsize=1024)
def _clean_quantity(name: str, value: str) -> Quantity | None:
    """The quantity of an entry that validates without errors, else None. The same few
    entries recur in every pod, and their errors would not depend on where they are."""
    errs: list[FieldError] = []
    quantity = _parse_entry(name, value, Path("resources"), errs)
    return None if errs else quantity


def _validate_hugepage_value(name: str, quantity: Quantity | None, path: Path) -> list[FieldError]:
    if quantity is None:
        return []
    try:
        page_size = hugepage_size_from_resource_name(name)
    except ValueError:
        page_size = None
    divisible = (
        page_size is not None
        and page_size.sign() > 0
        and page_size.milli_value() % 1000 == 0
        and quantity.value() % page_size.value() == 0
    )
    if divisible:
        return []
    return [
        field.invalid(path, str(quantity), f"{quantity} is not positive integer multiple of {name}")
    ]
