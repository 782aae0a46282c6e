"""The HTTP front end's authentication and authorization filters over the ASGI app: what a
user may do follows every change to roles and bindings (and, for a node, to its pods) at the
next request, however many times the same request was allowed before."""

from __future__ import annotations

from typing import Any

from tests.apiserver.auth.test_node import pod
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.options import DeleteOptions
from pinnace.apiserver.auth.authentication import Authenticator
from pinnace.apiserver.auth.security import Security
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Randomness

CLUSTER_ROLES = catalog.kind("rbac.authorization.k8s.io", "clusterroles")
BINDINGS = catalog.kind("rbac.authorization.k8s.io", "clusterrolebindings")
PODS = catalog.kind("", "pods")
SECRETS = catalog.kind("", "secrets")
RBAC = "rbac.authorization.k8s.io"
OWN_PATH = "/readers-only"
"""A path nothing serves (404 once allowed) that only the role below allows."""
READER = {"metadata": {"name": "reader"}, "rules": [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
    {"nonResourceURLs": [OWN_PATH], "verbs": ["get"]},
]}  # fmt: skip


def binding(kind: str, name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"apiGroup": RBAC, "kind": kind, "name": name}],
    }


def certificate(name: str, *groups: str) -> dict[str, Any]:
    return {"subject": ((("commonName", name),), *((("organizationName", g),) for g in groups))}


def app(api: Harness) -> APIApp:
    tokens = {"alice": UserInfo("alice", "1"), "bob": UserInfo("bob", "2", ("readers",))}
    security = Security(api.server.authorizer, Authenticator(tokens, anonymous=False))
    return APIApp(api.server, Randomness(1), security=security)


def status(
    api: Harness,
    served: APIApp,
    path: str,
    token: str = "",
    cert: dict[str, Any] | None = None,
    query: bytes = b"",
) -> int:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    scope: dict[str, Any] = {
        "type": "http", "method": "GET", "path": path, "query_string": query, "headers": headers,
    }  # fmt: skip
    if cert is not None:
        scope["extensions"] = {"tls": {"client_cert": cert}}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    api.run(served(scope, receive, send))
    code: int = sent[0]["status"]
    return code


def test_an_allowed_request_is_refused_once_its_binding_is_gone(api: Harness) -> None:
    served = app(api)
    api.call(api.server.create, CLUSTER_ROLES, "", READER)
    pods = "/api/v1/namespaces/default/pods"
    assert status(api, served, pods, "alice") == 403
    api.call(api.server.create, BINDINGS, "", binding("User", "alice"))
    for _ in range(3):
        assert status(api, served, pods, "alice") == 200
        assert status(api, served, OWN_PATH, "alice") == 404
    assert status(api, served, pods, "bob") == 403  # same request, another user
    assert status(api, served, pods, "alice", query=b"watch=true") == 403  # another verb
    api.call(api.server.delete, BINDINGS, "", "reader")
    assert status(api, served, pods, "alice") == 403
    assert status(api, served, OWN_PATH, "alice") == 403
    api.call(api.server.create, BINDINGS, "", binding("Group", "readers"))
    assert status(api, served, pods, "bob") == 200
    role = api.call(api.server.get, CLUSTER_ROLES, "", "reader")
    api.call(api.server.update, CLUSTER_ROLES, "", "reader", {**role, "rules": READER["rules"][1:]})
    assert status(api, served, pods, "bob") == 403
    assert status(api, served, OWN_PATH, "bob") == 404


def test_each_certificate_names_its_own_user_on_every_request(api: Harness) -> None:
    served = app(api)
    api.call(api.server.create, CLUSTER_ROLES, "", READER)
    api.call(api.server.create, BINDINGS, "", binding("Group", "readers"))
    pods = "/api/v1/namespaces/default/pods"
    for _ in range(2):
        assert status(api, served, pods, cert=certificate("carol", "readers")) == 200
        assert status(api, served, pods, cert=certificate("carol")) == 403
        assert status(api, served, "/api/v1/secrets", cert=certificate("carol", "readers")) == 403
        assert (
            status(api, served, "/api/v1/secrets", cert=certificate("x", "system:masters")) == 200
        )
        assert status(api, served, pods, cert={"subject": ()}) == 401  # no common name


def test_a_node_may_read_a_secret_only_while_a_pod_of_its_uses_it(api: Harness) -> None:
    api.server.authorizer.modes = ("Node", "RBAC")
    served = app(api)
    node = certificate("system:node:n1", "system:nodes")
    api.call(api.server.create, SECRETS, "default", {"metadata": {"name": "s"}})
    secret = "/api/v1/namespaces/default/secrets/s"
    assert status(api, served, secret, cert=node) == 403
    volumes = [{"name": "v", "secret": {"secretName": "s"}}]
    api.call(api.server.create, PODS, "default", pod("mine", "n1", volumes=volumes))
    assert status(api, served, secret, cert=node) == 200
    assert status(api, served, secret, cert=node) == 200
    api.call(api.server.delete, PODS, "default", "mine", DeleteOptions(grace_period_seconds=0))
    assert status(api, served, secret, cert=node) == 403
