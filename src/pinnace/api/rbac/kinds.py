"""Role, ClusterRole, RoleBinding and ClusterRoleBinding (rbac.authorization.k8s.io/v1):
defaulting and validation as Kubernetes v1.32 (pkg/apis/rbac/v1/defaults.go,
pkg/apis/rbac/validation/validation.go).

Names are path segment names, not DNS names (`system:node` is a valid role). A rule names
resources or non-resource URLs, never both; a binding's roleRef cannot change once stored.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind, UpdateValidator, Validator
from pinnace.api.labels import validate_label_selector
from pinnace.api.meta import is_path_segment_name, validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_subdomain
from pinnace.api.objects import Object
from pinnace.api.validation import (
    GoValue,
    go_struct,
    list_field,
    object_field,
    string_field,
    string_list,
)

GROUP = "rbac.authorization.k8s.io"
USER = "User"
GROUP_KIND = "Group"
SERVICE_ACCOUNT = "ServiceAccount"


def default_binding(binding: Object) -> None:
    """SetDefaults_RoleBinding/ClusterRoleBinding and SetDefaults_Subject: the role and the
    User and Group subjects are in the RBAC group, ServiceAccounts in the core one ("", which
    JSON omits: `apiGroup` is omitempty)."""
    role_ref = binding.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = GROUP
    for subject in binding.get("subjects") or ():
        if not isinstance(subject, dict) or subject.get("apiGroup"):
            continue
        if subject.get("kind") == SERVICE_ACCOUNT:
            subject.pop("apiGroup", None)
        elif subject.get("kind") in (USER, GROUP_KIND):
            subject["apiGroup"] = GROUP


def _validate_meta(obj: Object, namespaced: bool) -> list[FieldError]:
    return validate_object_meta(obj, namespaced=namespaced, name_rule=is_path_segment_name)


def validate_policy_rule(rule: Any, namespaced: bool, path: Path) -> list[FieldError]:
    rule, errs = object_field(rule, path)
    verbs, e = string_list(rule.get("verbs"), path.child("verbs"))
    errs += e
    if not verbs:
        errs.append(field.required(path.child("verbs"), "verbs must contain at least one value"))
    urls, e = string_list(rule.get("nonResourceURLs"), path.child("nonResourceURLs"))
    groups, e2 = string_list(rule.get("apiGroups"), path.child("apiGroups"))
    resources, e3 = string_list(rule.get("resources"), path.child("resources"))
    names, e4 = string_list(rule.get("resourceNames"), path.child("resourceNames"))
    errs += e + e2 + e3 + e4
    if urls:
        if namespaced:
            errs.append(
                field.invalid(
                    path.child("nonResourceURLs"),
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if groups or resources or names:
            errs.append(
                field.invalid(
                    path.child("nonResourceURLs"),
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return errs
    if not groups:
        errs.append(
            field.required(
                path.child("apiGroups"), "resource rules must supply at least one api group"
            )
        )
    if not resources:
        errs.append(
            field.required(
                path.child("resources"), "resource rules must supply at least one resource"
            )
        )
    return errs


def _validate_rules(obj: Object, namespaced: bool) -> list[FieldError]:
    rules, errs = list_field(obj.get("rules"), Path("rules"))
    for i, rule in enumerate(rules):
        errs += validate_policy_rule(rule, namespaced, Path("rules").index(i))
    return errs


def validate_role(role: Object) -> list[FieldError]:
    return _validate_meta(role, True) + _validate_rules(role, True)


def validate_cluster_role(role: Object) -> list[FieldError]:
    errs = _validate_meta(role, False) + _validate_rules(role, False)
    if role.get("aggregationRule") is None:
        return errs
    path = Path("aggregationRule")
    rule, e = object_field(role.get("aggregationRule"), path)
    errs += e
    selectors, e = list_field(rule.get("clusterRoleSelectors"), path.child("clusterRoleSelectors"))
    errs += e
    if not selectors:
        errs.append(
            field.required(
                path.child("clusterRoleSelectors"),
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            )
        )
    for i, selector in enumerate(selectors):
        where = path.child("clusterRoleSelectors").index(i)
        selector, e = object_field(selector, where)
        errs += e + validate_label_selector(selector, where)
    return errs


def _validate_binding(binding: Object, namespaced: bool) -> list[FieldError]:
    errs = _validate_meta(binding, namespaced)
    role_ref, e = object_field(binding.get("roleRef"), Path("roleRef"))
    errs += e
    api_group, e = string_field(role_ref.get("apiGroup"), Path("roleRef", "apiGroup"))
    errs += e
    if api_group != GROUP:
        errs.append(field.not_supported(Path("roleRef", "apiGroup"), api_group, (GROUP,)))
    kind, e = string_field(role_ref.get("kind"), Path("roleRef", "kind"))
    errs += e
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if kind not in kinds:
        errs.append(field.not_supported(Path("roleRef", "kind"), kind, kinds))
    name, e = string_field(role_ref.get("name"), Path("roleRef", "name"))
    errs += e
    if not name:
        errs.append(field.required(Path("roleRef", "name")))
    else:
        errs += [
            field.invalid(Path("roleRef", "name"), name, m) for m in is_path_segment_name(name)
        ]
    subjects, e = list_field(binding.get("subjects"), Path("subjects"))
    errs += e
    for i, subject in enumerate(subjects):
        errs += _validate_subject(subject, namespaced, Path("subjects").index(i))
    return errs


def _validate_subject(subject: Any, namespaced: bool, path: Path) -> list[FieldError]:
    """ValidateRoleBindingSubject."""
    subject, errs = object_field(subject, path)
    name, e = string_field(subject.get("name"), path.child("name"))
    errs += e
    if not name:
        errs.append(field.required(path.child("name")))
    kind, e = string_field(subject.get("kind"), path.child("kind"))
    errs += e
    api_group = str(subject.get("apiGroup") or "")
    if kind == SERVICE_ACCOUNT:
        if name:
            errs += [field.invalid(path.child("name"), name, m) for m in is_dns1123_subdomain(name)]
        if api_group:
            errs.append(field.not_supported(path.child("apiGroup"), api_group, ("",)))
        if not namespaced and not subject.get("namespace"):
            errs.append(field.required(path.child("namespace")))
    elif kind in (USER, GROUP_KIND):
        if api_group != GROUP:
            errs.append(field.not_supported(path.child("apiGroup"), api_group, (GROUP,)))
    else:
        errs.append(
            field.not_supported(path.child("kind"), kind, (SERVICE_ACCOUNT, USER, GROUP_KIND))
        )
    return errs


def validate_role_binding(binding: Object) -> list[FieldError]:
    return _validate_binding(binding, True)


def validate_cluster_role_binding(binding: Object) -> list[FieldError]:
    return _validate_binding(binding, False)


def _go_role_ref(binding: Object) -> GoValue:
    """The binding's roleRef as a field error shows it: the Go struct (`%#v`)."""
    given = binding.get("roleRef")
    ref: dict[str, Any] = given if isinstance(given, dict) else {}
    fields = [(go, str(ref.get(key) or "")) for go, key in _ROLE_REF_FIELDS]
    return go_struct("rbac.RoleRef", fields)


_ROLE_REF_FIELDS = (("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))


def _update(validate: Validator, *, fixed_role_ref: bool = False) -> UpdateValidator:
    """The update check of every RBAC kind: metadata and the new object, and for a binding
    (`fixed_role_ref`) a roleRef that has not changed."""

    def validate_update(new: Object, old: Object) -> list[FieldError]:
        errs = validate_object_meta_update(new, old) + validate(new)
        if fixed_role_ref and new.get("roleRef") != old.get("roleRef"):
            errs.append(field.invalid(Path("roleRef"), _go_role_ref(new), "cannot change roleRef"))
        return errs

    return validate_update


ROLE = Kind(
    group=GROUP,
    version="v1",
    kind="Role",
    plural="roles",
    namespaced=True,
    model="V1Role",
    validate=validate_role,
    validate_update=_update(validate_role),
)
CLUSTER_ROLE = Kind(
    group=GROUP,
    version="v1",
    kind="ClusterRole",
    plural="clusterroles",
    namespaced=False,
    model="V1ClusterRole",
    validate=validate_cluster_role,
    validate_update=_update(validate_cluster_role),
)
ROLE_BINDING = Kind(
    group=GROUP,
    version="v1",
    kind="RoleBinding",
    plural="rolebindings",
    namespaced=True,
    model="V1RoleBinding",
    default=default_binding,
    validate=validate_role_binding,
    validate_update=_update(validate_role_binding, fixed_role_ref=True),
)
CLUSTER_ROLE_BINDING = Kind(
    group=GROUP,
    version="v1",
    kind="ClusterRoleBinding",
    plural="clusterrolebindings",
    namespaced=False,
    model="V1ClusterRoleBinding",
    default=default_binding,
    validate=validate_cluster_role_binding,
    validate_update=_update(validate_cluster_role_binding, fixed_role_ref=True),
)
