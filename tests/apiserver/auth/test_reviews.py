"""The review kinds answered in process: who asks, what they may do, and malformed bodies
answered with a Status."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.authorization.reviews import validate_local_subject_access_review
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.reviews import answer
from pinnace.apiserver.auth.user import UserInfo

SAR = catalog.kind("authorization.k8s.io", "subjectaccessreviews")
LOCAL_SAR = catalog.kind("authorization.k8s.io", "localsubjectaccessreviews")
SSRR = catalog.kind("authorization.k8s.io", "selfsubjectrulesreviews")
ANYONE = UserInfo("someone", groups=("system:authenticated",))


def test_a_subject_access_review_answers_for_the_user_it_names(api: Harness) -> None:
    review = {
        "spec": {
            "user": "x",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "nodes"},
        }
    }
    assert api.call(answer, api.server.authorizer, SAR, "", review, ANYONE)["status"] == {
        "allowed": True
    }
    review["spec"]["groups"] = ["system:authenticated"]
    assert api.call(answer, api.server.authorizer, SAR, "", review, ANYONE)["status"] == {
        "allowed": False
    }


def test_a_rules_review_lists_what_rbac_grants(api: Harness) -> None:
    status = api.call(
        answer, api.server.authorizer, SSRR, "", {"spec": {"namespace": "default"}}, ANYONE
    )["status"]
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in status["resourceRules"]
    assert status["incomplete"] is False
    with pytest.raises(StatusError) as e:
        api.call(answer, api.server.authorizer, SSRR, "", {"spec": {}}, ANYONE)
    assert (e.value.code, e.value.message) == (400, "no namespace on request")


@pytest.mark.parametrize(
    "review",
    [
        {"metadata": [1], "spec": {"user": "u", "nonResourceAttributes": "x"}},
        {"spec": {"user": "u", "groups": "g", "extra": [], "resourceAttributes": {"verb": 1}}},
        {"metadata": "m", "spec": {"user": "u", "resourceAttributes": "x"}},
    ],
)
def test_malformed_reviews_are_refused_or_answered_never_a_crash(
    api: Harness, review: dict[str, Any]
) -> None:
    for kind in (SAR, LOCAL_SAR):
        errors = kind.validate(review)
        if not errors:
            answered = api.call(answer, api.server.authorizer, kind, "default", review, ANYONE)
            assert answered["status"]["allowed"] is False


def test_a_local_review_checks_the_namespace_of_resource_attributes_only() -> None:
    def messages(spec: dict[str, Any]) -> list[str]:
        review = {"metadata": {"namespace": "team"}, "spec": {"user": "ann", **spec}}
        return [str(e) for e in validate_local_subject_access_review(review)]

    assert messages({"resourceAttributes": {"namespace": "team"}}) == []
    assert messages({"resourceAttributes": {"namespace": "other"}}) == [
        'spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace'
    ]
    # Without resource attributes there is no namespace to compare (v1.32 checks it only
    # when ResourceAttributes != nil).
    assert messages({}) == [
        'spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes '
        "or resourceAttributes must be specified"
    ]
