"""Who a request comes from, as kube-apiserver v1.32 authenticates it
(staging/src/k8s.io/apiserver/pkg/authentication): a client certificate the cluster CA signed
(request/x509: the common name is the user, each organization a group), else a bearer token
from `--token-auth-file` (token/tokenfile), else the anonymous user. A request that presents a
bearer token nobody issued is refused (401), never treated as anonymous
(union.NewFailOnError). Every authenticated user but the anonymous one is also in
system:authenticated.

The token file is kube-apiserver's CSV: `token,user,uid,"group1,group2"`, one per line.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pinnace.api.status import unauthorized
from pinnace.apiserver.auth.tokens import DEFAULT_ISSUER, TokenError
from pinnace.apiserver.auth.user import ANONYMOUS_USER, UserInfo

ServiceAccountAuthenticator = Callable[
    [str, Sequence[str]], Awaitable[tuple[UserInfo, tuple[str, ...]] | None]
]
"""(token, audiences asked for) -> the service account it authenticates and the audiences it
does so for; None when it is not a service account token; TokenError when it is one that
fails a check (`APIServer.authenticate_service_account`)."""
INVALID_TOKEN = "invalid bearer token"

_log = logging.getLogger(__name__)


class TokenFileError(Exception):
    """A token file kube-apiserver would refuse at start."""


def load_token_file(path: str | Path) -> dict[str, UserInfo]:
    """token -> user, as tokenfile.NewCSV reads the file."""
    users: dict[str, UserInfo] = {}
    try:
        with open(path, newline="") as f:
            records = list(csv.reader(f, skipinitialspace=True))
    except OSError as e:
        raise TokenFileError(f"cannot read token file '{path}': {e.strerror}") from None
    for record in records:
        if not record:
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{path}' must have at least 3 columns (token, user name, user "
                f"uid), found {len(record)}"
            )
        if not record[0]:
            continue  # kube-apiserver warns of an empty token and skips its line
        groups: tuple[str, ...] = ()
        if len(record) >= 4:
            groups = tuple(g for g in record[3].split(",") if g)
        users[record[0]] = UserInfo(record[1], record[2], groups)
    return users


def certificate_user(certificate: Mapping[str, Any]) -> UserInfo | None:
    """x509.CommonNameUserConversion: the subject's CN, and its O entries as groups; a
    certificate without a common name authenticates no one."""
    name, groups = "", []
    for rdn in certificate.get("subject") or ():
        for key, value in rdn:
            if key == "commonName" and not name:
                name = value
            elif key == "organizationName":
                groups.append(value)
    return UserInfo(name, groups=tuple(groups)) if name else None


class Authenticator:
    def __init__(
        self,
        tokens: Mapping[str, UserInfo] | None = None,
        anonymous: bool = True,
        service_accounts: ServiceAccountAuthenticator | None = None,
        api_audiences: Sequence[str] = (DEFAULT_ISSUER,),
    ):
        self.tokens = dict(tokens or {})
        self.anonymous = anonymous
        self.service_accounts = service_accounts
        self.api_audiences = tuple(api_audiences)

    async def authenticate(
        self, headers: Mapping[str, str], certificate: Mapping[str, Any] | None
    ) -> UserInfo:
        """The request's user; a 401 StatusError when its credentials are bad or missing
        (and anonymous requests are off)."""
        if certificate:
            user = certificate_user(certificate)
            if user is not None:
                return user.with_authenticated_group()
        # bearertoken.AuthenticateRequest: the word after "Bearer " up to the next space; an
        # empty one ("Bearer  x") is no token, so the request goes on as anonymous.
        parts = headers.get("authorization", "").strip().split(" ", 2)
        if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
            user = self.tokens.get(parts[1]) or await self._service_account(parts[1])
            if user is None:
                raise unauthorized()
            return user.with_authenticated_group()
        if self.anonymous:
            return ANONYMOUS_USER
        raise unauthorized()

    async def _service_account(self, token: str) -> UserInfo | None:
        if self.service_accounts is None:
            return None
        try:
            found = await self.service_accounts(token, self.api_audiences)
        except TokenError as e:
            # kube-apiserver logs why ("Unable to authenticate the request"); the client gets
            # the bare 401.
            _log.info("Unable to authenticate the request: [%s, %s]", INVALID_TOKEN, e)
            return None
        return None if found is None else found[0]

    async def review(
        self, token: str, audiences: Sequence[str] = ()
    ) -> tuple[UserInfo, tuple[str, ...]]:
        """A TokenReview's answer: the user `token` authenticates as, and the audiences it
        does so for (those asked for, the API audiences when none are); TokenError with the
        review's status.error when it authenticates no one. A token of the token file knows
        no audience: it is good for the API audiences only (WrapAudienceAgnosticToken)."""
        wanted = tuple(audiences) or self.api_audiences
        user = self.tokens.get(token)
        if user is not None:
            accepted = tuple(a for a in wanted if a in self.api_audiences)
            if accepted:
                return user.with_authenticated_group(), accepted
        elif self.service_accounts is not None:
            try:
                found = await self.service_accounts(token, wanted)
            except TokenError as e:
                raise TokenError(f"[{INVALID_TOKEN}, {e}]") from None
            if found is not None:
                return found[0].with_authenticated_group(), found[1]
        raise TokenError(INVALID_TOKEN)
