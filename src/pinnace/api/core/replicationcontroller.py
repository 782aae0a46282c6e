"""ReplicationController (v1): defaulting, the registry strategy and validation as Kubernetes
v1.32 (pkg/apis/core/v1/defaults.go SetDefaults_ReplicationController, pkg/registry/core/
replicationcontroller, pkg/apis/core/validation ValidateReplicationController).

A ReplicaSet in all but its selector, which is a plain map of labels that must all match (and,
unlike a ReplicaSet's, may change); it defaults to the template's labels, and so do the
controller's own labels when it has none.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    SELECTOR_MISMATCH,
    SPEC,
    bump_generation,
    default_template,
    ensure_spec,
    go_string_map,
    reset_for_create,
    spec_changed,
    template_labels,
    validate_always_restarting_template,
    validate_nonnegative_fields,
)
from pinnace.api.apps.replicaset import (
    EMPTY_STATUS,
    validate_replica_set_status_update,
)
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector, selector_from_dict
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import object_field, string_map


def selector_of(rc: Any) -> LabelSelector:
    """The pods `rc` selects: every label of its selector, equal (labels.SelectorFromSet);
    an empty selector selects nothing, as the controller treats it."""
    selector = as_dict(as_dict(as_dict(rc).get("spec")).get("selector"))
    labels = {k: v for k, v in selector.items() if isinstance(v, str)}
    if not labels:
        return LabelSelector.nothing()
    return selector_from_dict({"matchLabels": labels})


def default_replication_controller(rc: Any) -> None:
    spec = ensure_spec(rc)
    if spec is None:
        return
    labels = template_labels(spec.get("template"))
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = child_dict(rc, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_template(spec)


def prepare_for_create(rc: dict[str, Any]) -> None:
    reset_for_create(rc, EMPTY_STATUS)


def prepare_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


def _validate_spec(rc: dict[str, Any]) -> list[FieldError]:
    """ValidateReplicationControllerSpec."""
    spec, errs = object_field(rc.get("spec"), SPEC)
    errs += validate_nonnegative_fields(spec, SPEC, ("minReadySeconds", "replicas"))
    selector, e = string_map(spec.get("selector"), SPEC.child("selector"))
    errs += e
    if not selector:
        errs.append(field.required(SPEC.child("selector")))
    template_path = SPEC.child("template")
    template = spec.get("template")
    if template is None:
        return [*errs, field.required(template_path)]
    labels = template_labels(template)
    strings = {k: v for k, v in as_dict(labels).items() if isinstance(v, str)}
    if selector and any(strings.get(k) != v for k, v in selector.items()):
        errs.append(
            field.invalid(
                template_path.child("metadata", "labels"), go_string_map(labels), SELECTOR_MISMATCH
            )
        )
    return errs + validate_always_restarting_template(
        template, template_path, "ReplicationController"
    )


def validate_replication_controller(rc: Any) -> list[FieldError]:
    errs = validate_object_meta(rc, namespaced=True)
    if not isinstance(rc, dict):
        return errs
    return errs + _validate_spec(rc)


def validate_replication_controller_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict):
        return errs
    return errs + _validate_spec(new)


REPLICATION_CONTROLLER = Kind(
    group="",
    version="v1",
    kind="ReplicationController",
    plural="replicationcontrollers",
    namespaced=True,
    model="V1ReplicationController",
    short_names=("rc",),
    categories=("all",),
    subresources=("scale", "status"),
    default=default_replication_controller,
    orphans_by_default=True,
    prepare_for_create=prepare_for_create,
    prepare_for_update=prepare_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_replication_controller,
    validate_update=validate_replication_controller_update,
    validate_status_update=validate_replica_set_status_update,
    drop_disabled=template_dropper("spec", "template"),
    **template_warnings("spec", "template", name=True),
)
