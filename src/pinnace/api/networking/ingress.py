"""Ingress (networking.k8s.io/v1): the registry strategy and validation as Kubernetes v1.32
(pkg/registry/networking/ingress/strategy.go, pkg/apis/networking/validation
ValidateIngressCreate, ValidateIngressUpdate and ValidateIngressStatusUpdate).

kube-apiserver only stores and validates Ingresses: routing traffic is an ingress controller's
work, outside kube-apiserver, kube-controller-manager and the kubelet. networking/v1 defaults
nothing on an Ingress (a path's pathType has no default).
"""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.apps import bump_generation, go_nil_slice, reset_for_create, spec_changed
from pinnace.api.core.pod_shape import as_dict, as_int, as_list, as_str
from pinnace.api.core.service import BAD_IP, is_ip
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import is_path_segment_name, validate_object_meta, validate_object_meta_update
from pinnace.api.names import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    is_dns1035_label,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
    max_len_error,
    regex_error,
)
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import GoValue

INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
_INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES = ("/..", "/.")
_SPEC = Path("spec")
_NOT_AN_IP = "must be a DNS name, not an IP address"
# Ingress{}.Status as networking/v1 serializes it: loadBalancer has no omitempty effect.
_EMPTY_STATUS: dict[str, Any] = {"loadBalancer": {}}

_WILDCARD_FMT = r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_WILDCARD = re.compile(_WILDCARD_FMT)
_WILDCARD_MSG = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character"
)


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """validation.IsWildcardDNS1123Subdomain: `*.` and a DNS subdomain."""
    errs = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _WILDCARD.fullmatch(value):
        errs.append(regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


def prepare_ingress_for_create(ingress: dict[str, Any]) -> None:
    reset_for_create(ingress, _EMPTY_STATUS)


def prepare_ingress_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


def _host_errors(host: str, path: Path) -> list[FieldError]:
    """A TLS host or rule host: a DNS subdomain, or one with a leading `*.`."""
    check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
    return [field.invalid(path, host, m) for m in check(host)]


def _validate_service_backend(
    service: dict[str, Any], path: Path, backend_path: Path
) -> list[FieldError]:
    """A Service backend: a Service name and one of a port name or number."""
    errs: list[FieldError] = []
    name = as_str(service.get("name"))
    if not name:
        errs.append(field.required(path.child("name")))
    else:
        errs += [field.invalid(path.child("name"), name, m) for m in is_dns1035_label(name)]
    port = as_dict(service.get("port"))
    port_name, number = as_str(port.get("name")), as_int(port.get("number")) or 0
    if port_name and number:
        errs.append(field.invalid(backend_path, "", "cannot set both port name & port number"))
    elif port_name:
        port_path = path.child("port", "name")
        errs += [field.invalid(port_path, port_name, m) for m in is_valid_port_name(port_name)]
    elif number:
        port_path = path.child("port", "number")
        errs += [field.invalid(port_path, number, m) for m in is_valid_port_num(number)]
    else:
        errs.append(field.required(backend_path, "port name or number is required"))
    return errs


def validate_typed_reference(ref: dict[str, Any], path: Path) -> list[FieldError]:
    """validateIngressTypedLocalObjectReference: apiGroup, kind and name of a resource."""
    errs: list[FieldError] = []
    group = ref.get("apiGroup")
    if group is not None:
        errs += [
            field.invalid(path.child("apiGroup"), group, m) for m in is_dns1123_subdomain(group)
        ]
    for key in ("kind", "name"):
        value = as_str(ref.get(key))
        if not value:
            errs.append(field.required(path.child(key)))
        else:
            errs += [field.invalid(path.child(key), value, m) for m in is_path_segment_name(value)]
    return errs


def _validate_backend(backend: dict[str, Any], path: Path) -> list[FieldError]:
    """validateIngressBackend: a Service and its port, or another resource."""
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [field.invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return validate_typed_reference(as_dict(resource), path.child("resource"))
    if service is not None:
        return _validate_service_backend(as_dict(service), path.child("service"), path)
    return [field.invalid(path, "", "resource or service backend is required")]


def _validate_path(http_path: dict[str, Any], path: Path) -> list[FieldError]:
    """validateHTTPIngressPath."""
    path_type = http_path.get("pathType")
    if path_type is None:
        return [field.required(path.child("pathType"), "pathType must be specified")]
    errs: list[FieldError] = []
    value, value_path = as_str(http_path.get("path")), path.child("path")
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(field.invalid(value_path, value, "must be an absolute path"))
        errs += [
            field.invalid(value_path, value, f"must not contain '{seq}'")
            for seq in _INVALID_PATH_SEQUENCES
            if seq in value
        ]
        errs += [
            field.invalid(value_path, value, f"cannot end with '{suffix}'")
            for suffix in _INVALID_PATH_SUFFIXES
            if value.endswith(suffix)
        ]
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(field.invalid(value_path, value, "must be an absolute path"))
    else:
        errs.append(field.not_supported(path.child("pathType"), path_type, PATH_TYPES))
    return errs + _validate_backend(as_dict(http_path.get("backend")), path.child("backend"))


def _validate_rule_value(rule: dict[str, Any], path: Path) -> list[FieldError]:
    """validateIngressRuleValue: an HTTP rule has at least one path, each valid."""
    http = rule.get("http")
    if http is None:
        return []
    paths_path = path.child("http", "paths")
    paths = as_list(as_dict(http).get("paths"))
    errs = [] if paths else [field.required(paths_path)]
    for i, http_path in enumerate(paths):
        errs += _validate_path(as_dict(http_path), paths_path.index(i))
    return errs


def _validate_rules(rules: list[Any], allow_invalid_wildcard_rule: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule, path = as_dict(rule), _SPEC.child("rules").index(i)
        host = as_str(rule.get("host"))
        if host and is_ip(host):
            errs.append(field.invalid(path.child("host"), host, _NOT_AN_IP))
        if host:
            errs += _host_errors(host, path.child("host"))
        if "*" not in host or not allow_invalid_wildcard_rule:
            errs += _validate_rule_value(rule, path)
    return errs


def _secret_name_errors(name: str) -> list[str]:
    return is_dns1123_subdomain(name) if name else []


def _validate_tls(tls: list[Any], allow_invalid_secret_name: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(tls):
        entry, path = as_dict(entry), _SPEC.child("tls").index(i)
        for j, host in enumerate(as_list(entry.get("hosts"))):
            errs += _host_errors(as_str(host), path.child("hosts").index(j))
        if not allow_invalid_secret_name:
            name = as_str(entry.get("secretName"))
            errs += [
                field.invalid(path.child("secretName"), name, m) for m in _secret_name_errors(name)
            ]
    return errs


def _validate_spec(
    spec: dict[str, Any], allow_invalid_secret_name: bool, allow_invalid_wildcard_rule: bool
) -> list[FieldError]:
    """ValidateIngressSpec."""
    errs: list[FieldError] = []
    rules, default_backend = spec.get("rules"), spec.get("defaultBackend")
    if not rules and default_backend is None:
        shown = (
            go_nil_slice("networking.IngressRule")
            if rules is None
            else GoValue("[]networking.IngressRule{}")
        )
        message = "either `defaultBackend` or `rules` must be specified"
        errs.append(field.invalid(_SPEC, shown, message))
    if default_backend is not None:
        errs += _validate_backend(as_dict(default_backend), _SPEC.child("defaultBackend"))
    errs += _validate_rules(as_list(rules), allow_invalid_wildcard_rule)
    errs += _validate_tls(as_list(spec.get("tls")), allow_invalid_secret_name)
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        path = _SPEC.child("ingressClassName")
        errs += [field.invalid(path, class_name, m) for m in is_dns1123_subdomain(class_name)]
    return errs


def _validate(ingress: Any, allow_secret: bool, allow_wildcard: bool) -> list[FieldError]:
    errs = validate_object_meta(ingress, namespaced=True)
    if not isinstance(ingress, dict):
        return errs
    return errs + _validate_spec(as_dict(ingress.get("spec")), allow_secret, allow_wildcard)


def validate_ingress(ingress: Any) -> list[FieldError]:
    """ValidateIngressCreate: the spec, and a class annotation that agrees with the class."""
    errs = _validate(ingress, allow_secret=False, allow_wildcard=False)
    annotations = as_dict(as_dict(as_dict(ingress).get("metadata")).get("annotations"))
    class_name = as_dict(as_dict(ingress).get("spec")).get("ingressClassName")
    annotated = annotations.get(INGRESS_CLASS_ANNOTATION)
    if annotated is not None and class_name is not None and annotated != class_name:
        path = Path("annotations").child(INGRESS_CLASS_ANNOTATION)
        message = "must match `ingressClassName` when both are specified"
        errs.append(field.invalid(path, annotated, message))
    return errs


def ingress_warnings(ingress: Any) -> list[str]:
    """The strategy's WarningsOnCreate: the class annotation is deprecated."""
    annotations = as_dict(as_dict(as_dict(ingress).get("metadata")).get("annotations"))
    class_name = as_dict(as_dict(ingress).get("spec")).get("ingressClassName")
    if INGRESS_CLASS_ANNOTATION not in annotations or class_name is not None:
        return []
    return [
        f'annotation "{INGRESS_CLASS_ANNOTATION}" is deprecated, please use '
        "'spec.ingressClassName' instead"
    ]


def _has_invalid_secret_name(ingress: Any) -> bool:
    tls = as_list(as_dict(as_dict(ingress).get("spec")).get("tls"))
    return any(_secret_name_errors(as_str(as_dict(t).get("secretName"))) for t in tls)


def _has_invalid_wildcard_rule(ingress: Any) -> bool:
    rules = as_list(as_dict(as_dict(ingress).get("spec")).get("rules"))
    return any(
        "*" in as_str(as_dict(rule).get("host")) and _validate_rule_value(as_dict(rule), Path())
        for rule in rules
    )


def validate_ingress_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateIngressUpdate: what the stored Ingress already had stays allowed (an invalid
    TLS secret name, a wildcard host with invalid paths)."""
    return validate_object_meta_update(new, old) + _validate(
        new, _has_invalid_secret_name(old), _has_invalid_wildcard_rule(old)
    )


def validate_ingress_status_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateIngressStatusUpdate: the addresses an ingress controller reports."""
    errs = validate_object_meta_update(new, old)
    path = Path("status", "loadBalancer", "ingress")
    entries = as_list(
        as_dict(as_dict(as_dict(new).get("status")).get("loadBalancer")).get("ingress")
    )
    for i, entry in enumerate(entries):
        entry, at = as_dict(entry), path.index(i)
        ip, hostname = as_str(entry.get("ip")), as_str(entry.get("hostname"))
        if ip and not is_ip(ip):
            errs.append(field.invalid(at.child("ip"), ip, BAD_IP))
        if hostname:
            errs += [
                field.invalid(at.child("hostname"), hostname, m)
                for m in is_dns1123_subdomain(hostname)
            ]
            if is_ip(hostname):
                errs.append(field.invalid(at.child("hostname"), hostname, _NOT_AN_IP))
    return errs


INGRESS = Kind(
    group="networking.k8s.io",
    version="v1",
    kind="Ingress",
    plural="ingresses",
    namespaced=True,
    model="V1Ingress",
    short_names=("ing",),
    subresources=("status",),
    prepare_for_create=prepare_ingress_for_create,
    prepare_for_update=prepare_ingress_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_ingress,
    validate_update=validate_ingress_update,
    validate_status_update=validate_ingress_status_update,
    warnings_on_create=ingress_warnings,
)
