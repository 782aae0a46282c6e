"""Who a request comes from (k8s.io/apiserver/pkg/authentication/user), and the request being
served, as kube-apiserver keeps both in the request's context.

In-process components (the scheduler, the controllers, the node agents) call the API server
without HTTP and carry no requester: they are trusted as kube-apiserver trusts its privileged
loopback client (a member of system:masters).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

SYSTEM_MASTERS = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
KUBE_SCHEDULER = "system:kube-scheduler"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_PROXY = "system:kube-proxy"
MONITORING_GROUP = "system:monitoring"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    def with_authenticated_group(self) -> UserInfo:
        """group.AuthenticatedGroupAdder: every authenticated user but the anonymous one is in
        system:authenticated."""
        if self.name == ANONYMOUS or ALL_AUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, ALL_AUTHENTICATED), self.extra)

    def fields(self) -> dict[str, Any]:
        """The user as the API writes one (authentication.k8s.io/v1 UserInfo: username, and
        uid, groups and extra when set)."""
        info: dict[str, Any] = {"username": self.name}
        if self.uid:
            info["uid"] = self.uid
        if self.groups:
            info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {k: list(v) for k, v in self.extra.items()}
        return info


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(ALL_UNAUTHENTICATED,))


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:<namespace>:<name>`, else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


@dataclass(frozen=True)
class Requester:
    """The authenticated (possibly impersonated) user of the request being served, and the
    resource it names, for checks made deep in the pipeline (RBAC's escalation check)."""

    user: UserInfo
    namespace: str = ""


REQUESTER: ContextVar[Requester | None] = ContextVar("pinnace_requester", default=None)
"""Set by the HTTP front end for the request it serves; None in-process (trusted)."""


def requester() -> Requester | None:
    return REQUESTER.get()
