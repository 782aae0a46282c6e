"""StatefulSet (apps/v1): defaulting, the registry strategy and validation as Kubernetes v1.32
(pkg/apis/apps/v1/defaults.go, pkg/registry/apps/statefulset/strategy.go,
pkg/apis/apps/validation).

v1.32's validation of a StatefulSet checks its pod template's labels and annotations but not
the pod spec (a bad container shows as the controller's FailedCreate events), and does not
look inside volumeClaimTemplates. `spec.updateStrategy.rollingUpdate.maxUnavailable` belongs to
the MaxUnavailableStatefulSet feature, alpha and off in v1.32: the server drops it from what it
stores, unless the stored object already had it.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    GREATER_THAN_REPLICAS,
    SPEC,
    STATUS,
    Object,
    as_label_selector,
    bump_generation,
    changed,
    default_template,
    ensure_spec,
    go_int_or_string,
    go_label_selector,
    go_pointer,
    int_or_percent_value,
    is_not_more_than_100_percent,
    reset_for_create,
    set_default,
    spec_changed,
    status_of,
    validate_collision_count,
    validate_nonnegative_fields,
    validate_not_above,
    validate_positive_int_or_percent,
    validate_required_selector,
    validate_restarting_pods,
    validate_selector_matches_template,
)
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict, as_list, child_dict
from pinnace.api.core.pod_warnings import claim_spec_warnings, template_warnings
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_labels
from pinnace.api.meta import validate_annotations, validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import (
    GoValue,
    go_struct,
    object_field,
    string_map,
    validate_nonnegative,
)

ORDERED_READY = "OrderedReady"
PARALLEL = "Parallel"
ROLLING_UPDATE = "RollingUpdate"
ON_DELETE = "OnDelete"
RETAIN = "Retain"
DELETE = "Delete"
DEFAULT_REVISION_HISTORY_LIMIT = 10
# StatefulSetStatus{} as apps/v1 serializes it: replicas and availableReplicas have no
# omitempty.
EMPTY_STATUS: Object = {"replicas": 0, "availableReplicas": 0}
_STATUS_COUNTERS = (
    "replicas",
    "readyReplicas",
    "currentReplicas",
    "updatedReplicas",
    "availableReplicas",
    "observedGeneration",
    "collisionCount",
)
_STATUS_BOUNDS = (
    ("readyReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("currentReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("updatedReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "replicas", GREATER_THAN_REPLICAS),
    ("availableReplicas", "readyReplicas", "cannot be greater than status.readyReplicas"),
)
_UPDATABLE_SPEC_FIELDS = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_FORBIDDEN_SPEC_UPDATE = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
    "forbidden"
)
_ROLLING_TYPE = "apps.RollingUpdateStatefulSetStrategy"


# --- defaulting -------------------------------------------------------------------------------


def default_stateful_set(sts: Any) -> None:
    """SetDefaults_StatefulSet, and the claim templates' PersistentVolumeClaim defaults."""
    spec = ensure_spec(sts)
    if spec is None:
        return
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = ORDERED_READY
    set_default(spec, "updateStrategy", {})
    strategy = child_dict(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = ROLLING_UPDATE
            set_default(strategy, "rollingUpdate", {})
        rolling = child_dict(strategy, "rollingUpdate")
        if strategy["type"] == ROLLING_UPDATE and rolling is not None:
            set_default(rolling, "partition", 0)
    set_default(spec, "persistentVolumeClaimRetentionPolicy", {})
    policy = child_dict(spec, "persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        for name in ("whenDeleted", "whenScaled"):
            if not policy.get(name):
                policy[name] = RETAIN
    set_default(spec, "replicas", 1)
    set_default(spec, "revisionHistoryLimit", DEFAULT_REVISION_HISTORY_LIMIT)
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            _default_claim_template(claim)
    default_template(spec)


def _default_claim_template(claim: Object) -> None:
    """A claim template is a whole PersistentVolumeClaim: typed as one, in phase Pending, its
    volumeMode Filesystem."""
    claim.setdefault("apiVersion", "v1")
    claim.setdefault("kind", "PersistentVolumeClaim")
    set_default(claim, "spec", {})
    claim_spec = child_dict(claim, "spec")
    if claim_spec is not None:
        set_default(claim_spec, "volumeMode", "Filesystem")
    set_default(claim, "status", {})
    status = child_dict(claim, "status")
    if status is not None and not status.get("phase"):
        status["phase"] = "Pending"


# --- the registry strategy --------------------------------------------------------------------


def _max_unavailable_in_use(sts: Any) -> bool:
    rolling = as_dict(as_dict(as_dict(as_dict(sts).get("spec")).get("updateStrategy")))
    return as_dict(rolling.get("rollingUpdate")).get("maxUnavailable") is not None


def _drop_disabled_fields(sts: Object, old: Object | None) -> None:
    """dropStatefulSetDisabledFields: maxUnavailable goes while its feature is off, unless the
    stored object uses it already."""
    if old is not None and _max_unavailable_in_use(old):
        return
    strategy = as_dict(as_dict(sts.get("spec")).get("updateStrategy"))
    rolling = strategy.get("rollingUpdate")
    if isinstance(rolling, dict):
        rolling.pop("maxUnavailable", None)


def prepare_stateful_set_for_create(sts: Object) -> None:
    reset_for_create(sts, EMPTY_STATUS)
    _drop_disabled_fields(sts, None)


def prepare_stateful_set_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    _drop_disabled_fields(new, old)
    if spec_changed(new, old):
        bump_generation(new, old)


# --- validation -------------------------------------------------------------------------------


def _go_rolling_update(rolling: Object) -> GoValue:
    max_unavailable = rolling.get("maxUnavailable")
    shown = None if max_unavailable is None else go_int_or_string(max_unavailable)
    partition = rolling.get("partition", 0)
    return go_struct(
        _ROLLING_TYPE,
        [
            ("Partition", GoValue(str(partition))),
            ("MaxUnavailable", go_pointer("intstr.IntOrString", shown)),
        ],
    )


def _go_update_strategy(strategy: Object) -> GoValue:
    rolling = strategy.get("rollingUpdate")
    shown = _go_rolling_update(rolling) if isinstance(rolling, dict) else None
    return go_struct(
        "apps.StatefulSetUpdateStrategy",
        [
            ("Type", str(strategy.get("type") or "")),
            ("RollingUpdate", go_pointer(_ROLLING_TYPE, shown)),
        ],
    )


def _validate_pod_management_policy(spec: Object) -> list[FieldError]:
    path = SPEC.child("podManagementPolicy")
    policy = spec.get("podManagementPolicy") or ""
    if policy == "":
        return [field.required(path)]
    if policy in (ORDERED_READY, PARALLEL):
        return []
    return [field.invalid(path, policy, f"must be '{ORDERED_READY}' or '{PARALLEL}'")]


def _validate_update_strategy(spec: Object) -> list[FieldError]:
    path = SPEC.child("updateStrategy")
    strategy, errs = object_field(spec.get("updateStrategy"), path)
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if kind == "":
        return [*errs, field.required(path)]
    if kind == ON_DELETE:
        if rolling is not None:
            shown = _go_rolling_update(as_dict(rolling))
            detail = f"only allowed for updateStrategy '{ROLLING_UPDATE}'"
            errs.append(field.invalid(path.child("rollingUpdate"), shown, detail))
        return errs
    if kind == ROLLING_UPDATE:
        if rolling is not None:
            errs += _validate_rolling_update(rolling, path.child("rollingUpdate"))
        return errs
    detail = f"must be '{ROLLING_UPDATE}' or '{ON_DELETE}'"
    return [*errs, field.invalid(path, _go_update_strategy(strategy), detail)]


def _validate_rolling_update(value: Any, path: Path) -> list[FieldError]:
    """validateRollingUpdateStatefulSet."""
    rolling, errs = object_field(value, path)
    errs += validate_nonnegative_fields(rolling, path, ("partition",))
    max_unavailable = rolling.get("maxUnavailable")
    if max_unavailable is None:
        return errs
    unavailable_path = path.child("maxUnavailable")
    errs += validate_positive_int_or_percent(max_unavailable, unavailable_path)
    if int_or_percent_value(max_unavailable) == 0:
        errs.append(
            field.invalid(unavailable_path, go_int_or_string(max_unavailable), "cannot be 0")
        )
    return errs + is_not_more_than_100_percent(max_unavailable, unavailable_path)


def _validate_retention_policy(spec: Object) -> list[FieldError]:
    path = SPEC.child("persistentVolumeClaimRetentionPolicy")
    value = spec.get("persistentVolumeClaimRetentionPolicy")
    if value is None:
        return []
    policy, errs = object_field(value, path)
    for name in ("whenDeleted", "whenScaled"):
        chosen = policy.get(name) or ""
        if chosen not in (RETAIN, DELETE):
            errs.append(field.not_supported(path.child(name), chosen, (RETAIN, DELETE)))
    return errs


def _validate_template(spec: Object) -> list[FieldError]:
    """ValidatePodTemplateSpecForStatefulSet, and the pod policy every workload's template
    must have. Labels and annotations are reported under `template.labels` and
    `template.annotations`, as Kubernetes does."""
    path = SPEC.child("template")
    template = as_dict(spec.get("template"))
    selector = as_label_selector(spec.get("selector"))
    if selector is None:
        shown = go_label_selector(spec.get("selector"))
        errs = [field.invalid(SPEC.child("selector"), shown, "")]
    else:
        errs = validate_selector_matches_template(selector, template, path)
        meta = as_dict(template.get("metadata"))
        labels, e = string_map(meta.get("labels"), path.child("labels"))
        errs += e + validate_labels(labels, path.child("labels"))
        annotations, e = string_map(meta.get("annotations"), path.child("annotations"))
        errs += e + validate_annotations(annotations, path.child("annotations"))
    return errs + validate_restarting_pods(template, path, "StatefulSet")


def _validate_spec(sts: Object) -> list[FieldError]:
    """ValidateStatefulSetSpec."""
    spec, errs = object_field(sts.get("spec"), SPEC)
    errs += _validate_pod_management_policy(spec)
    errs += _validate_update_strategy(spec)
    errs += _validate_retention_policy(spec)
    errs += validate_nonnegative_fields(spec, SPEC, ("replicas", "minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict) and ordinals.get("start") is not None:
        errs += validate_nonnegative(ordinals["start"], SPEC.child("ordinals.start"))
    errs += validate_required_selector(spec, SPEC.child("selector"), "statefulset")
    return errs + _validate_template(spec)


def validate_stateful_set(sts: Any) -> list[FieldError]:
    errs = validate_object_meta(sts, namespaced=True, name_rule=is_dns1123_label)
    if not isinstance(sts, dict):
        return errs
    return errs + _validate_spec(sts)


def _without_updatable(spec: Any) -> Object:
    return {k: v for k, v in as_dict(spec).items() if k not in _UPDATABLE_SPEC_FIELDS}


def validate_stateful_set_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateStatefulSetUpdate: the new spec is valid, and only some of its fields change
    (the name is not checked again)."""
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    errs += _validate_spec(new)
    if changed(_without_updatable(new.get("spec")), _without_updatable(old.get("spec"))):
        errs.append(field.forbidden(SPEC, _FORBIDDEN_SPEC_UPDATE))
    return errs


def validate_stateful_set_status_update(new: Any, old: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if isinstance(new, dict):
        status, e = status_of(new)
        errs += e + validate_nonnegative_fields(status, STATUS, _STATUS_COUNTERS)
        errs += validate_not_above(status, STATUS, _STATUS_BOUNDS)
    errs += validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + validate_collision_count(new, old)


_TEMPLATE_WARNINGS = template_warnings("spec", "template")


def stateful_set_warnings(sts: Any) -> list[str]:
    """WarningsOnCreate: the template's, the claim templates' and a negative history limit."""
    warnings: list[str] = _TEMPLATE_WARNINGS["warnings_on_create"](sts)
    return warnings + _claim_and_history_warnings(as_dict(sts), "")


def stateful_set_update_warnings(new: Any, old: Any) -> list[str]:
    """WarningsOnUpdate: the template's only when the generation moved, the rest always; the
    claim templates' paths name a Go field, `Spec`, as v1.32's do."""
    warnings: list[str] = _TEMPLATE_WARNINGS["warnings_on_update"](new, old)
    return warnings + _claim_and_history_warnings(as_dict(new), ".Spec")


def _claim_and_history_warnings(sts: Object, claim_spec: str) -> list[str]:
    spec = as_dict(sts.get("spec"))
    warnings = []
    for i, claim in enumerate(as_list(spec.get("volumeClaimTemplates"))):
        path = f"spec.volumeClaimTemplates[{i}]{claim_spec}"
        warnings += claim_spec_warnings(as_dict(claim).get("spec"), path)
    limit = spec.get("revisionHistoryLimit")
    if isinstance(limit, int) and limit < 0:
        warnings.append(
            "spec.revisionHistoryLimit: a negative value retains all historical revisions; a "
            "value >= 0 is recommended"
        )
    return warnings


STATEFUL_SET = Kind(
    group="apps",
    version="v1",
    kind="StatefulSet",
    plural="statefulsets",
    namespaced=True,
    model="V1StatefulSet",
    short_names=("sts",),
    categories=("all",),
    subresources=("scale", "status"),
    default=default_stateful_set,
    prepare_for_create=prepare_stateful_set_for_create,
    prepare_for_update=prepare_stateful_set_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_stateful_set,
    validate_update=validate_stateful_set_update,
    validate_status_update=validate_stateful_set_status_update,
    drop_disabled=template_dropper("spec", "template"),
    warnings_on_create=stateful_set_warnings,
    warnings_on_update=stateful_set_update_warnings,
)
