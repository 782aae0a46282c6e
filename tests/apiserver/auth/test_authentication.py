"""Authentication as kube-apiserver v1.32's: the static token file's CSV, bearer tokens,
client certificate subjects, anonymous requests, and the 401 for a token nobody issued."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.auth.authentication import (
    Authenticator,
    TokenFileError,
    load_token_file,
)
from pinnace.apiserver.auth.user import UserInfo


def authenticate(
    authenticator: Authenticator, headers: dict[str, str], certificate: Any
) -> UserInfo:
    return asyncio.run(authenticator.authenticate(headers.get("authorization", ""), certificate))


def test_the_token_file_is_kube_apiservers_csv(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('tok-1,alice,1001\ntok-2,bob,1002,"devs,qa"\n\n,nobody,0\n')
    assert load_token_file(path) == {
        "tok-1": UserInfo("alice", "1001"),
        "tok-2": UserInfo("bob", "1002", ("devs", "qa")),
    }
    path.write_text("tok-1,alice\n")
    with pytest.raises(TokenFileError) as e:
        load_token_file(path)
    assert str(e.value) == (
        f"token file '{path}' must have at least 3 columns (token, user name, user uid), found 2"
    )


def test_tokens_certificates_and_anonymous_requests() -> None:
    authenticator = Authenticator({"tok": UserInfo("bob", "1", ("devs",))})
    bob = authenticate(authenticator, {"authorization": "Bearer tok"}, None)
    assert bob == UserInfo("bob", "1", ("devs", "system:authenticated"))
    certificate = {
        "subject": (
            (("organizationName", "system:masters"),),
            (("organizationName", "ops"),),
            (("commonName", "kubernetes-admin"),),
        )
    }
    admin = authenticate(authenticator, {}, certificate)
    assert admin.name == "kubernetes-admin"
    assert admin.groups == ("system:masters", "ops", "system:authenticated")
    anonymous = authenticate(authenticator, {"authorization": "Basic eDp5"}, None)
    assert anonymous == UserInfo("system:anonymous", groups=("system:unauthenticated",))
    with pytest.raises(StatusError) as e:
        authenticate(authenticator, {"authorization": "Bearer not-a-token"}, None)
    assert e.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }
    with pytest.raises(StatusError):
        authenticate(Authenticator({}, anonymous=False), {}, None)


def test_a_bearer_token_is_read_as_kube_apiserver_splits_the_header() -> None:
    """bearertoken: the second space-separated word; an empty one is no token at all."""
    authenticator = Authenticator({"tok": UserInfo("bob")})
    assert authenticate(authenticator, {"authorization": "Bearer tok extra"}, None).name == "bob"
    anonymous = authenticate(authenticator, {"authorization": "Bearer  tok"}, None)
    assert anonymous.name == "system:anonymous"
