"""Service account tokens as kube-apiserver v1.32 issues and checks them: TokenRequest's
defaults, limits and bound objects, the JWT's claims, and the authenticator's checks
(signature, issuer, audiences, expiry, the account and the bound pod still there), on the
virtual clock."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.authentication import Authenticator, TokenCache
from pinnace.apiserver.auth.reviews import review_token
from pinnace.apiserver.auth.tokens import TokenError
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.token_request import request_token
from pinnace.clock.rfc3339 import format_time

SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
SECRETS = catalog.kind("", "secrets")
ISSUER = "https://kubernetes.default.svc.cluster.local"


def _create(api: Harness, kind: Any, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    return api.call(api.server.create, kind, namespace, obj).obj


def _account(api: Harness, name: str = "robot") -> dict[str, Any]:
    return _create(api, SERVICE_ACCOUNTS, "default", {"metadata": {"name": name}})


def _pod(api: Harness, name: str = "web", account: str = "robot") -> dict[str, Any]:
    _create(api, NODES, "", {"metadata": {"name": "n1"}})
    container = {"name": "c", "image": "app"}
    spec = {"serviceAccountName": account, "nodeName": "n1", "containers": [container]}
    return _create(api, PODS, "default", {"metadata": {"name": name}, "spec": spec})


def _request(api: Harness, name: str = "robot", **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    return api.call(request_token, api.server, "default", name, body).obj


def _claims(token: str) -> dict[str, Any]:
    header, payload, _ = token.split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {
        "alg": "ES256",
        "kid": json.loads(base64.urlsafe_b64decode(header + "=="))["kid"],
    }
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(payload + "=="))
    return claims


def _authenticate(api: Harness, token: str) -> UserInfo:
    authenticator = Authenticator(
        anonymous=False, service_accounts=api.server.authenticate_service_account
    )
    return api.call(authenticator.authenticate, f"Bearer {token}", None)


def _why_refused(api: Harness, token: str, audiences: tuple[str, ...] = ()) -> str:
    with pytest.raises(TokenError) as e:
        api.call(api.server.authenticate_service_account, token, audiences)
    return str(e.value)


def test_a_token_request_defaults_to_an_hour_for_the_api_audience(api: Harness) -> None:
    account = _account(api)
    now = api.server.clock.now()
    answer = _request(api)
    assert answer["spec"] == {"audiences": [ISSUER], "expirationSeconds": 3600}
    assert answer["metadata"]["name"] == "robot"
    assert answer["status"]["expirationTimestamp"] == format_time(now + 3600)
    claims = _claims(answer["status"]["token"])
    assert claims["iss"] == ISSUER and claims["aud"] == [ISSUER]
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert claims["exp"] - claims["iat"] == 3600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {
        "namespace": "default",
        "serviceaccount": {"name": "robot", "uid": account["metadata"]["uid"]},
    }
    user = _authenticate(api, answer["status"]["token"])
    assert user.name == "system:serviceaccount:default:robot"
    assert user.uid == account["metadata"]["uid"]
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    )
    assert user.extra == {"authentication.kubernetes.io/credential-id": (f"JTI={claims['jti']}",)}


def test_token_request_validation_as_kube_apiservers(api: Harness) -> None:
    _account(api)
    with pytest.raises(StatusError) as e:
        _request(api, expirationSeconds=60)
    assert (e.value.code, e.value.message) == (
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        "value: 60: may not specify a duration less than 10 minutes",
    )
    with pytest.raises(StatusError) as e:
        _request(api, "nobody")
    assert (e.value.code, e.value.message) == (404, 'serviceaccounts "nobody" not found')
    with pytest.raises(StatusError) as e:
        _request(api, boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "gone"})
    assert (e.value.code, e.value.message) == (404, 'pods "gone" not found')
    with pytest.raises(StatusError) as e:
        _request(api, boundObjectRef={"kind": "ConfigMap", "apiVersion": "v1", "name": "c"})
    assert e.value.message == "cannot bind token to object of type /v1, Kind=ConfigMap"
    with pytest.raises(StatusError) as e:
        _request(api, boundObjectRef={"kind": "Node", "apiVersion": "v1", "name": "n1"})
    assert (e.value.code, e.value.message) == (404, 'nodes "n1" not found')
    pod = _pod(api)
    stale = {"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "not-its-uid"}
    with pytest.raises(StatusError) as e:
        _request(api, boundObjectRef=stale)
    assert (e.value.code, e.value.message) == (
        409,
        'Operation cannot be fulfilled on Pod "web": the UID in the bound object reference '
        "(not-its-uid) does not match the UID in record. The object might have been deleted "
        "and then recreated",
    )
    _account(api, "other")
    with pytest.raises(StatusError) as e:
        _request(api, "other", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    assert (e.value.code, e.value.message) == (
        400,
        'cannot bind token for serviceaccount "other" to pod running with different '
        "serviceaccount name.",
    )
    assert pod["metadata"]["uid"]


def test_a_pod_bound_token_names_the_pod_and_its_node_and_dies_with_the_pod(
    api: Harness,
) -> None:
    _account(api)
    pod = _pod(api)
    node = api.call(api.server.get, NODES, "", "n1")
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    token = _request(api, boundObjectRef=ref, expirationSeconds=600)["status"]["token"]
    private = _claims(token)["kubernetes.io"]
    assert private["pod"] == {"name": "web", "uid": pod["metadata"]["uid"]}
    assert private["node"] == {"name": "n1", "uid": node["metadata"]["uid"]}
    user = _authenticate(api, token)
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert user.extra["authentication.kubernetes.io/pod-uid"] == (pod["metadata"]["uid"],)
    assert user.extra["authentication.kubernetes.io/node-name"] == ("n1",)
    api.call(api.server.delete, PODS, "default", "web")  # graceful: it is still there
    assert _authenticate(api, token).name == "system:serviceaccount:default:robot"
    # its deletionTimestamp (30 s of grace ahead) is more than the leeway behind
    api.run(api.server.clock.sleep(30 + 61))
    assert _why_refused(api, token) == "service account token has been invalidated"


def test_a_successful_authentication_is_kept_ten_seconds(api: Harness) -> None:
    """kube-apiserver's token cache (TokenSuccessCacheTTL 10 s, failures not kept): a token
    works for 10 s after its last fresh check, however its account changes meanwhile; a review
    for other audiences is checked apart."""
    _account(api)
    token = _request(api)["status"]["token"]
    authenticator = Authenticator(
        anonymous=False,
        service_accounts=api.server.authenticate_service_account,
        cache=TokenCache(api.server.clock.now),
    )
    bearer = f"Bearer {token}"
    robot = "system:serviceaccount:default:robot"
    assert api.call(authenticator.authenticate, bearer, None).name == robot
    api.call(api.server.delete, SERVICE_ACCOUNTS, "default", "robot")
    assert _why_refused(api, token) == 'serviceaccounts "robot" not found'
    api.run(api.server.clock.sleep(9.5))
    assert api.call(authenticator.authenticate, bearer, None).name == robot
    assert api.call(authenticator.review, token)[0].name == robot
    with pytest.raises(TokenError, match="is invalid for the target audiences"):
        api.call(authenticator.review, token, ("vault",))
    api.run(api.server.clock.sleep(1))
    with pytest.raises(StatusError) as refused:
        api.call(authenticator.authenticate, bearer, None)
    assert refused.value.code == 401
    with pytest.raises(TokenError, match='serviceaccounts "robot" not found'):
        api.call(authenticator.review, token)


def test_every_token_in_use_is_kept_until_its_ten_seconds_are_up(api: Harness) -> None:
    """apimachinery's Expiring cache under tokencache: no count bound (the first of 5,000
    tokens checked is still kept), and an entry is gone at its expiry, not after it."""
    _account(api)
    tokens = [_request(api)["status"]["token"] for _ in range(5000)]
    authenticator = Authenticator(
        anonymous=False,
        service_accounts=api.server.authenticate_service_account,
        cache=TokenCache(api.server.clock.now),
    )
    robot = "system:serviceaccount:default:robot"
    for token in tokens:
        assert api.call(authenticator.authenticate, f"Bearer {token}", None)
    api.call(api.server.delete, SERVICE_ACCOUNTS, "default", "robot")
    first = f"Bearer {tokens[0]}"
    assert api.call(authenticator.authenticate, first, None).name == robot
    api.run(api.server.clock.sleep(10))
    with pytest.raises(StatusError) as refused:
        api.call(authenticator.authenticate, first, None)
    assert refused.value.code == 401


def test_a_token_names_the_node_and_account_there_now_when_recreated(api: Harness) -> None:
    """The service account and the pod's node, read again for each token: a recreated one's
    uid, and no node claim once the node is gone (the token is still granted)."""
    _account(api)
    _pod(api)
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    for _ in range(2):
        account = api.call(api.server.get, SERVICE_ACCOUNTS, "default", "robot")
        node = api.call(api.server.get, NODES, "", "n1")
        private = _claims(_request(api, boundObjectRef=ref)["status"]["token"])["kubernetes.io"]
        assert private["serviceaccount"] == {"name": "robot", "uid": account["metadata"]["uid"]}
        assert private["node"] == {"name": "n1", "uid": node["metadata"]["uid"]}
        api.call(api.server.delete, SERVICE_ACCOUNTS, "default", "robot")
        api.call(api.server.delete, NODES, "", "n1")
        _account(api)
        _create(api, NODES, "", {"metadata": {"name": "n1"}})
    api.call(api.server.delete, NODES, "", "n1")
    private = _claims(_request(api, boundObjectRef=ref)["status"]["token"])["kubernetes.io"]
    assert "node" not in private and private["pod"]["name"] == "web"
    api.call(api.server.delete, SERVICE_ACCOUNTS, "default", "robot")
    with pytest.raises(StatusError) as e:
        _request(api, boundObjectRef=ref)
    assert (e.value.code, str(e.value)) == (404, 'serviceaccounts "robot" not found')


def test_the_kube_api_access_token_lasts_a_year_but_says_an_hour(api: Harness) -> None:
    """The ServiceAccount admission plugin's 3607 s, pod-bound, for the API audience: extended
    (--service-account-extend-token-expiration), with warnafter at 3607 s."""
    _account(api)
    _pod(api)
    now = api.server.clock.now()
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "web"}
    answer = _request(api, boundObjectRef=ref, expirationSeconds=3607)
    assert answer["status"]["expirationTimestamp"] == format_time(now + 3607)
    claims = _claims(answer["status"]["token"])
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607


def test_expired_forged_foreign_and_orphaned_tokens_are_refused(api: Harness) -> None:
    _account(api)
    token = _request(api, expirationSeconds=600)["status"]["token"]
    header, payload, signature = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged["sub"] = "system:serviceaccount:kube-system:admin"
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).decode().rstrip("=")
    assert _why_refused(api, f"{header}.{forged_payload}.{signature}") == (
        "square/go-jose: error in cryptographic primitive"
    )
    assert _why_refused(api, token, ("vault",)) == (
        f'token audiences ["{ISSUER}"] is invalid for the target audiences ["vault"]'
    )
    # another issuer's JWT is not the service accounts' to judge: nobody knows it
    assert api.call(api.server.authenticate_service_account, "a.b.c", ()) is None
    with pytest.raises(StatusError) as e:
        _authenticate(api, "a.b.c")
    assert e.value.code == 401
    api.run(api.server.clock.sleep(600 + 60 + 1))
    assert _why_refused(api, token) == "service account token has expired"
    fresh = _request(api)["status"]["token"]
    api.call(api.server.delete, SERVICE_ACCOUNTS, "default", "robot")
    assert _why_refused(api, fresh) == 'serviceaccounts "robot" not found'
    _account(api)  # the same name, another uid
    assert _why_refused(api, fresh).startswith("service account UID (")


def test_a_token_review_says_who_a_token_is(api: Harness) -> None:
    account = _account(api)
    token = _request(api)["status"]["token"]
    reviewer = Authenticator(service_accounts=api.server.authenticate_service_account)
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    answered = api.call(review_token, reviewer, {**review, "spec": {"token": token}})
    assert answered["status"]["authenticated"] is True
    assert answered["status"]["audiences"] == [ISSUER]
    assert answered["status"]["user"]["username"] == "system:serviceaccount:default:robot"
    assert answered["status"]["user"]["uid"] == account["metadata"]["uid"]
    assert "system:authenticated" in answered["status"]["user"]["groups"]
    refused = api.call(
        review_token, reviewer, {**review, "spec": {"token": token, "audiences": ["vault"]}}
    )
    assert refused["status"] == {
        "user": {},
        "error": f'[invalid bearer token, token audiences ["{ISSUER}"] is invalid for the '
        'target audiences ["vault"]]',
    }
    with pytest.raises(StatusError) as e:
        api.call(review_token, reviewer, {**review, "spec": {}})
    assert e.value.message == "token is required for TokenReview in authentication"


def test_the_max_expiration_cuts_requests_and_a_secret_bound_token_dies_with_it(
    api: Harness,
) -> None:
    _account(api)
    api.server.service_account_tokens.max_expiration = 2 * 3600  # the flag's
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}
    result = api.call(
        request_token,
        api.server,
        "default",
        "robot",
        {**body, "spec": {"expirationSeconds": 48 * 3600}},
    )
    assert result.warnings == ["requested expiration of 172800 seconds shortened to 7200 seconds"]
    answer = result.obj
    assert answer["spec"]["expirationSeconds"] == 2 * 3600
    claims = _claims(answer["status"]["token"])
    assert claims["exp"] - claims["iat"] == 2 * 3600
    secret = _create(api, SECRETS, "default", {"metadata": {"name": "anchor"}})
    ref = {"kind": "Secret", "apiVersion": "v1", "name": "anchor"}
    token = _request(api, boundObjectRef=ref)["status"]["token"]
    assert _claims(token)["kubernetes.io"]["secret"] == {
        "name": "anchor",
        "uid": secret["metadata"]["uid"],
    }
    assert "authentication.kubernetes.io/pod-name" not in _authenticate(api, token).extra
    api.call(api.server.delete, SECRETS, "default", "anchor")
    assert _why_refused(api, token) == "service account token has been invalidated"
