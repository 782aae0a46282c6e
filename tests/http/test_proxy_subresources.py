"""pods/proxy and services/proxy through `pinnace up`: kubectl's `get --raw` and plain HTTP
reach what listens in a pod (nginx's welcome page, another image's plain answer), directly or
through one of a Service's endpoints, with kube-apiserver v1.32's refusals."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

from pinnace.cli.main import main


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-pod-proxy"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_pods_proxy_relays_to_what_listens_in_the_pod(cluster: Cluster) -> None:
    cluster.ok("run", "web", "--image=nginx:1.27")
    cluster.ok("run", "box", "--image=busybox", "--port=8080", "--", "sleep", "1d")
    cluster.ok("wait", "--for=condition=Ready", "pod/web", "pod/box", "--timeout=30s")
    base = "/api/v1/namespaces/default/pods"

    # No port: the first one the containers declare, else http's 80.
    assert "<h1>Welcome to nginx!</h1>" in cluster.ok("get", "--raw", f"{base}/web/proxy/")
    assert cluster.ok("get", "--raw", f"{base}/box/proxy/healthz") == (
        "box (busybox) answers on port 8080\n"
    )
    missing = cluster.kubectl("get", "--raw", f"{base}/web/proxy/missing.html")
    assert missing.stderr == (
        "Error from server (NotFound): the server could not find the requested resource\n"
    )
    refused = cluster.kubectl("get", "--raw", f"{base}/web:8080/proxy/")
    ip = cluster.ok("get", "pod", "web", "-o", "jsonpath={.status.podIP}")
    assert refused.stderr == (
        "Error from server (ServiceUnavailable): error trying to reach service: "
        f"dial tcp {ip}:8080: connect: connection refused\n"
    )
    cluster.ok("run", "nowhere", "--image=nginx", "--overrides", '{"spec":{"nodeName":"none"}}')
    no_ip = cluster.kubectl("get", "--raw", f"{base}/nowhere/proxy/")
    assert no_ip.stderr == "Error from server (BadRequest): address not allowed\n"
    gone = cluster.kubectl("get", "--raw", f"{base}/gone/proxy/")
    assert gone.stderr == 'Error from server (NotFound): pods "gone" not found\n'

    # An empty path is redirected to "/", as UpgradeAwareHandler does.
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as moved:
        opener.open(f"{cluster.url}{base}/web/proxy?x=1")
    assert moved.value.code == 301
    assert moved.value.headers["Location"] == f"{base}/web/proxy/?x=1"

    # The pod's node down: its IP does not answer.
    kubeconfig = str(cluster.kubeconfig)
    assert main(["node", "stop", "pinnace-node-1", "--kubeconfig", kubeconfig]) == 0
    try:
        timed_out = cluster.kubectl("get", "--raw", f"{base}/web/proxy/")
    finally:
        assert main(["node", "start", "pinnace-node-1", "--kubeconfig", kubeconfig]) == 0
    assert timed_out.stderr == (
        "Error from server (ServiceUnavailable): error trying to reach service: "
        f"dial tcp {ip}:80: i/o timeout\n"
    )


def test_services_proxy_relays_to_a_ready_endpoint(cluster: Cluster) -> None:
    cluster.ok("create", "deployment", "site", "--image=nginx", "--replicas=2")
    cluster.ok("expose", "deployment", "site", "--port=8080", "--target-port=80")
    cluster.ok("create", "service", "clusterip", "idle", "--tcp=80:80")
    cluster.ok("rollout", "status", "deployment/site", "--timeout=60s")
    cluster.ok("wait", "--for=jsonpath={.subsets[0].addresses[1].ip}", "endpoints/site")
    base = "/api/v1/namespaces/default/services"

    # By the Service's name (its unnamed port), its port number, or scheme:name:port.
    for named in ("site", "site:8080", "http:site:8080"):
        answer = cluster.ok("get", "--raw", f"{base}/{named}/proxy/")
        assert "<h1>Welcome to nginx!</h1>" in answer

    def refusal(named: str) -> str:
        return cluster.kubectl("get", "--raw", f"{base}/{named}/proxy/").stderr

    assert refusal("site:9999") == (
        'Error from server (ServiceUnavailable): no service port 9999 found for service "site"\n'
    )
    assert refusal("idle") == (
        'Error from server (ServiceUnavailable): no endpoints available for service "idle"\n'
    )
    assert refusal("ftp:site:8080") == (
        'Error from server (BadRequest): invalid service request "ftp:site:8080"\n'
    )
    assert refusal("gone") == 'Error from server (NotFound): endpoints "gone" not found\n'
    resources = json.loads(cluster.ok("get", "--raw", "/api/v1"))["resources"]
    [listed] = [r for r in resources if r["name"] == "services/proxy"]
    assert listed["verbs"] == ["create", "delete", "get", "patch", "update"]
