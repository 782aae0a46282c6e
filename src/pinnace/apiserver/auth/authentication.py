"""Who a request comes from, as kube-apiserver v1.32 authenticates it
(staging/src/k8s.io/apiserver/pkg/authentication): a client certificate the cluster CA signed
(request/x509: the common name is the user, each organization a group), else a bearer token
from `--token-auth-file` (token/tokenfile), else the anonymous user. A request that presents a
bearer token nobody issued is refused (401), never treated as anonymous
(union.NewFailOnError). Every authenticated user but the anonymous one is also in
system:authenticated.

A bearer token's successful authentication is kept for 10 s (`TokenCache`, after
token/cache/cached_token_authenticator.go with kube-apiserver's default TokenSuccessCacheTTL), for
requests and TokenReviews alike: within that time a token keeps working after its
ServiceAccount, Secret, pod or node is deleted, or its expiry passes, as with kube-apiserver.
Failures are not kept (TokenFailureCacheTTL 0).

The token file is kube-apiserver's CSV: `token,user,uid,"group1,group2"`, one per line.
"""

from __future__ import annotations

import csv
import logging
from collections import OrderedDict
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
TOKEN_SUCCESS_CACHE_TTL = 10.0
"""kube-apiserver's TokenSuccessCacheTTL (NewBuiltInAuthenticationOptions), in seconds."""
CERTIFICATE_USERS_HELD = 1024
"""Client certificate subjects whose users are remembered; the first seen is forgotten first."""

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


Authenticated = tuple[UserInfo, tuple[str, ...]]
"""The user a token authenticates, and the audiences it does so for."""


class TokenCache:
    """Successful token authentications, each kept `ttl` seconds of `now` (the cluster's
    clock), keyed by the audiences asked for and the token: tokencache's stripes of
    apimachinery's `Expiring` cache, which holds every token in use (no count bound) and drops
    an entry once its time has come, on the next `put`."""

    def __init__(self, now: Callable[[], float], ttl: float = TOKEN_SUCCESS_CACHE_TTL) -> None:
        self._now, self._ttl = now, ttl
        self._kept: OrderedDict[tuple[tuple[str, ...], str], tuple[float, Authenticated]] = (
            OrderedDict()
        )
        """In the order they expire: every entry has the same ttl and is put anew at the end."""

    def get(self, audiences: tuple[str, ...], token: str) -> Authenticated | None:
        kept = self._kept.get((audiences, token))
        if kept is None or kept[0] <= self._now():  # Expiring.Get: gone at its expiry
            return None
        return kept[1]

    def put(self, audiences: tuple[str, ...], token: str, found: Authenticated) -> None:
        now, kept = self._now(), self._kept
        while kept and next(iter(kept.values()))[0] <= now:  # Expiring.gc
            kept.popitem(last=False)
        kept[(audiences, token)] = (now + self._ttl, found)
        kept.move_to_end((audiences, token))


class Authenticator:
    def __init__(
        self,
        tokens: Mapping[str, UserInfo] | None = None,
        anonymous: bool = True,
        service_accounts: ServiceAccountAuthenticator | None = None,
        api_audiences: Sequence[str] = (DEFAULT_ISSUER,),
        cache: TokenCache | None = None,
    ):
        self.tokens = dict(tokens or {})
        self.anonymous = anonymous
        self.service_accounts = service_accounts
        self.api_audiences = tuple(api_audiences)
        self.cache = cache
        """Where successful token authentications are kept; None: each is done afresh."""
        self._certificate_users: dict[Any, UserInfo | None] = {}
        """By certificate subject, the user it names (`_certificate_user`)."""

    async def authenticate(
        self, authorization: str, certificate: Mapping[str, Any] | None
    ) -> UserInfo:
        """The user of a request with this Authorization header ("" for none) and client
        certificate, system:authenticated among its groups; a 401 StatusError when its
        credentials are bad or missing (and anonymous requests are off)."""
        if certificate:
            user = self._certificate_user(certificate)
            if user is not None:
                return user
        # bearertoken.AuthenticateRequest: the word after "Bearer " up to the next space; an
        # empty one ("Bearer  x") is no token, so the request goes on as anonymous.
        parts = authorization.strip().split(" ", 2)
        if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
            try:
                found = await self._token(parts[1], self.api_audiences)
            except TokenError as e:
                # kube-apiserver logs why ("Unable to authenticate the request"); the client
                # gets the bare 401.
                _log.info("Unable to authenticate the request: [%s, %s]", INVALID_TOKEN, e)
                found = None
            if found is None:
                raise unauthorized()
            return found[0]
        if self.anonymous:
            return ANONYMOUS_USER
        raise unauthorized()

    def _certificate_user(self, certificate: Mapping[str, Any]) -> UserInfo | None:
        """`certificate_user` with system:authenticated, worked out once for each subject:
        every request on a connection presents the same certificate (the TLS handshake
        verified it), and it names the same user on every connection."""
        subject = certificate.get("subject")
        if subject in self._certificate_users:
            return self._certificate_users[subject]
        user = certificate_user(certificate)
        if user is not None:
            user = user.with_authenticated_group()
        if len(self._certificate_users) >= CERTIFICATE_USERS_HELD:
            del self._certificate_users[next(iter(self._certificate_users))]
        self._certificate_users[subject] = user
        return user

    async def review(self, token: str, audiences: Sequence[str] = ()) -> Authenticated:
        """A TokenReview's answer: the user `token` authenticates as, and the audiences it
        does so for (those asked for, the API audiences when none are); TokenError with the
        review's status.error when it authenticates no one."""
        try:
            found = await self._token(token, tuple(audiences) or self.api_audiences)
        except TokenError as e:
            raise TokenError(f"[{INVALID_TOKEN}, {e}]") from None
        if found is None:
            raise TokenError(INVALID_TOKEN)
        return found

    async def _token(self, token: str, wanted: tuple[str, ...]) -> Authenticated | None:
        """The token authenticators' union, through the cache: the token file's user (a
        token of the file knows no audience, so it is good for the API audiences only:
        WrapAudienceAgnosticToken), else the service account's, in system:authenticated (kept
        so, for the requests the cache answers); None when neither knows the token;
        TokenError when a service account token fails a check."""
        if self.cache is not None:
            kept = self.cache.get(wanted, token)
            if kept is not None:
                return kept
        found: Authenticated | None = None
        user = self.tokens.get(token)
        if user is not None:
            accepted = tuple(a for a in wanted if a in self.api_audiences)
            found = (user, accepted) if accepted else None
        elif self.service_accounts is not None:
            found = await self.service_accounts(token, wanted)
        if found is not None:
            found = (found[0].with_authenticated_group(), found[1])
            if self.cache is not None:
                self.cache.put(wanted, token, found)
        return found
