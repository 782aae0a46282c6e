"""Acting as another user: the Impersonate-User, Impersonate-Group, Impersonate-Uid and
Impersonate-Extra-* headers, each allowed only when the requester may `impersonate` it, as
kube-apiserver v1.32's filter (staging/src/k8s.io/apiserver/pkg/endpoints/filters/
impersonation.go): users (or serviceaccounts, for a service account's user name) and groups
in the core group, uids and userextras in authentication.k8s.io.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import unquote

from pinnace.api.status import StatusError
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    SERVICE_ACCOUNTS_GROUP,
    UserInfo,
    service_account_username,
    split_service_account_username,
)

HEADER_PREFIX = "impersonate-"
USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION = "authentication.k8s.io"

Check = Callable[[Attributes], Awaitable[None]]
"""Raises the 403 when the requester may not do what the attributes say."""


async def impersonate(
    requester: UserInfo, headers: Sequence[tuple[str, str]], check: Check
) -> UserInfo:
    """The user the headers ask to act as, each part authorized with `check`."""
    user_name = next((v for n, v in headers if n == USER_HEADER and v), "")
    groups_given = [v for n, v in headers if n == GROUP_HEADER]
    uid = next((v for n, v in headers if n == UID_HEADER and v), "")
    extras = [
        (unquote(n[len(EXTRA_PREFIX) :].lower()), v)
        for n, v in headers
        if n.startswith(EXTRA_PREFIX)
    ]
    if not user_name:
        if groups_given or extras or uid:
            raise StatusError(
                500,
                "InternalError",
                "Internal error occurred: requested impersonation of groups, extras or a uid "
                "without impersonating a user",
            )
        return requester
    groups: list[str] = []
    service_account = split_service_account_username(user_name)
    if service_account is not None:
        namespace, name = service_account
        await check(_acting(requester, "", "serviceaccounts", name, namespace))
        user_name = service_account_username(namespace, name)
        if not groups_given:
            groups = [SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"]
    else:
        await check(_acting(requester, "", "users", user_name))
    for group in groups_given:
        await check(_acting(requester, "", "groups", group))
        groups.append(group)
    extra: dict[str, list[str]] = {}
    for key, value in extras:
        await check(_acting(requester, AUTHENTICATION, "userextras", value, subresource=key))
        extra.setdefault(key, []).append(value)
    if uid:
        await check(_acting(requester, AUTHENTICATION, "uids", uid))
    if user_name != ANONYMOUS:
        if not any(g in (ALL_AUTHENTICATED, ALL_UNAUTHENTICATED) for g in groups):
            groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_UNAUTHENTICATED)
    return UserInfo(user_name, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})


def _acting(
    requester: UserInfo,
    group: str,
    resource: str,
    name: str,
    namespace: str = "",
    subresource: str = "",
) -> Attributes:
    return Attributes(
        requester,
        "impersonate",
        namespace=namespace,
        api_group=group,
        api_version="v1",
        resource=resource,
        subresource=subresource,
        name=name,
    )
