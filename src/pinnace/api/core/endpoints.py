"""Endpoints (v1): defaulting and validation as Kubernetes v1.32 (SetDefaults_Endpoints,
pkg/apis/core/validation ValidateEndpoints). The endpoints controller
(`pinnace.controllers.endpoints`) writes them from Services and their pods."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.service import BAD_IP, PROTOCOLS, is_ip, validate_non_special_ip
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_port_num,
)


def dict_list(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field (nothing when it is not a list)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def default_endpoints(ep: dict[str, Any]) -> None:
    for subset in dict_list(ep.get("subsets")):
        for port in dict_list(subset.get("ports")):
            if not port.get("protocol"):
                port["protocol"] = "TCP"


def validate_endpoints(ep: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(ep, namespaced=True)
    for i, subset in enumerate(dict_list(ep.get("subsets"))):
        path = Path("subsets").index(i)
        ready = dict_list(subset.get("addresses"))
        not_ready = dict_list(subset.get("notReadyAddresses"))
        if not ready and not not_ready:
            errs.append(field.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for key, addresses in (("addresses", ready), ("notReadyAddresses", not_ready)):
            for j, address in enumerate(addresses):
                errs += validate_endpoint_address(address, path.child(key).index(j))
        ports = dict_list(subset.get("ports"))
        for j, port in enumerate(ports):
            errs += validate_endpoint_port(port, len(ports) > 1, path.child("ports").index(j))
    return errs


def validate_endpoint_address(address: dict[str, Any], path: Path) -> list[FieldError]:
    """validateEndpointAddress: the IP, hostname and node name, then (again, as Kubernetes
    does) the IP as ValidateNonSpecialIP sees it."""
    ip = address.get("ip") or ""
    errs = [] if is_ip(ip) else [field.invalid(path.child("ip"), ip, BAD_IP)]
    hostname = address.get("hostname") or ""
    if hostname:
        errs += [
            field.invalid(path.child("hostname"), hostname, m) for m in is_dns1123_label(hostname)
        ]
    node_name = address.get("nodeName")
    if isinstance(node_name, str):
        errs += [
            field.invalid(path.child("nodeName"), node_name, m)
            for m in is_dns1123_subdomain(node_name)
        ]
    return errs + validate_non_special_ip(ip, path.child("ip"))


def validate_endpoint_port(
    port: dict[str, Any], require_name: bool, path: Path
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(field.required(path.child("name")))
    elif name:
        errs += [field.invalid(path.child("name"), name, m) for m in is_dns1123_label(name)]
    number = port.get("port", 0)
    errs += [field.invalid(path.child("port"), number, m) for m in is_valid_port_num(number)]
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(field.required(path.child("protocol")))
    elif protocol not in PROTOCOLS:
        errs.append(field.not_supported(path.child("protocol"), protocol, PROTOCOLS))
    if port.get("appProtocol") is not None:
        app = port["appProtocol"]
        errs += [field.invalid(path.child("appProtocol"), app, m) for m in is_qualified_name(app)]
    return errs


def validate_endpoints_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_endpoints(new)


ENDPOINTS = Kind(
    group="",
    version="v1",
    kind="Endpoints",
    plural="endpoints",
    namespaced=True,
    model="V1Endpoints",
    short_names=("ep",),
    allow_create_on_update=True,
    default=default_endpoints,
    validate=validate_endpoints,
    validate_update=validate_endpoints_update,
)
