"""The API server's node proxy (`/api/v1/nodes/NAME/proxy/PATH`) as v1.32 serves it, through
`pinnace up --tls` with a token file, for a node `pinnace up` runs and a node of a `pinnace
agent` process: the kubelet's answer relayed with its status, headers and body (a followed log
as it is written), the API server's own refusals (401, 403 for nodes/proxy, 404 for an unknown
node) as Status objects, and the proxy transport's 503 for a kubelet it cannot reach."""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.http.test_agent_streams import agent_port, ended, kubectl, line
from tests.http.test_component_processes import Process, eventually, ready_nodes

TOKENS = 'admin-token,admin,1,"system:masters"\neve-token,eve,2\n'
TICKING = "while true; do echo tick; sleep 1; done"
SCRAPER_ROLE = {
    "metadata": {"name": "scraper"},
    "rules": [{"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}],
}
SCRAPER_BINDING = {
    "metadata": {"name": "eve-scrapes"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "scraper"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "eve"}],
}
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Process]]:
    workdir = tmp_path_factory.mktemp("node-proxy")
    (workdir / "tokens.csv").write_text(TOKENS)
    data = workdir / "data"
    flags = ("--tls", "--authorization-mode=Node,RBAC", "--token-auth-file", "tokens.csv")
    flags += ("--nodes", "1")
    cluster = launch(workdir, "--data-dir", str(data), flags=flags)
    agent = Process(workdir, "agent", "agent", "--kubeconfig", str(data / "agent.conf"),
                    "--nodes", "1", "--port", "0", "--name-prefix", "far")  # fmt: skip
    try:
        eventually("the agent's node is Ready", lambda: "far-1" in ready_nodes(cluster))
        overrides = '--overrides={"spec": {"nodeName": "far-1"}}'
        cluster.ok("run", "ticker", "--image=busybox", overrides, "--", "sh", "-c", TICKING)
        cluster.ok("wait", "--for=condition=Ready", "pod/ticker", "--timeout=60s")
        yield cluster, agent
    finally:
        if agent.popen.poll() is None:
            agent.popen.kill()
            agent.popen.wait()
        stop(cluster)


def get(
    cluster: Cluster, path: str, token: str = "admin-token", method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """`method path` with the bearer token: the status, headers (lower-case) and body."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    port = int(cluster.url.rsplit(":", 1)[1])
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request(method, path, headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        headers = {name.lower(): value for name, value in answer.getheaders()}
        return answer.status, headers, answer.read()
    finally:
        connection.close()


def status(cluster: Cluster, path: str, token: str = "admin-token") -> tuple[int, Any]:
    code, headers, body = get(cluster, path, token)
    assert headers["content-type"] == "application/json"
    return code, json.loads(body)


def test_a_scrape_relays_the_kubelets_answer(proxied: tuple[Cluster, Process]) -> None:
    cluster, _ = proxied
    for node in ("far-1", "pinnace-node-1"):  # an agent's, and one pinnace up runs itself
        code, headers, body = get(cluster, f"/api/v1/nodes/{node}/proxy/metrics/cadvisor")
        assert code == 200
        assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert headers["cache-control"] == "no-cache, private"
        assert int(headers["content-length"]) == len(body)
        assert b"# TYPE container_cpu_usage_seconds_total counter" in body
    assert b'pod="ticker"' in get(cluster, "/api/v1/nodes/far-1/proxy/metrics/cadvisor")[2]
    summary = json.loads(get(cluster, "/api/v1/nodes/far-1/proxy/stats/summary")[2])
    assert summary["node"]["nodeName"] == "far-1"
    # The kubelet's own refusal is relayed as it is, not made a Status.
    code, headers, body = get(cluster, "/api/v1/nodes/far-1/proxy/no/such/path")
    assert (code, headers["content-type"], body) == (
        404,
        "text/plain; charset=utf-8",
        b"404 page not found\n",
    )


def test_the_api_servers_refusals_are_v1_32s(proxied: tuple[Cluster, Process]) -> None:
    cluster, _ = proxied
    path = "/api/v1/nodes/far-1/proxy/metrics/cadvisor"
    code, unauthorized = status(cluster, path, token="nobody")
    assert code == 401 and unauthorized["message"] == "Unauthorized"
    forbidden = (
        'nodes "far-1" is forbidden: User "eve" cannot get resource "nodes/proxy" in API group ""'
        " at the cluster scope"
    )
    code, refused = status(cluster, path, token="eve-token")
    assert (code, refused["reason"], refused["message"]) == (403, "Forbidden", forbidden)
    assert refused["details"] == {"name": "far-1", "kind": "nodes"}
    cluster.ok("create", "-f", "-", stdin=json.dumps({"kind": "ClusterRole",
               "apiVersion": "rbac.authorization.k8s.io/v1", **SCRAPER_ROLE}))  # fmt: skip
    cluster.ok("create", "-f", "-", stdin=json.dumps({"kind": "ClusterRoleBinding",
               "apiVersion": "rbac.authorization.k8s.io/v1", **SCRAPER_BINDING}))  # fmt: skip
    assert get(cluster, path, token="eve-token")[0] == 200  # allowed at once
    cluster.ok("delete", "clusterrolebinding", "eve-scrapes")
    assert status(cluster, path, token="eve-token") == (403, refused)
    code, missing = status(cluster, "/api/v1/nodes/nope/proxy/metrics/cadvisor")
    assert (code, missing["reason"], missing["message"]) == (
        404,
        "NotFound",
        'nodes "nope" not found',
    )
    assert missing["details"] == {"name": "nope", "kind": "nodes"}


def test_a_followed_log_comes_as_it_is_written(proxied: tuple[Cluster, Process]) -> None:
    cluster, _ = proxied
    path = "/api/v1/nodes/far-1/proxy/containerLogs/default/ticker/ticker?follow=true"
    following = kubectl(cluster, "get", "--raw", path)
    try:
        assert line(following) == "tick\n"
        assert line(following) == "tick\n"  # the stream is open: more comes
    finally:
        ended(following)


def test_a_gone_agent_is_the_proxy_transports_error(proxied: tuple[Cluster, Process]) -> None:
    cluster, agent = proxied
    path = "/api/v1/nodes/far-1/proxy/metrics/cadvisor"
    assert get(cluster, path)[0] == 200  # a connection kept for the next scrape
    port = agent_port(cluster)
    assert agent.terminate() == 0
    refused = (
        f"error trying to reach service: dial tcp 127.0.0.1:{port}: connect: connection refused"
    )
    for _ in range(2):  # the kept connection found closed, then none to keep
        code, answer = status(cluster, path)
        assert (code, answer["reason"], answer["message"]) == (503, "ServiceUnavailable", refused)
    said = cluster.kubectl("get", "--raw", path)
    assert said.stderr == f"Error from server (ServiceUnavailable): {refused}\n"
