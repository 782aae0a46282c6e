"""Answering the review kinds, as kube-apiserver v1.32's registries do
(pkg/registry/authorization/{subjectaccessreview,selfsubjectaccessreview,
localsubjectaccessreview,selfsubjectrulesreview}/rest.go and
pkg/registry/authentication/{selfsubjectreview,tokenreview}): the object comes back with its
status, nothing is stored. `kubectl auth can-i` creates a SelfSubjectAccessReview (with
--list, a SelfSubjectRulesReview); `kubectl auth whoami` a SelfSubjectReview.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import status
from pinnace.api.authorization.reviews import TOKEN_REVIEW
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.apiserver.auth.authentication import Authenticator
from pinnace.apiserver.auth.authorizer import Authorizer
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.tokens import TokenError
from pinnace.apiserver.auth.user import UserInfo


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _spec_user(spec: dict[str, Any]) -> UserInfo:
    extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
    return UserInfo(
        str(spec.get("user") or ""),
        str(spec.get("uid") or ""),
        _strings(spec.get("groups")),
        {str(k): _strings(v) for k, v in (extra or {}).items()},
    )


def _attributes(user: UserInfo, spec: dict[str, Any]) -> Attributes:
    """authorizationutil.ResourceAttributesFrom / NonResourceAttributesFrom."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
            user,
            str(resource.get("verb") or ""),
            namespace=str(resource.get("namespace") or ""),
            api_group=str(resource.get("group") or ""),
            api_version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            name=str(resource.get("name") or ""),
        )
    non_resource = spec.get("nonResourceAttributes")
    non_resource = non_resource if isinstance(non_resource, dict) else {}
    return Attributes(
        user,
        str(non_resource.get("verb") or ""),
        resource_request=False,
        path=str(non_resource.get("path") or ""),
    )


def _spec(review: Object) -> dict[str, Any]:
    spec = review.get("spec")
    return spec if isinstance(spec, dict) else {}


def _answered(kind: Kind, review: Object) -> Object:
    metadata = review.get("metadata")
    answered = {**review, "apiVersion": kind.api_version, "kind": kind.kind}
    answered["metadata"] = {
        "creationTimestamp": None,
        **(metadata if isinstance(metadata, dict) else {}),
    }
    return answered


async def review_token(tokens: Authenticator, review: Object) -> Object:
    """A TokenReview: whom spec.token authenticates, for spec.audiences (the API audiences
    when none are given)."""
    spec = _spec(review)
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise status.bad_request("token is required for TokenReview in authentication")
    answered = _answered(TOKEN_REVIEW, review)
    try:
        user, audiences = await tokens.review(token, _strings(spec.get("audiences")))
    except TokenError as e:
        answered["status"] = {"user": {}, "error": str(e)}
        return answered
    answered["status"] = {
        "authenticated": True,
        "user": user.fields(),
        "audiences": list(audiences),
    }
    return answered


async def answer(
    authorizer: Authorizer, kind: Kind, namespace: str, review: Object, user: UserInfo
) -> Object:
    """The review with its status; `user` is the requester (the subject of the self
    reviews)."""
    spec = _spec(review)
    answered = _answered(kind, review)
    if kind.kind == "SelfSubjectReview":
        answered["status"] = {"userInfo": user.fields()}
        return answered
    if kind.kind == "SelfSubjectRulesReview":
        if not spec.get("namespace"):
            raise status.bad_request("no namespace on request")
        resource, non_resource, incomplete, error = await authorizer.rules_for(
            user, str(spec["namespace"])
        )
        answered["status"] = {
            "resourceRules": resource,
            "nonResourceRules": non_resource,
            "incomplete": incomplete,
        }
        if error:
            answered["status"]["evaluationError"] = error
        return answered
    subject = user if kind.kind == "SelfSubjectAccessReview" else _spec_user(spec)
    decision = await authorizer.authorize(_attributes(subject, spec))
    answered["status"] = {"allowed": decision.allowed}
    if decision.reason:
        answered["status"]["reason"] = decision.reason
    return answered
