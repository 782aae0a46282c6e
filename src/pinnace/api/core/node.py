"""Node (v1): defaulting, the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

import ipaddress
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_scheduling import TAINT_EFFECTS
from pinnace.api.field import ErrorType, FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_label_name
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_valid_label_value
from pinnace.api.strategy import keep_spec, keep_status
from pinnace.api.validation import (
    GoValue,
    go_slice,
    go_struct,
    list_field,
    object_field,
    string_field,
    string_list,
    validate_resource_quantity,
)

# Taint errors are reported under metadata, as kube-apiserver does.
_TAINTS_PATH = Path("metadata", "taints")
_POD_CIDRS_PATH = Path("spec", "podCIDRs")
_POD_CIDR_CHANGE = 'node updates may not change podCIDR except from "" to valid'
_PROVIDER_ID_CHANGE = 'node updates may not change providerID except from "" to valid'


def default_node(node: dict[str, Any]) -> None:
    spec = node.get("spec")
    if isinstance(spec, dict):
        _reconcile_pod_cidrs(spec)
    status = node.get("status")
    if isinstance(status, dict) and not status.get("allocatable") and status.get("capacity"):
        status["allocatable"] = dict(status["capacity"])


def _reconcile_pod_cidrs(spec: dict[str, Any]) -> None:
    """podCIDR and podCIDRs[0] say the same; when they differ, podCIDR wins (as v1 conversion)."""
    single = spec.get("podCIDR")
    many = spec.get("podCIDRs")
    if not isinstance(many, list):
        many = []
    if isinstance(single, str) and single and (not many or many[0] != single):
        many = [single]
    if many:
        spec["podCIDRs"] = many
        spec["podCIDR"] = many[0]


def validate_node(node: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(node, namespaced=False)
    spec, e = object_field(node.get("spec"), Path("spec"))
    errs += e
    errs += validate_taints(spec.get("taints"), _TAINTS_PATH)
    errs += _validate_node_resources(node)
    cidrs, e = string_list(spec.get("podCIDRs"), _POD_CIDRS_PATH)
    errs += e + _validate_pod_cidrs(cidrs)
    return errs


def validate_node_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _validate_node_resources(new)
    errs += _validate_addresses(new)
    spec, e = object_field(new.get("spec"), Path("spec"))
    errs += e
    old_spec, _ = object_field(old.get("spec"), Path("spec"))
    old_cidrs = old_spec.get("podCIDRs") or []
    if old_cidrs:
        new_cidrs = spec.get("podCIDRs") or []
        if len(old_cidrs) != len(new_cidrs):
            errs.append(field.forbidden(_POD_CIDRS_PATH, _POD_CIDR_CHANGE))
        else:
            errs += [
                field.forbidden(_POD_CIDRS_PATH, _POD_CIDR_CHANGE)
                for a, b in zip(old_cidrs, new_cidrs, strict=True)
                if a != b
            ]
    old_provider = old_spec.get("providerID") or ""
    if old_provider and old_provider != (spec.get("providerID") or ""):
        errs.append(field.forbidden(Path("spec", "providerID"), _PROVIDER_ID_CHANGE))
    errs += validate_taints(spec.get("taints"), _TAINTS_PATH)
    if (spec.get("externalID") or "") != (old_spec.get("externalID") or ""):
        errs.append(field.forbidden(Path("spec", "externalID"), "may not be updated"))
    return errs


def validate_taint_effect(effect: str, allow_empty: bool, path: Path) -> list[FieldError]:
    if not effect:
        return [] if allow_empty else [field.required(path)]
    if effect not in TAINT_EFFECTS:
        return [field.not_supported(path, effect, TAINT_EFFECTS)]
    return []


def validate_taints(value: Any, path: Path) -> list[FieldError]:
    taints, errs = list_field(value, path)
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        at = path.index(i)
        taint, e = object_field(taint, at)
        errs += e
        key, e = string_field(taint.get("key"), at.child("key"))
        errs += e
        value, e = string_field(taint.get("value"), at.child("value"))
        errs += e
        effect, e = string_field(taint.get("effect"), at.child("effect"))
        errs += e
        errs += validate_label_name(key, at.child("key"))
        messages = is_valid_label_value(value)
        if messages:
            errs.append(field.invalid(at.child("value"), value, ";".join(messages)))
        errs += validate_taint_effect(effect, False, at.child("effect"))
        if (key, effect) in seen:
            shown = _go_taint(key, value, effect, taint.get("timeAdded"))
            errs.append(
                FieldError(
                    ErrorType.DUPLICATE,
                    str(at),
                    shown,
                    "taints must be unique by key and effect pair",
                )
            )
            continue
        seen.add((key, effect))
    return errs


def _go_taint(key: str, value: str, effect: str, time_added: Any) -> GoValue:
    added = GoValue("(*v1.Time)(nil)") if not time_added else GoValue(str(time_added))
    return go_struct(
        "core.Taint", [("Key", key), ("Value", value), ("Effect", effect), ("TimeAdded", added)]
    )


def _validate_node_resources(node: dict[str, Any]) -> list[FieldError]:
    status, errs = object_field(node.get("status"), Path("status"))
    for list_name in ("capacity", "allocatable"):
        resources, e = object_field(status.get(list_name), Path("status", list_name))
        errs += e
        for name, quantity in resources.items():
            errs += validate_resource_quantity(name, quantity, Path("status", list_name, name))
    return errs


def _validate_addresses(node: dict[str, Any]) -> list[FieldError]:
    status, _ = object_field(node.get("status"), Path("status"))
    addresses, errs = list_field(status.get("addresses"), Path("status", "addresses"))
    seen: set[tuple[Any, Any]] = set()
    for i, address in enumerate(addresses):
        if not isinstance(address, dict):
            continue
        pair = (address.get("type") or "", address.get("address") or "")
        if pair in seen:
            shown = go_struct("core.NodeAddress", [("Type", pair[0]), ("Address", pair[1])])
            errs.append(field.duplicate(Path("status", "addresses").index(i), shown))
        seen.add(pair)
    return errs


def _parse_cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def _validate_pod_cidrs(cidrs: list[str]) -> list[FieldError]:
    errs = []
    networks = [_parse_cidr(c) for c in cidrs]
    for i, network in enumerate(networks):
        if network is None:
            errs.append(
                field.invalid(
                    _POD_CIDRS_PATH.index(i), go_slice("string", cidrs), "must be valid CIDR"
                )
            )
    if len(cidrs) > 1:
        bad = next((c for c, n in zip(cidrs, networks, strict=True) if n is None), None)
        if bad is not None:
            errs.append(
                field.internal(
                    _POD_CIDRS_PATH,
                    "invalid PodCIDRs. failed to check with dual stack with error:"
                    f'failed to parse cidr value:"{bad}" with error:invalid CIDR address: {bad}',
                )
            )
        families = {n.version for n in networks if n is not None}
        dual_stack = bad is None and families == {4, 6}
        if not dual_stack or len(cidrs) > 2:
            errs.append(
                field.invalid(
                    _POD_CIDRS_PATH,
                    go_slice("string", cidrs),
                    "may specify no more than one CIDR for each IP family",
                )
            )
        seen: set[str] = set()
        for i, cidr in enumerate(cidrs):
            if cidr in seen:
                errs.append(field.duplicate(_POD_CIDRS_PATH.index(i), cidr))
            seen.add(cidr)
    return errs


NODE = Kind(
    group="",
    version="v1",
    kind="Node",
    plural="nodes",
    namespaced=False,
    model="V1Node",
    short_names=("no",),
    subresources=("proxy", "status"),
    default=default_node,
    prepare_for_update=keep_status,
    prepare_for_status_update=keep_spec,
    validate=validate_node,
    validate_update=validate_node_update,
    validate_status_update=validate_node_update,
)
