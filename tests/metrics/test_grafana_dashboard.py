"""examples/grafana/pinnace-cluster.json: an importable Grafana dashboard whose every query
names only metrics that `pinnace up` serves (Prometheus runs each query in
test_prometheus_scrape.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from pinnace.clock.virtual import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.store import MemoryStore

from .test_apiserver_metrics import call

DASHBOARD = Path(__file__).parents[2] / "examples" / "grafana" / "pinnace-cluster.json"
PREFIXES = ("apiserver_", "container_", "kube_", "kubelet_", "node_", "pod_", "scheduler_")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", ())]


def metric_names(expr: str) -> set[str]:
    tokens = re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", re.sub(r'"[^"]*"', "", expr))
    return {t for t in tokens if t.startswith(PREFIXES)}


def served() -> set[str]:
    async def scrape() -> list[bytes]:
        plane = ControlPlane(MemoryStore(), clock, ClusterOptions(nodes=node_configs(1)))
        await plane.start()
        app = plane.http_app()
        (node,) = plane.nodes.agents
        paths = ["/metrics", "/metrics/scheduler", "/metrics/cluster"] + [
            f"/api/v1/nodes/{node}/proxy/metrics{tail}" for tail in ("", "/cadvisor", "/resource")
        ]
        texts = [(await call(app, "GET", path))[1] for path in paths]
        await plane.stop()
        return texts

    with VirtualClock() as clock:
        texts = clock.run(scrape())
    names = set()
    for text in texts:
        for family in text_string_to_metric_families(text.decode()):
            names |= {family.name + s for s in SUFFIXES.get(family.type, ("",))}
    return names


def test_every_query_names_metrics_pinnace_serves() -> None:
    exprs = queries()
    assert len(exprs) >= 15
    used = set().union(*map(metric_names, exprs))
    assert used and not used - served()


def test_the_dashboard_imports_with_a_datasource_variable() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert {"datasource", "namespace", "pod"} <= variables
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"
