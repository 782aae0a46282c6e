"""RBAC rule matching and rule comparison, against vectors of Kubernetes v1.32's tests
(plugin/pkg/auth/authorizer/rbac/rbac_test.go TestRuleMatches,
component-helpers/auth/rbac/validation/policy_comparator_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.apiserver.auth.attributes import request_attributes
from pinnace.apiserver.auth.rules import (
    Attributes,
    compact_rules,
    compact_string,
    covers,
    rule_allows,
)
from pinnace.apiserver.auth.user import UserInfo

USER = UserInfo("u")


def rule(verbs: str, groups: str = "", resources: str = "", urls: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": verbs.split(",")}
    if urls:
        out["nonResourceURLs"] = urls.split(",")
    else:
        out["apiGroups"] = groups.split(",")
        out["resources"] = resources.split(",")
    return out


def request(verb: str, group: str, resource: str, subresource: str = "") -> Attributes:
    return Attributes(USER, verb, api_group=group, resource=resource, subresource=subresource)


def url(verb: str, path: str) -> Attributes:
    return Attributes(USER, verb, resource_request=False, path=path)


@pytest.mark.parametrize(
    ("rule_", "attributes", "allowed"),
    [
        # star verb, exact match other
        (rule("*", "group1", "resource1"), request("verb1", "group1", "resource1"), True),
        (rule("*", "group1", "resource1"), request("verb2", "group1", "resource1"), True),
        (rule("*", "group1", "resource1"), request("verb1", "group2", "resource1"), False),
        (rule("*", "group1", "resource1"), request("verb1", "group1", "resource2"), False),
        # star group
        (rule("verb1", "*", "resource1"), request("verb1", "group2", "resource1"), True),
        (rule("verb1", "*", "resource1"), request("verb2", "group1", "resource1"), False),
        # star resource
        (rule("verb1", "group1", "*"), request("verb1", "group1", "resource2"), True),
        (rule("verb1", "group1", "*"), request("verb1", "group2", "resource2"), False),
        # tuple expansion
        (
            rule("verb1,verb2", "group1,group2", "resource1,resource2"),
            request("verb2", "group2", "resource2"),
            True,
        ),
        # subresource expansion
        (
            rule("*", "*", "resource1/subresource1"),
            request("verb1", "group1", "resource1", "subresource1"),
            True,
        ),
        (
            rule("*", "*", "resource1/subresource1"),
            request("verb1", "group2", "resource1", "subresource2"),
            False,
        ),
        (rule("*", "*", "resource1/subresource1"), request("verb1", "g", "resource1"), False),
        (rule("*", "*", "pods"), request("get", "", "pods", "status"), False),
        (rule("*", "*", "*/scale"), request("get", "apps", "deployments", "scale"), True),
        (rule("*", "*", "*/scale"), request("get", "apps", "deployments"), False),
        # non-resource URLs
        (rule("verb1", urls="*"), url("verb1", "/foo/bar/one"), True),
        (rule("verb1", urls="*"), url("verb2", "/foo"), False),
        (rule("verb1", urls="/foo/*"), url("verb1", "/foo"), False),
        (rule("verb1", urls="/foo/*"), url("verb1", "/foo/bar"), True),
        (rule("verb1", urls="/foo/*"), url("verb1", "/foo/bar/one"), True),
        (rule("get", urls="/apis"), url("get", "/api/v1"), False),
        # a resource rule never allows a path, nor a path rule a resource
        (rule("*", "*", "*"), url("get", "/apis"), False),
        (rule("*", urls="*"), request("get", "", "pods"), False),
    ],
)
def test_rule_allows(rule_: dict[str, Any], attributes: Attributes, allowed: bool) -> None:
    assert rule_allows(attributes, rule_) is allowed


def test_resource_names_narrow_a_rule() -> None:
    named = {**rule("get", "", "pods"), "resourceNames": ["a"]}
    assert rule_allows(Attributes(USER, "get", resource="pods", name="a"), named)
    assert not rule_allows(Attributes(USER, "get", resource="pods", name="b"), named)
    assert not rule_allows(Attributes(USER, "list", resource="pods"), {**named, "verbs": ["list"]})


def r(
    groups: list[str], verbs: list[str], resources: list[str], **more: list[str]
) -> dict[str, Any]:
    return {"apiGroups": groups, "verbs": verbs, "resources": resources, **more}


@pytest.mark.parametrize(
    ("owner", "servant", "uncovered"),
    [
        ([r(["v1"], ["get"], ["builds"])], [r(["v1"], ["get"], ["builds"])], []),
        ([r(["v1"], ["get"], ["*/scale"])], [r(["v1"], ["get"], ["foo/scale"])], []),
        (
            [
                r(["v1"], ["delete"], ["deployments"]),
                r(["v1"], ["delete"], ["builds"]),
                r(["v1"], ["update"], ["builds", "deployments"]),
            ],
            [r(["v1"], ["delete", "update"], ["builds", "deployments"])],
            [],
        ),
        (
            [
                r(["v1"], ["delete", "update"], ["builds", "deployments"]),
                r(["v1"], ["delete"], ["pods"]),
            ],
            [r(["v1"], ["delete", "update"], ["builds", "deployments", "pods"])],
            [r(["v1"], ["update"], ["pods"])],
        ),
        ([r(["*"], ["get"], ["roles"])], [r(["group1", "group2"], ["get"], ["roles"])], []),
        (
            [r(["dummy-group"], ["get"], ["roles"])],
            [r(["*"], ["get"], ["roles"])],
            [r(["*"], ["get"], ["roles"])],
        ),
        ([r(["v1"], ["*"], ["roles"])], [r(["v1"], ["watch", "list"], ["roles"])], []),
        (
            [r(["v1"], ["get", "list", "watch", "create", "update", "delete", "exec"], ["roles"])],
            [r(["v1"], ["*"], ["roles"])],
            [r(["v1"], ["*"], ["roles"])],
        ),
        ([r(["v1"], ["get"], ["*"])], [r(["v1"], ["get"], ["resourcegroup:deployments"])], []),
        (
            [r(["v1"], ["get"], ["roles", "resourcegroup:deployments"])],
            [r(["v1"], ["get"], ["*"])],
            [r(["v1"], ["get"], ["*"])],
        ),
        (
            [r(["v1"], ["get"], ["pods"], resourceNames=[])],
            [r(["v1"], ["get"], ["pods"], resourceNames=["foo", "bar"])],
            [],
        ),
        (
            [r(["v1"], ["get"], ["pods"], resourceNames=["foo", "bar"])],
            [r(["v1"], ["get"], ["pods"], resourceNames=[])],
            [r(["v1"], ["get"], ["pods"])],
        ),
        (
            [{"nonResourceURLs": ["*"], "verbs": ["*"]}],
            [{"nonResourceURLs": ["/apis", "/apis/v1", "/"], "verbs": ["*"]}],
            [],
        ),
        (
            [{"nonResourceURLs": ["/apis/*"], "verbs": ["*"]}],
            [{"nonResourceURLs": ["/apis", "/apis/v1"], "verbs": ["get"]}],
            [{"nonResourceURLs": ["/apis"], "verbs": ["get"]}],
        ),
        (
            [r(["v1"], ["get"], ["builds"])],
            [r(["v1"], ["get"], ["builds"], nonResourceURLs=["/apis"])],
            [{"nonResourceURLs": ["/apis"], "verbs": ["get"]}],
        ),
    ],
)
def test_covers(
    owner: list[dict[str, Any]], servant: list[dict[str, Any]], uncovered: list[dict[str, Any]]
) -> None:
    ok, missing = covers(owner, servant)
    assert ok is (not uncovered)
    assert sorted(map(str, missing)) == sorted(str(_canonical(u)) for u in uncovered)


def _canonical(rule_: dict[str, Any]) -> dict[str, Any]:
    """The broken-down form: one verb, group, resource (the empty names left out)."""
    if "nonResourceURLs" in rule_:
        return {"verbs": rule_["verbs"], "nonResourceURLs": rule_["nonResourceURLs"]}
    return {k: rule_[k] for k in ("verbs", "apiGroups", "resources") if k in rule_}


def test_missing_rules_are_compacted_and_described_as_go_prints_them() -> None:
    missing = [
        r([""], ["get"], ["pods"]),
        r([""], ["list"], ["pods"]),
        {"nonResourceURLs": ["/x"], "verbs": ["get"]},
    ]
    described = sorted(compact_string(m) for m in compact_rules(missing))
    assert described == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/x"], Verbs:["get"]}',
    ]


@pytest.mark.parametrize(
    ("query", "verb", "name"),
    [
        ({"watch": ["1"]}, "watch", ""),
        ({"watch": [""]}, "watch", ""),  # `?watch` alone is served as a watch, so authorized so
        ({"watch": ["yes"]}, "watch", ""),
        ({"watch": ["false"]}, "list", ""),
        ({"fieldSelector": ["metadata.name==a"]}, "list", "a"),
        ({"fieldSelector": ["metadata.name!=a"]}, "list", ""),
        ({"fieldSelector": ["metadata.name=a\\,b"]}, "list", "a,b"),  # unescaped
        ({"fieldSelector": ["metadata.name=a/b"]}, "list", ""),  # not a path segment name
        ({"fieldSelector": ["metadata.name"]}, "list", ""),  # does not parse: no name
    ],
)
def test_request_attributes_read_the_query_as_it_is_served(
    query: dict[str, list[str]], verb: str, name: str
) -> None:
    attributes = request_attributes(USER, "GET", "/api/v1/namespaces/d/pods", query)
    assert (attributes.verb, attributes.name) == (verb, name)
