"""The HTTP front end's authentication and authorization filters, in kube-apiserver v1.32's
order (staging/src/k8s.io/apiserver/pkg/endpoints/filters: authentication.go,
impersonation.go, authorization.go): who asks (401 when the credentials are bad), whom they
act as (403 when they may not impersonate), and whether that user may do what the request
does (403 with kube-apiserver's wording).

Without authentication (`pinnace up` on loopback without TLS, as before), every request is
kube-apiserver's old insecure port's user: system:unsecured, a member of system:masters, who
may impersonate anyone (so `kubectl auth can-i --as` answers for that user).
"""

from __future__ import annotations

from pinnace.api.status import StatusError, forbidden
from pinnace.apiserver.auth import impersonation
from pinnace.apiserver.auth.attributes import request_attributes
from pinnace.apiserver.auth.authentication import Authenticator
from pinnace.apiserver.auth.authorizer import Authorizer, forbidden_message
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import ALL_AUTHENTICATED, SYSTEM_MASTERS, UserInfo
from pinnace.apiserver.http.request import Request

UNSECURED_USER = UserInfo("system:unsecured", groups=(SYSTEM_MASTERS, ALL_AUTHENTICATED))


def forbidden_error(attributes: Attributes, reason: str) -> StatusError:
    """responsewriters.Forbidden: the message, then the authorizer's reason if it gave one."""
    message = forbidden_message(attributes)
    if reason:
        message = f"{message}: {reason}"
    if not attributes.resource_request:
        return StatusError(403, "Forbidden", f"forbidden: {message}", {})
    return forbidden(attributes.resource, attributes.name, message, attributes.api_group)


class Security:
    def __init__(self, authorizer: Authorizer, authenticator: Authenticator | None = None):
        self.authorizer = authorizer
        self.authenticator = authenticator

    async def check(self, attributes: Attributes) -> None:
        decision = await self.authorizer.authorize(attributes)
        if not decision.allowed:
            raise forbidden_error(attributes, decision.reason)

    async def admit(self, request: Request) -> UserInfo:
        """The user the request acts as, once it may do what it asks; a Status error else."""
        if self.authenticator is None and not request.impersonating:
            return UNSECURED_USER
        if self.authenticator is None:
            user = UNSECURED_USER
        else:
            user = await self.authenticator.authenticate(
                request.last_header("authorization"), request.client_certificate()
            )
        if request.impersonating:
            user = await impersonation.impersonate(user, request.header_lines(), self.check)
        method, path = request.method, request.path
        key = self.authorizer.request_key(
            user, method, path, request.scope.get("query_string", b"")
        )
        if self.authorizer.known_allowed(user, key):
            return user
        await self.check(request_attributes(user, method, path, request.query))
        self.authorizer.remember_allowed(key)
        return user
