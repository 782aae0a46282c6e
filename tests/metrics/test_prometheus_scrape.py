"""Debian's Prometheus server scrapes `pinnace up` as it scrapes a cluster: each kubelet's
cAdvisor reached through the API server's node proxy; PromQL then gives the CPU the pods'
behaviour annotations say, and shows throttling for the pod over its CPU limit."""

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
from tests.http.conftest import launch, stop
from tests.metrics.test_grafana_dashboard import queries

DEADLINE_SECONDS = 120.0

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
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prometheus_config(api_server: str, nodes: list[str], targets: Path) -> dict[str, Any]:
    """Each node's cAdvisor through the node proxy, as the usual `role: node` relabelling sets
    it up. Debian's Prometheus is built without `kubernetes_sd_configs` (its Kubernetes
    discovery is left out for want of client-go in Debian), so the nodes come from a file_sd
    file listing what `kubectl get nodes` lists."""
    host = urllib.parse.urlsplit(api_server).netloc
    groups = [
        {"targets": [host],
         "labels": {"__metrics_path__": f"/api/v1/nodes/{node}/proxy/metrics/cadvisor",
                    "node": node}}
        for node in nodes
    ]  # fmt: skip
    targets.write_text(json.dumps(groups))
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "kubernetes-cadvisor",
                "file_sd_configs": [{"files": [str(targets)], "refresh_interval": "1s"}],
            },
            {
                "job_name": "scheduler",
                "metrics_path": "/metrics/scheduler",
                "static_configs": [{"targets": [host]}],
            },
            {"job_name": "apiserver", "static_configs": [{"targets": [host]}]},
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
    cluster = launch(tmp_path, flags=("--nodes", "2"))
    prometheus = None
    try:
        cluster.ok("apply", "-f", "-", stdin=PODS)
        cluster.ok("wait", "--for=condition=Ready", "pod/steady", "pod/hungry", "--timeout=60s")
        config = tmp_path / "prometheus.yml"
        nodes = cluster.ok("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}").split()
        targets = tmp_path / "nodes.json"
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
        steady = 'sum(rate(container_cpu_usage_seconds_total{pod="steady"}[1m]))'
        hungry = 'sum(rate(container_cpu_usage_seconds_total{pod="hungry"}[1m]))'
        throttled = 'sum(rate(container_cpu_cfs_throttled_periods_total{pod="hungry"}[1m]))'
        # rate() divides by the whole window: wait until a minute of samples fills it. The
        # samples carry the time of cAdvisor's reading, one each housekeeping interval (10 s),
        # so the 1 s scrapes store six of them a minute.
        filled = 'count_over_time(container_cpu_usage_seconds_total{pod="steady"}[1m]) >= 6'
        found: dict[str, float | None] = {}
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            try:
                found = {q: query(base, q) for q in (filled, steady, hungry, throttled)}
            except OSError:  # not listening yet
                found = {}
            if all(v is not None for v in found.values()) and len(found) == 4:
                break
            time.sleep(1)
        assert found.get(steady) is not None, (tmp_path / "prometheus.log").read_text()[-3000:]
        assert abs(found[steady] - 0.3) < 0.03  # type: ignore[operator]
        assert abs(found[hungry] - 0.2) < 0.02  # type: ignore[operator]  # its limit
        assert found[throttled] is not None and found[throttled] > 5  # 10 periods a second
        targets = api(base, "/api/v1/targets", state="any")
        nodes = [t for t in targets["activeTargets"] if t["labels"]["job"] == "kubernetes-cadvisor"]
        assert len(nodes) == 2 and all(t["health"] == "up" for t in nodes)
        # kube-scheduler's framework durations, scraped as a scheduler job scrapes them: the
        # two pods' Bind runs, and the plugins of the first (sampled) cycle.
        bind = (
            "sum(scheduler_framework_extension_point_duration_seconds_count"
            '{extension_point="Bind"})'
        )
        assert query(base, bind) == 2
        sampled = (
            'sum(scheduler_plugin_execution_duration_seconds_count{plugin="NodeResourcesFit"})'
        )
        assert (query(base, sampled) or 0) >= 1
        # kube-apiserver counts the node-proxy scrapes as its RequestInfo names them: one
        # series (per code) for every node and path, not a series each.
        proxied = 'apiserver_request_total{verb="CONNECT",resource="nodes",subresource="proxy"}'
        assert (query(base, f"sum({proxied})") or 0) > 0
        assert query(base, 'count(apiserver_request_total{subresource=~".*proxy/.*"})') is None
        grafana = {"$__rate_interval": "1m", "$namespace": ".*", "$pod": ".*"}
        for promql in queries():  # the Grafana dashboard's: Prometheus answers 400 if one is bad
            for variable, value in grafana.items():
                promql = promql.replace(variable, value)
            assert api(base, "/api/v1/query", query=promql)["resultType"] == "vector"
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=20)
        stop(cluster)
