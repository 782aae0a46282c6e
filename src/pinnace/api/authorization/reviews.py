"""The review kinds kube-apiserver v1.32 serves for asking what a user may do
(pkg/apis/authorization, pkg/apis/authentication): each is only created, answered in its
status and never stored (pkg/registry/authorization, pkg/registry/authentication).

Validation follows pkg/apis/authorization/validation/validation.go.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.validation import GoValue, go_struct

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"
_SPEC = Path("spec")


def _go_non_resource(attributes: Any) -> GoValue:
    """nonResourceAttributes as a field error shows it: the Go struct (`%#v`)."""
    given = attributes if isinstance(attributes, dict) else {}
    fields = [("Path", str(given.get("path") or "")), ("Verb", str(given.get("verb") or ""))]
    return go_struct("authorization.NonResourceAttributes", fields)


def _one_kind_of_attributes(spec: dict[str, Any]) -> list[FieldError]:
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is not None and non_resource is not None:
        return [
            field.invalid(
                _SPEC.child("nonResourceAttributes"),
                _go_non_resource(non_resource),
                "cannot be specified in combination with resourceAttributes",
            )
        ]
    if resource is None and non_resource is None:
        return [
            field.invalid(
                _SPEC.child("resourceAttributes"),
                non_resource,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        ]
    return []


def _spec(review: Object) -> dict[str, Any]:
    spec = review.get("spec")
    return spec if isinstance(spec, dict) else {}


def validate_subject_access_review(review: Object) -> list[FieldError]:
    spec = _spec(review)
    errs = _one_kind_of_attributes(spec)
    if not spec.get("user") and not spec.get("groups"):
        errs.append(
            field.invalid(
                _SPEC.child("user"),
                spec.get("user") or "",
                "at least one of user or group must be specified",
            )
        )
    return errs


def validate_self_subject_access_review(review: Object) -> list[FieldError]:
    return _one_kind_of_attributes(_spec(review))


def validate_local_subject_access_review(review: Object) -> list[FieldError]:
    """ValidateLocalSubjectAccessReview: resource attributes, when given, name the review's
    own namespace."""
    errs = validate_subject_access_review(review)
    attributes = _spec(review).get("resourceAttributes")
    namespace = attributes.get("namespace", "") if isinstance(attributes, dict) else None
    metadata = review.get("metadata")
    own = metadata.get("namespace", "") if isinstance(metadata, dict) else ""
    if namespace is not None and namespace != own:
        errs.append(
            field.invalid(
                Path("spec", "resourceAttributes", "namespace"),
                namespace,
                "must match metadata.namespace",
            )
        )
    if _spec(review).get("nonResourceAttributes") is not None:
        errs.append(
            field.invalid(
                _SPEC.child("nonResourceAttributes"),
                _spec(review)["nonResourceAttributes"],
                "disallowed on this kind of request",
            )
        )
    return errs


def _review(
    kind: str, plural: str, group: str = AUTHORIZATION, *, namespaced: bool = False, **rules: Any
) -> Kind:
    return Kind(
        group=group,
        version="v1",
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        model=f"V1{kind}",
        verbs=("create",),
        **rules,
    )


SELF_SUBJECT_REVIEW = _review("SelfSubjectReview", "selfsubjectreviews", AUTHENTICATION)
TOKEN_REVIEW = _review("TokenReview", "tokenreviews", AUTHENTICATION)
LOCAL_SUBJECT_ACCESS_REVIEW = _review(
    "LocalSubjectAccessReview",
    "localsubjectaccessreviews",
    namespaced=True,
    validate=validate_local_subject_access_review,
)
SELF_SUBJECT_ACCESS_REVIEW = _review(
    "SelfSubjectAccessReview",
    "selfsubjectaccessreviews",
    validate=validate_self_subject_access_review,
)
SELF_SUBJECT_RULES_REVIEW = _review("SelfSubjectRulesReview", "selfsubjectrulesreviews")
SUBJECT_ACCESS_REVIEW = _review(
    "SubjectAccessReview", "subjectaccessreviews", validate=validate_subject_access_review
)
KINDS = (
    SELF_SUBJECT_REVIEW,
    TOKEN_REVIEW,
    LOCAL_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_RULES_REVIEW,
    SUBJECT_ACCESS_REVIEW,
)
