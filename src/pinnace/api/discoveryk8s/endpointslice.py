"""EndpointSlice (discovery.k8s.io/v1): defaulting and validation as Kubernetes v1.32
(pkg/apis/discovery/v1/defaults.go, pkg/apis/discovery/validation). The EndpointSlice
controller (`pinnace.controllers.endpointslice`) writes them from Services and their pods."""

from __future__ import annotations

import ipaddress
from typing import Any

from pinnace.api import field
from pinnace.api.core.endpoints import dict_list, validate_endpoint_port
from pinnace.api.core.service import validate_non_special_ip
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label, is_dns1123_subdomain
from pinnace.api.validation import validate_immutable

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
MAX_ENDPOINTS = 1000
MAX_PORTS = 100
MAX_ADDRESSES = 100


def default_endpoint_slice(es: dict[str, Any]) -> None:
    for port in dict_list(es.get("ports")):
        port.setdefault("name", "")
        if port.get("protocol") is None:
            port["protocol"] = "TCP"


def _address_errors(address: Any, address_type: str, path: Path) -> list[FieldError]:
    """An address of the slice's type; an IP may not be a special one either."""
    if address_type == "FQDN":
        return [field.invalid(path, address, m) for m in is_dns1123_subdomain(str(address))]
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        parsed = None
    wanted = 4 if address_type == "IPv4" else 6
    if parsed is None or parsed.version != wanted:
        return [field.invalid(path, address, f"must be a valid {address_type} address")]
    return validate_non_special_ip(str(address), path)


def validate_endpoint_slice(es: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(es, namespaced=True)
    address_type = es.get("addressType") or ""
    if not address_type:
        errs.append(field.required(Path("addressType")))
    elif address_type not in ADDRESS_TYPES:
        errs.append(field.not_supported(Path("addressType"), address_type, ADDRESS_TYPES))
    endpoints = dict_list(es.get("endpoints"))
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(field.too_many(Path("endpoints"), len(endpoints), MAX_ENDPOINTS))
    for i, endpoint in enumerate(endpoints):
        errs += _validate_endpoint(endpoint, address_type, Path("endpoints").index(i))
    ports = dict_list(es.get("ports"))
    if len(ports) > MAX_PORTS:
        errs.append(field.too_many(Path("ports"), len(ports), MAX_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports):
        path = Path("ports").index(i)
        name = port.get("name") or ""
        if name in names:
            errs.append(field.duplicate(path.child("name"), name))
        names.add(name)
        # The port number is optional here: a slice may carry every port of its name.
        number = 1 if port.get("port") is None else port["port"]
        errs += validate_endpoint_port({**port, "port": number}, False, path)
    return errs


def _validate_endpoint(endpoint: dict[str, Any], address_type: str, path: Path) -> list[FieldError]:
    addresses = endpoint.get("addresses") or []
    errs: list[FieldError] = []
    if not addresses:
        errs.append(field.required(path.child("addresses"), "must contain at least 1 address"))
    elif len(addresses) > MAX_ADDRESSES:
        errs.append(field.too_many(path.child("addresses"), len(addresses), MAX_ADDRESSES))
    if address_type in ADDRESS_TYPES:
        for j, address in enumerate(addresses):
            address_path = path.child("addresses").index(j)
            errs += _address_errors(address, address_type, address_path)
    hostname = endpoint.get("hostname")
    if hostname is not None:
        errs += [
            field.invalid(path.child("hostname"), hostname, m) for m in is_dns1123_label(hostname)
        ]
    return errs


def validate_endpoint_slice_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + validate_endpoint_slice(new)
    return errs + validate_immutable(
        new.get("addressType"), old.get("addressType"), Path("addressType")
    )


ENDPOINT_SLICE = Kind(
    group="discovery.k8s.io",
    version="v1",
    kind="EndpointSlice",
    plural="endpointslices",
    namespaced=True,
    model="V1EndpointSlice",
    default=default_endpoint_slice,
    validate=validate_endpoint_slice,
    validate_update=validate_endpoint_slice_update,
)
