"""Impersonation as kube-apiserver v1.32's filter: what each header asks to be authorized for,
and the user it yields."""

from __future__ import annotations

import asyncio

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.auth.impersonation import impersonate
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import UserInfo

ADMIN = UserInfo("admin", groups=("system:masters", "system:authenticated"))


def acting(headers: list[tuple[str, str]]) -> tuple[UserInfo, list[tuple[str, str, str, str, str]]]:
    asked: list[tuple[str, str, str, str, str]] = []

    async def check(a: Attributes) -> None:
        assert a.verb == "impersonate"
        asked.append((a.api_group, a.resource, a.subresource, a.namespace, a.name))

    return asyncio.run(impersonate(ADMIN, headers, check)), asked


def test_a_user_with_groups_extras_and_a_uid() -> None:
    user, asked = acting(
        [
            ("impersonate-user", "jane"),
            ("impersonate-group", "devs"),
            ("impersonate-group", "qa"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-uid", "42"),
        ]
    )
    assert user == UserInfo(
        "jane", "42", ("devs", "qa", "system:authenticated"), {"scopes": ("view",)}
    )
    assert asked == [
        ("", "users", "", "", "jane"),
        ("", "groups", "", "", "devs"),
        ("", "groups", "", "", "qa"),
        ("authentication.k8s.io", "userextras", "scopes", "", "view"),
        ("authentication.k8s.io", "uids", "", "", "42"),
    ]


def test_a_service_account_is_impersonated_as_a_service_account() -> None:
    user, asked = acting([("impersonate-user", "system:serviceaccount:web:builder")])
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:web",
        "system:authenticated",
    )
    assert asked == [("", "serviceaccounts", "", "web", "builder")]


def test_anonymous_is_unauthenticated_and_groups_need_a_user() -> None:
    user, _ = acting([("impersonate-user", "system:anonymous")])
    assert user.groups == ("system:unauthenticated",)
    with pytest.raises(StatusError) as e:
        acting([("impersonate-group", "devs")])
    assert e.value.code == 500
