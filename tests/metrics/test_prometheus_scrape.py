"""Debian's Prometheus server scrapes `pinnace up` as it scrapes a cluster: the cAdvisor of
each node the API server runs reached through its node proxy, and of each node of a `pinnace
agent --node-addresses` at the node's own kubelet address, as Prometheus scrapes kubelets;
PromQL then gives the CPU the pods' behaviour annotations say, and shows throttling for the
pod over its CPU limit."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from scripts.measure_scrape import node_role
from tests.http.conftest import Process, launch, stop
from tests.http.test_component_processes import eventually, items, ready_nodes
from tests.metrics.test_grafana_dashboard import queries

DEADLINE_SECONDS = 150.0

PODS = """
apiVersion: v1
kind: Pod
metadata:
  name: steady
  annotations: {sim.pinnace.dev/cpu: 300m}
spec:
  containers:
  - {name: main, image: busybox, command: [sleep, infinity], resources: {requests: {cpu: 500m}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: hungry
  annotations: {sim.pinnace.dev/cpu: 800m}
spec:
  containers:
  - {name: main, image: busybox, command: [sleep, infinity], resources: {limits: {cpu: 200m}}}
---
apiVersion: v1
kind: Pod
metadata:
  name: crashy
  annotations: {sim.pinnace.dev/run-seconds: "5", sim.pinnace.dev/exit-code: "1"}
spec:
  containers:
  - {name: main, image: busybox, command: [sleep, infinity]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {sim.pinnace.dev/cpu: 50m}
    spec:
      containers:
      - {name: main, image: nginx, resources: {requests: {cpu: 100m, memory: 64Mi}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 2
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
"""
HOUSEKEEPING = ("--housekeeping-interval", "1s")
"""The nodes' container stats read every second (the kubelet's --housekeeping-interval; 10 s by
default), so each 1 s scrape stores a sample of its own and a short rate window fills in
seconds rather than a minute."""
WINDOW = "20s"
"""The rate window: twenty samples of each container, 1 s apart. rate() extrapolates to the
window's edges only when its first and last samples lie near them; on a busy machine the
readings come late and the rate comes out low by up to a sample's share of the window, which
a 10 s window made 10 %, all of the checks' tolerance."""
GRAFANA_VARIABLES = {"$__rate_interval": WINDOW, "$namespace": ".*", "$pod": ".*"}
"""What Grafana puts in the dashboard's variables; its $__rate_interval is at least four
scrape intervals (4 s here)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


AGENT = ("--nodes", "1", "--name-prefix", "far", "--first-index", "3", "--port", "0",
         "--node-addresses", "127.43.0.0/16", *HOUSEKEEPING)  # fmt: skip
FAR = """
apiVersion: v1
kind: Pod
metadata:
  name: far
  annotations: {sim.pinnace.dev/cpu: 250m}
spec:
  nodeName: far-1
  containers:
  - {name: main, image: busybox, command: [sleep, infinity]}
"""


def prometheus_config(
    api_server: str, nodes: list[dict[str, Any]], targets: Path
) -> dict[str, Any]:
    """docs/monitoring.md's configuration: each node's cAdvisor through the node proxy, or for
    an agent's nodes at their own addresses, by the `role: node` relabelling there. Debian's
    Prometheus is built without `kubernetes_sd_configs` (its Kubernetes discovery is left out
    for want of client-go in Debian), so the nodes come from a file_sd file listing the
    targets that discovery would find."""
    host = urllib.parse.urlsplit(api_server).netloc
    targets.write_text(json.dumps([node_role(node) for node in nodes]))
    discovery = [{"files": [str(targets)], "refresh_interval": "1s"}]
    agent = "__meta_kubernetes_node_label_pinnace_dev_agent"
    node = {"source_labels": ["__meta_kubernetes_node_name"], "target_label": "node"}
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "kubernetes-cadvisor",
                "file_sd_configs": discovery,
                "relabel_configs": [
                    {"source_labels": [agent], "regex": "", "action": "keep"},
                    {"target_label": "__address__", "replacement": host},
                    {
                        "source_labels": ["__meta_kubernetes_node_name"],
                        "target_label": "__metrics_path__",
                        "replacement": "/api/v1/nodes/${1}/proxy/metrics/cadvisor",
                    },
                    node,
                ],
            },
            {
                "job_name": "kubelet-cadvisor",
                "metrics_path": "/metrics/cadvisor",
                "file_sd_configs": discovery,
                "relabel_configs": [
                    {"source_labels": [agent], "regex": ".+", "action": "keep"},
                    {
                        "source_labels": ["__meta_kubernetes_node_address_Hostname", "__address__"],
                        "regex": r"(.+);.*:(\d+)",
                        "target_label": "__address__",
                        "replacement": "${1}:${2}",
                    },
                    node,
                ],
            },
            {
                "job_name": "scheduler",
                "metrics_path": "/metrics/scheduler",
                "static_configs": [{"targets": [host]}],
            },
            {"job_name": "apiserver", "static_configs": [{"targets": [host]}]},
            {
                "job_name": "kube-state-metrics",
                "metrics_path": "/metrics/cluster",
                "static_configs": [{"targets": [host]}],
            },
        ],
    }


def api(base: str, path: str, **query: str) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)["data"]


def query(base: str, promql: str) -> float | None:
    result = api(base, "/api/v1/query", query=promql)["result"]
    return float(result[0]["value"][1]) if result else None


def test_prometheus_sees_the_usage_the_behaviour_gives(tmp_path: Path) -> None:
    binary = shutil.which("prometheus")
    assert binary is not None, "prometheus is missing: sh scripts/install-system-packages.sh"
    cluster = launch(tmp_path, flags=("--nodes", "2", *HOUSEKEEPING))
    prometheus = agent = None
    try:
        kubeconfig = str(cluster.kubeconfig)
        agent = Process(tmp_path, "agent", "agent", "--kubeconfig", kubeconfig, *AGENT)
        eventually("the agent's node is Ready", lambda: "far-1" in ready_nodes(cluster))
        cluster.ok("apply", "-f", "-", stdin=PODS + "---" + FAR)
        pods = ("pod/steady", "pod/hungry", "pod/far")
        cluster.ok("wait", "--for=condition=Ready", *pods, "--timeout=60s")
        cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
        config = tmp_path / "prometheus.yml"
        targets = tmp_path / "nodes.json"
        nodes = items(cluster, "nodes")
        config.write_text(yaml.safe_dump(prometheus_config(cluster.url, nodes, targets)))
        port = free_port()
        log = open(tmp_path / "prometheus.log", "w")  # noqa: SIM115
        prometheus = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        base = f"http://127.0.0.1:{port}"
        steady = f'sum(rate(container_cpu_usage_seconds_total{{pod="steady"}}[{WINDOW}]))'
        hungry = f'sum(rate(container_cpu_usage_seconds_total{{pod="hungry"}}[{WINDOW}]))'
        throttled = (
            f'sum(rate(container_cpu_cfs_throttled_periods_total{{pod="hungry"}}[{WINDOW}]))'
        )
        # rate() divides by the whole window: wait until samples fill it, the first of them
        # older than it. The samples carry the time of cAdvisor's reading, one each housekeeping
        # interval (1 s here), so the 1 s scrapes store one a second.
        filled = f'count_over_time(container_cpu_usage_seconds_total{{pod="steady"}}[{WINDOW}] offset {WINDOW})'  # noqa: E501
        # the agent's node, scraped at its own kubelet address
        far = f'sum(rate(container_cpu_usage_seconds_total{{pod="far",job="kubelet-cadvisor",node="far-1"}}[{WINDOW}]))'  # noqa: E501
        far_filled = f'count_over_time(container_cpu_usage_seconds_total{{pod="far"}}[{WINDOW}] offset {WINDOW})'  # noqa: E501
        # the Grafana dashboard's queries, as it runs them over the whole cluster
        panels = []
        for promql in queries():
            for variable, value in GRAFANA_VARIABLES.items():
                promql = promql.replace(variable, value)
            panels.append(promql)
        wanted = (filled, far_filled, steady, hungry, throttled, far, *panels)
        found: dict[str, float | None] = {}
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            try:
                found = {q: query(base, q) for q in wanted}
            except OSError:  # not listening yet
                found = {}
            if all(v is not None for v in found.values()) and len(found) == len(wanted):
                break
            time.sleep(1)
        assert found.get(steady) is not None, (tmp_path / "prometheus.log").read_text()[-3000:]
        assert abs(found[steady] - 0.3) < 0.03  # type: ignore[operator]
        assert abs(found[hungry] - 0.2) < 0.02  # type: ignore[operator]  # its limit
        assert found[throttled] is not None and found[throttled] > 5  # 10 periods a second
        assert found.get(far) is not None, (tmp_path / "prometheus.log").read_text()[-3000:]
        raw = api(
            base, "/api/v1/query", query=f'container_cpu_usage_seconds_total{{pod="far"}}[{WINDOW}]'
        )
        assert abs(found[far] - 0.25) < 0.025, raw  # type: ignore[operator]
        assert (
            query(base, 'count(container_cpu_usage_seconds_total{pod="far",node!="far-1"})') is None
        )
        active = api(base, "/api/v1/targets", state="any")["activeTargets"]
        via_proxy = [t for t in active if t["labels"]["job"] == "kubernetes-cadvisor"]
        own = ["pinnace-node-1", "pinnace-node-2"]
        assert sorted(t["labels"]["node"] for t in via_proxy) == own
        assert all(t["health"] == "up" for t in via_proxy)
        direct = [t for t in active if t["labels"]["job"] == "kubelet-cadvisor"]
        assert [(t["labels"]["node"], t["health"]) for t in direct] == [("far-1", "up")]
        assert direct[0]["scrapeUrl"].startswith("http://127.43.0.3:")
        # kube-scheduler's framework durations, scraped as a scheduler job scrapes them: the
        # four scheduled pods' Bind runs (far names its node), and the plugins of the first
        # (sampled) cycle.
        bind = (
            "sum(scheduler_framework_extension_point_duration_seconds_count"
            '{extension_point="Bind"})'
        )
        assert query(base, bind) == 4
        sampled = (
            'sum(scheduler_plugin_execution_duration_seconds_count{plugin="NodeResourcesFit"})'
        )
        assert (query(base, sampled) or 0) >= 1
        # kube-apiserver counts the node-proxy scrapes as its RequestInfo names them: one
        # series (per code) for every node and path, not a series each.
        proxied = 'apiserver_request_total{verb="CONNECT",resource="nodes",subresource="proxy"}'
        assert (query(base, f"sum({proxied})") or 0) > 0
        assert query(base, 'count(apiserver_request_total{subresource=~".*proxy/.*"})') is None
        # Every panel of the Grafana dashboard has data: the cluster's figures from
        # kube-state-metrics, crashy's restarts, the scheduler's and the API server's.
        empty = [promql for promql in panels if found.get(promql) is None]
        assert not empty, empty
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=20)
        if agent is not None:
            assert agent.terminate() == 0
        stop(cluster)


TOKENS = 'admin-token,admin,1,"system:masters"\nprometheus-token,prometheus,2\neve-token,eve,3\n'
SCRAPER_RBAC = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: prometheus}
rules:
- {apiGroups: [""], resources: [nodes, nodes/proxy, nodes/metrics], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: prometheus}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: prometheus}
"""


def standard_cadvisor_job(name: str, api_server: str, token: Path, targets: Path) -> dict[str, Any]:
    """Prometheus' own example configuration for Kubernetes (prometheus-kubernetes.yml, job
    `kubernetes-cadvisor`): every node through the API server's node proxy over HTTPS with a
    bearer token; the nodes from a file_sd file, as `role: node` would find them."""
    return {
        "job_name": name,
        "scheme": "https",
        "authorization": {"credentials_file": str(token)},
        "tls_config": {"insecure_skip_verify": True},
        "file_sd_configs": [{"files": [str(targets)], "refresh_interval": "1s"}],
        "relabel_configs": [
            {"action": "labelmap", "regex": "__meta_kubernetes_node_label_(.+)"},
            {
                "target_label": "__address__",
                "replacement": urllib.parse.urlsplit(api_server).netloc,
            },
            {
                "source_labels": ["__meta_kubernetes_node_name"],
                "regex": "(.+)",
                "target_label": "__metrics_path__",
                "replacement": "/api/v1/nodes/${1}/proxy/metrics/cadvisor",
            },
        ],
    }


def test_prometheus_scrapes_through_the_node_proxy_with_a_bearer_token(tmp_path: Path) -> None:
    """The standard configuration's scrape of every node's cAdvisor through `pinnace up --tls`:
    with a token RBAC allows nodes/proxy every target is up and its series come; with one it
    does not, the targets are down with kube-apiserver's 403."""
    binary = shutil.which("prometheus")
    assert binary is not None, "prometheus is missing: sh scripts/install-system-packages.sh"
    (tmp_path / "tokens.csv").write_text(TOKENS)
    flags = ("--tls", "--token-auth-file", "tokens.csv", "--nodes", "2", "--no-scheduler")
    cluster = launch(tmp_path, flags=flags)
    prometheus = None
    try:
        cluster.ok("apply", "-f", "-", stdin=SCRAPER_RBAC)
        targets = tmp_path / "nodes.json"
        targets.write_text(json.dumps([node_role(node) for node in items(cluster, "nodes")]))
        jobs = []
        for job, token in (("kubernetes-cadvisor", "prometheus-token"), ("denied", "eve-token")):
            (tmp_path / job).write_text(token)
            jobs.append(standard_cadvisor_job(job, cluster.url, tmp_path / job, targets))
        config = tmp_path / "prometheus.yml"
        config.write_text(
            yaml.safe_dump({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs})
        )
        port = free_port()
        prometheus = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"

        def scraped() -> list[dict[str, Any]] | None:
            try:
                active = api(base, "/api/v1/targets", state="active")["activeTargets"]
            except OSError:  # not listening yet
                return None
            done = len(active) == 4 and all(t["health"] != "unknown" for t in active)
            return active if done else None

        deadline = time.monotonic() + 60
        while (active := scraped()) is None:
            assert time.monotonic() < deadline, "Prometheus scraped no target in a minute"
            time.sleep(0.5)
        health = {(t["labels"]["job"], t["labels"]["instance"]): t for t in active}
        for node in ("pinnace-node-1", "pinnace-node-2"):
            allowed = health["kubernetes-cadvisor", node]
            assert allowed["health"] == "up", allowed["lastError"]
            assert allowed["scrapeUrl"] == (
                f"{cluster.url}/api/v1/nodes/{node}/proxy/metrics/cadvisor"
            )
            denied = health["denied", node]
            assert denied["health"] == "down"
            assert denied["lastError"] == "server returned HTTP status 403 Forbidden"
        assert query(base, 'count(up{job="kubernetes-cadvisor"} == 1)') == 2
        assert query(base, 'count(up{job="denied"} == 0)') == 2
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=20)
        stop(cluster)
