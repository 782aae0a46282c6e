"""`pinnace agent --node-addresses`: each node's kubelet at an address of its own, published in
its Node, so a scraper reaches each node's cAdvisor there as Prometheus reaches kubelets,
without the API server; the API server's node proxy and pods/log go through the same
addresses."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.http.conftest import Cluster, Process, launch, stop
from tests.http.test_component_processes import eventually, ready_nodes

NETWORK = "127.42.0.0/16"
PROXIED = 'resource="nodes",scope="resource",subresource="proxy",verb="CONNECT"'


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=20) as response:
        return str(response.read().decode())


def proxy_requests(cluster: Cluster) -> float:
    """The API server's count of node-proxy requests so far."""
    lines = get(cluster.url + "/metrics").splitlines()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in lines
        if line.startswith("apiserver_request_total{") and PROXIED in line
    )


def kubelet(cluster: Cluster, node: str) -> str:
    """The node's published kubelet: its Hostname address and daemonEndpoints port."""
    found = json.loads(cluster.ok("get", "node", node, "-o", "json"))["status"]
    host = next(a["address"] for a in found["addresses"] if a["type"] == "Hostname")
    return f"http://{host}:{found['daemonEndpoints']['kubeletEndpoint']['Port']}"


def pod_series(text: str, pod: str) -> list[str]:
    return [line for line in text.splitlines() if f'pod="{pod}"' in line]


def test_each_node_scraped_at_its_own_address_without_the_api_server(
    tmp_path: Path, processes: list[Process]
) -> None:
    cluster = launch(tmp_path, command="apiserver")
    try:
        agent = Process(tmp_path, "agent", "agent", "--kubeconfig", str(cluster.kubeconfig),
                        "--nodes", "2", "--port", "0", "--name-prefix", "far",
                        "--node-addresses", NETWORK)  # fmt: skip
        processes.append(agent)
        both = ["far-1", "far-2"]
        eventually("the agent's nodes are Ready", lambda: ready_nodes(cluster) == both)
        for pod, node in (("one", "far-1"), ("two", "far-2")):
            cluster.ok("run", pod, "--image=busybox", "--command",
                       f'--overrides={{"spec": {{"nodeName": "{node}"}}}}',
                       "--", "sh", "-c", f"echo {pod}; sleep 3600")  # fmt: skip
        cluster.ok("wait", "pod/one", "pod/two", "--for=condition=Ready", "--timeout=60s")

        one, two = kubelet(cluster, "far-1"), kubelet(cluster, "far-2")
        assert one.rsplit(":", 1)[0] == "http://127.42.0.1"
        assert two.rsplit(":", 1)[0] == "http://127.42.0.2"
        before = proxy_requests(cluster)
        first, second = get(one + "/metrics/cadvisor"), get(two + "/metrics/cadvisor")
        assert pod_series(first, "one") and not pod_series(first, "two")
        assert pod_series(second, "two") and not pod_series(second, "one")
        assert proxy_requests(cluster) == before  # the API server took no part

        # The API server reaches the nodes at the same addresses (with its Pinnace-Node header).
        proxied = cluster.ok("get", "--raw", "/api/v1/nodes/far-2/proxy/metrics/cadvisor")
        assert pod_series(proxied, "two") and not pod_series(proxied, "one")
        assert proxy_requests(cluster) == before + 1
        assert cluster.ok("logs", "one") == "one\n"
        assert cluster.ok("logs", "two") == "two\n"
    finally:
        stop(cluster)
