"""ResourceQuota (v1): the registry strategy and validation as Kubernetes v1.32."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_qualified_name
from pinnace.api.strategy import keep_spec, keep_status
from pinnace.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    GoValue,
    go_slice,
    go_struct,
    list_field,
    object_field,
    string_field,
    string_list,
    validate_resource_quantity,
)
from pinnace.resources.names import is_standard_quota_resource_name, is_standard_resource_name

_POD_COUNT_RESOURCES = frozenset({"pods"})
_POD_COMPUTE_RESOURCES = frozenset(
    {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
)

SCOPE_TERMINATING = "Terminating"
SCOPE_NOT_TERMINATING = "NotTerminating"
SCOPE_BEST_EFFORT = "BestEffort"
SCOPE_NOT_BEST_EFFORT = "NotBestEffort"
SCOPE_PRIORITY_CLASS = "PriorityClass"
SCOPE_CROSS_NAMESPACE_POD_AFFINITY = "CrossNamespacePodAffinity"
STANDARD_SCOPES = (
    SCOPE_TERMINATING,
    SCOPE_NOT_TERMINATING,
    SCOPE_BEST_EFFORT,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_PRIORITY_CLASS,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
)
_CONFLICTING_SCOPES = (
    (SCOPE_BEST_EFFORT, SCOPE_NOT_BEST_EFFORT),
    (SCOPE_TERMINATING, SCOPE_NOT_TERMINATING),
)
_EXISTS_ONLY_SCOPES = (
    SCOPE_BEST_EFFORT,
    SCOPE_NOT_BEST_EFFORT,
    SCOPE_TERMINATING,
    SCOPE_NOT_TERMINATING,
    SCOPE_CROSS_NAMESPACE_POD_AFFINITY,
)


def _scope_valid_for_resource(scope: str, resource: str) -> bool:
    if scope == SCOPE_BEST_EFFORT:
        return resource in _POD_COUNT_RESOURCES
    if scope in STANDARD_SCOPES:
        return resource in _POD_COUNT_RESOURCES or resource in _POD_COMPUTE_RESOURCES
    return True


def validate_resource_name(name: str, path: Path) -> list[FieldError]:
    """A resource name: qualified, and a standard one when it has no domain."""
    errs = [field.invalid(path, name, m) for m in is_qualified_name(name)]
    if not errs and "/" not in name and not is_standard_resource_name(name):
        errs.append(
            field.invalid(path, name, "must be a standard resource type or fully qualified")
        )
    return errs


def validate_quota_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_resource_name(name):
        errs.append(field.invalid(path, name, "must be a standard resource for quota"))
    return errs


def _validate_resource_list(value: Any, path: Path) -> list[FieldError]:
    resources, errs = object_field(value, path)
    for name, quantity in resources.items():
        errs += validate_quota_resource_name(name, path.key(name))
        errs += validate_resource_quantity(name, quantity, path.key(name))
    return errs


def prepare_quota_for_create(quota: dict[str, Any]) -> None:
    quota["status"] = {}


def validate_resource_quota(quota: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(quota, namespaced=True)
    errs += _validate_spec(quota)
    status, e = object_field(quota.get("status"), Path("status"))
    errs += e
    for list_name in ("hard", "used"):
        errs += _validate_resource_list(status.get(list_name), Path("status", list_name))
    return errs


def validate_resource_quota_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + _validate_spec(new)
    new_scopes = _scopes(new)
    if set(new_scopes) != set(_scopes(old)):
        errs.append(
            field.invalid(Path("spec", "scopes"), _go_scopes(new_scopes), FIELD_IMMUTABLE_ERROR_MSG)
        )
    return errs


def validate_resource_quota_status_update(
    new: dict[str, Any], old: dict[str, Any]
) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    meta, _ = object_field(new.get("metadata"), Path("metadata"))
    if not meta.get("resourceVersion"):
        errs.append(field.required(Path("resourceVersion")))
    status, e = object_field(new.get("status"), Path("status"))
    errs += e
    for list_name in ("hard", "used"):
        errs += _validate_resource_list(status.get(list_name), Path("status", list_name))
    return errs


def _go_scopes(scopes: list[str]) -> GoValue:
    return (
        go_slice("core.ResourceQuotaScope", scopes)
        if scopes
        else GoValue("[]core.ResourceQuotaScope(nil)")
    )


def _go_selector(expressions: list[Any]) -> GoValue:
    items = []
    for expression in expressions:
        e = expression if isinstance(expression, dict) else {}
        values = [v for v in e.get("values") or [] if isinstance(v, str)]
        shown = go_slice("string", values) if values else GoValue("[]string(nil)")
        fields = [
            ("ScopeName", e.get("scopeName") or ""),
            ("Operator", e.get("operator") or ""),
            ("Values", shown),
        ]
        items.append(go_struct("core.ScopedResourceSelectorRequirement", fields).text)
    listed = "[]core.ScopedResourceSelectorRequirement{" + ", ".join(items) + "}"
    return GoValue(f"core.ScopeSelector{{MatchExpressions:{listed}}}")


def _scopes(quota: dict[str, Any]) -> list[str]:
    spec = quota.get("spec")
    scopes, _ = string_list(spec.get("scopes") if isinstance(spec, dict) else None, Path())
    return scopes


def _validate_spec(quota: dict[str, Any]) -> list[FieldError]:
    spec, errs = object_field(quota.get("spec"), Path("spec"))
    hard, e = object_field(spec.get("hard"), Path("spec", "hard"))
    errs += e + _validate_resource_list(hard, Path("spec", "hard"))
    standard_hard = sorted(name for name in hard if is_standard_quota_resource_name(name))

    scopes_path = Path("spec", "scopes")
    scopes, e = string_list(spec.get("scopes"), scopes_path)
    errs += e
    for scope in scopes:
        if scope not in STANDARD_SCOPES:
            errs.append(field.invalid(scopes_path, _go_scopes(scopes), "unsupported scope"))
        for name in standard_hard:
            if not _scope_valid_for_resource(scope, name):
                errs.append(
                    field.invalid(
                        scopes_path, _go_scopes(scopes), "unsupported scope applied to resource"
                    )
                )
    errs += _conflicts(set(scopes), scopes_path, _go_scopes(scopes))

    selector, e = object_field(spec.get("scopeSelector"), Path("spec", "scopeSelector"))
    errs += e
    if spec.get("scopeSelector") is not None:
        errs += _validate_scope_selector(selector, standard_hard, scopes)
    return errs


def _conflicts(names: set[str], path: Path, shown: Any) -> list[FieldError]:
    return [
        field.invalid(path, shown, "conflicting scopes")
        for pair in _CONFLICTING_SCOPES
        if names.issuperset(pair)
    ]


def _validate_scope_selector(
    selector: dict[str, Any], standard_hard: list[str], scopes: list[str]
) -> list[FieldError]:
    path = Path("spec", "scopeSelector", "matchExpressions")
    expressions, errs = list_field(selector.get("matchExpressions"), path)
    names: set[str] = set()
    for i, expression in enumerate(expressions):
        at = path.index(i)
        expression, e = object_field(expression, at)
        errs += e
        scope, e = string_field(expression.get("scopeName"), at.child("scopeName"))
        errs += e
        operator, e = string_field(expression.get("operator"), at.child("operator"))
        errs += e
        values, e = string_list(expression.get("values"), at.child("values"))
        errs += e
        # Kubernetes reports these at the list, not the item.
        if scope not in STANDARD_SCOPES:
            errs.append(field.invalid(path.child("scopeName"), scope, "unsupported scope"))
        for name in standard_hard:
            if not _scope_valid_for_resource(scope, name):
                errs.append(
                    field.invalid(
                        path, _go_selector(expressions), "unsupported scope applied to resource"
                    )
                )
        if scope in _EXISTS_ONLY_SCOPES and operator != "Exists":
            errs.append(
                field.invalid(
                    path.child("operator"),
                    operator,
                    "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                    "ResourceQuotaScopeNotBestEffort or "
                    "ResourceQuotaScopeCrossNamespacePodAffinity",
                )
            )
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(
                    field.required(
                        path.child("values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for "
                        "scope selector",
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    field.invalid(
                        path.child("values"),
                        go_slice("string", values),
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for "
                        "scope selector",
                    )
                )
        else:
            errs.append(
                field.invalid(path.child("operator"), operator, "not a valid selector operator")
            )
        names.add(scope)
    return errs + _conflicts(names, path, _go_scopes(scopes))


RESOURCE_QUOTA = Kind(
    group="",
    version="v1",
    kind="ResourceQuota",
    plural="resourcequotas",
    namespaced=True,
    model="V1ResourceQuota",
    short_names=("quota",),
    subresources=("status",),
    prepare_for_create=prepare_quota_for_create,
    prepare_for_update=keep_status,
    prepare_for_status_update=keep_spec,
    validate=validate_resource_quota,
    validate_update=validate_resource_quota_update,
    validate_status_update=validate_resource_quota_status_update,
)
