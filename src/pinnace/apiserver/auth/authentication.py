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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pinnace.api.status import unauthorized
from pinnace.apiserver.auth.user import ANONYMOUS_USER, UserInfo


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
    def __init__(self, tokens: Mapping[str, UserInfo] | None = None, anonymous: bool = True):
        self.tokens = dict(tokens or {})
        self.anonymous = anonymous

    def authenticate(
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
            user = self.tokens.get(parts[1])
            if user is None:
                raise unauthorized()
            return user.with_authenticated_group()
        if self.anonymous:
            return ANONYMOUS_USER
        raise unauthorized()
