"""IngressClass (networking.k8s.io/v1): defaulting, the registry strategy and validation as
Kubernetes v1.32 (pkg/apis/networking/v1/defaults.go SetDefaults_IngressClass,
pkg/registry/networking/ingressclass/strategy.go, pkg/apis/networking/validation
ValidateIngressClass and ValidateIngressClassUpdate).

An IngressClass names the controller that implements its Ingresses (`example.com/ingress-nginx`)
and, optionally, a resource holding that controller's parameters.
"""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.apps import bump_generation_on_spec_change, start_generation
from pinnace.api.core.pod_shape import as_dict, as_str, child_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label, is_dns1123_subdomain, regex_error
from pinnace.api.networking.ingress import validate_typed_reference
from pinnace.api.validation import validate_immutable

SCOPES = ("Cluster", "Namespace")
_MAX_CONTROLLER_LENGTH = 250
_CONTROLLER = Path("spec", "controller")
_PARAMETERS = Path("spec", "parameters")
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(_HTTP_PATH_FMT)


def is_domain_prefixed_path(path: Path, value: str) -> list[FieldError]:
    """validation.IsDomainPrefixedPath: `<DNS subdomain>/<HTTP path>`."""
    if not value:
        return [field.required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [
            field.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')
        ]
    errs = [field.invalid(path, host, m) for m in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.fullmatch(rest):
        errs.append(field.invalid(path, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


def default_ingress_class(ingress_class: Any) -> None:
    spec = child_dict(ingress_class, "spec") if isinstance(ingress_class, dict) else None
    parameters = child_dict(spec, "parameters") if spec is not None else None
    if parameters is not None and parameters.get("scope") is None:
        parameters["scope"] = "Cluster"


def _validate_parameters(parameters: dict[str, Any]) -> list[FieldError]:
    """validateIngressClassParametersReference: a reference and where it lives."""
    errs = validate_typed_reference(parameters, _PARAMETERS)
    scope = parameters.get("scope")
    if scope is None:
        return [*errs, field.required(_PARAMETERS.child("scope"))]
    namespace = parameters.get("namespace")
    namespace_path = _PARAMETERS.child("namespace")
    if scope not in SCOPES:
        errs.append(field.not_supported(_PARAMETERS.child("scope"), scope, SCOPES))
    elif scope == "Namespace":
        if namespace is None:
            errs.append(field.required(namespace_path, "`parameters.scope` is set to 'Namespace'"))
        else:
            errs += [
                field.invalid(namespace_path, namespace, m) for m in is_dns1123_label(namespace)
            ]
    elif namespace is not None:
        errs.append(field.forbidden(namespace_path, "`parameters.scope` is set to 'Cluster'"))
    return errs


def validate_ingress_class(ingress_class: Any) -> list[FieldError]:
    errs = validate_object_meta(ingress_class, namespaced=False)
    if not isinstance(ingress_class, dict):
        return errs
    spec = as_dict(ingress_class.get("spec"))
    controller = as_str(spec.get("controller"))
    if len(controller.encode()) > _MAX_CONTROLLER_LENGTH:
        errs.append(field.too_long(_CONTROLLER, controller, _MAX_CONTROLLER_LENGTH))
    errs += is_domain_prefixed_path(_CONTROLLER, controller)
    parameters = spec.get("parameters")
    if parameters is not None:
        errs += _validate_parameters(as_dict(parameters))
    return errs


def validate_ingress_class_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateIngressClassUpdate: the controller never changes."""
    errs = validate_object_meta_update(new, old)
    new_spec, old_spec = as_dict(as_dict(new).get("spec")), as_dict(as_dict(old).get("spec"))
    errs += validate_immutable(
        as_str(new_spec.get("controller")), as_str(old_spec.get("controller")), _CONTROLLER
    )
    return errs + validate_ingress_class(new)


INGRESS_CLASS = Kind(
    group="networking.k8s.io",
    version="v1",
    kind="IngressClass",
    plural="ingressclasses",
    namespaced=False,
    model="V1IngressClass",
    default=default_ingress_class,
    prepare_for_create=start_generation,
    prepare_for_update=bump_generation_on_spec_change,
    validate=validate_ingress_class,
    validate_update=validate_ingress_class_update,
)
