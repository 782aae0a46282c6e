"""PodTemplate (v1): defaulting, the registry strategy and validation as Kubernetes v1.32
(pkg/apis/core/v1 SetObjectDefaults_PodTemplate, pkg/registry/core/podtemplate/strategy.go,
pkg/apis/core/validation ValidatePodTemplate and ValidatePodTemplateUpdate).

A stored pod template that nothing in kube-apiserver, kube-controller-manager or the kubelet
acts on; other tools keep templates in it. Its template is defaulted and validated as a
workload's is, without a workload's rules on restart policy.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.apps import bump_generation, changed, default_template, start_generation
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.core.pod_validation import validate_pod_template_spec
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update

_TEMPLATE = Path("template")


def default_pod_template_object(template: Any) -> None:
    if isinstance(template, dict):
        default_template(template)


def prepare_pod_template_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Any change to the template bumps the generation."""
    if changed(new.get("template"), as_dict(old).get("template")):
        bump_generation(new, old)


def validate_pod_template(template: Any) -> list[FieldError]:
    errs = validate_object_meta(template, namespaced=True)
    if not isinstance(template, dict):
        return errs
    return errs + validate_pod_template_spec(template.get("template"), _TEMPLATE)


def validate_pod_template_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    return errs + validate_pod_template_spec(new.get("template"), _TEMPLATE)


POD_TEMPLATE = Kind(
    group="",
    version="v1",
    kind="PodTemplate",
    plural="podtemplates",
    namespaced=True,
    model="V1PodTemplate",
    default=default_pod_template_object,
    prepare_for_create=start_generation,
    prepare_for_update=prepare_pod_template_for_update,
    validate=validate_pod_template,
    validate_update=validate_pod_template_update,
    drop_disabled=template_dropper("template"),
    **template_warnings("template"),
)
