"""Scheduler races: many pods created at once against few small nodes. No node is ever
over-committed (the requests of the pods bound to it stay within its allocatable cpu, memory
and pod count) and no pod is bound twice (a watch from before the first create sees each pod's
nodeName set at most once, and each pod has at most one Scheduled event). Short: 40 pods on 3
nodes; long: 400 pods on 10."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from tests.faults.conftest import readyz_seconds, report, rss_mib, scale
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.api.core.event import occurrences
from pinnace.resources.quantity import Quantity

PODS = "/api/v1/namespaces/default/pods"
REQUESTS = {"cpu": "300m", "memory": "256Mi"}


def pod(index: int) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx:1.27", "resources": {"requests": REQUESTS}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"race-{index}", "labels": {"fault": "race"}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 0},
    }


class Bindings(threading.Thread):
    """Every nodeName each pod was seen with, from a watch opened before the first create."""

    def __init__(self, cluster: Cluster, since: str) -> None:
        super().__init__(daemon=True)
        self.url = f"{cluster.url}{PODS}?labelSelector=fault%3Drace&watch=1&resourceVersion={since}"
        self.nodes: dict[str, set[str]] = defaultdict(set)
        self.finished = threading.Event()

    def run(self) -> None:
        while not self.finished.is_set():
            try:
                self.watch()
            except requests.RequestException:
                return  # the server stopped

    def watch(self) -> None:
        with requests.get(self.url + "&timeoutSeconds=2", stream=True, timeout=10) as answer:
            for line in answer.iter_lines():
                if line:
                    self.take(json.loads(line)["object"])

    def take(self, obj: dict[str, Any]) -> None:
        node = obj.get("spec", {}).get("nodeName")
        if node:
            self.nodes[obj["metadata"]["name"]].add(node)
        self.url = self.url.rsplit("&resourceVersion=", 1)[0] + (
            "&resourceVersion=" + obj["metadata"]["resourceVersion"]
        )


def settled(cluster: Cluster, count: int) -> list[dict[str, Any]]:
    """The pods once each is bound or marked unschedulable."""
    items = requests.get(f"{cluster.url}{PODS}?labelSelector=fault%3Drace", timeout=10).json()
    pods = items["items"]
    assert len(pods) == count
    for item in pods:
        conditions = item["status"].get("conditions", [])
        scheduled = [c for c in conditions if c["type"] == "PodScheduled"]
        assert item["spec"].get("nodeName") or (
            scheduled and scheduled[0].get("reason") == "Unschedulable"
        ), item["metadata"]["name"]
    return pods


def over_committed(cluster: Cluster, pods: list[dict[str, Any]]) -> list[str]:
    nodes = requests.get(f"{cluster.url}/api/v1/nodes", timeout=10).json()["items"]
    every = requests.get(f"{cluster.url}/api/v1/pods", timeout=10).json()["items"]
    found = []
    for node in nodes:
        name, allocatable = node["metadata"]["name"], node["status"]["allocatable"]
        placed = [p for p in every if p["spec"].get("nodeName") == name]
        if len(placed) > int(allocatable["pods"]):
            found.append(f"{name}: {len(placed)} pods")
        for resource in ("cpu", "memory"):
            used = Quantity(0)
            for placed_pod in placed:
                for container in placed_pod["spec"]["containers"]:
                    asked = container.get("resources", {}).get("requests", {}).get(resource)
                    used = used + Quantity(asked or 0)
            if not used <= Quantity(allocatable[resource]):
                found.append(f"{name}: {resource} {used} > {allocatable[resource]}")
    return found


def scheduled_events(cluster: Cluster) -> dict[str, int]:
    events = requests.get(f"{cluster.url}/api/v1/namespaces/default/events", timeout=10).json()
    counts: dict[str, int] = defaultdict(int)
    for event in events["items"]:
        if event["reason"] == "Scheduled":
            counts[event["involvedObject"]["name"]] += occurrences(event)
    return counts


def test_concurrent_pods_never_over_commit_a_node_nor_bind_twice(tmp_path: Path) -> None:
    nodes, count = scale(3, 10), scale(40, 400)
    flags = ("--nodes", str(nodes), "--node-cpu", "2", "--node-memory", "4Gi")
    cluster = launch(tmp_path, flags=flags)
    try:
        since = requests.get(f"{cluster.url}{PODS}", timeout=10).json()["metadata"]
        bindings = Bindings(cluster, since["resourceVersion"])
        bindings.start()
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            answers = list(
                pool.map(
                    lambda i: requests.post(f"{cluster.url}{PODS}", json=pod(i), timeout=30),
                    range(count),
                )
            )
        assert [a.status_code for a in answers] == [201] * count
        pods = eventually(lambda: settled(cluster, count), timeout=scale(30, 120))
        seconds = time.monotonic() - started
        worst_readyz = readyz_seconds(cluster)
        bound = {
            p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")
        }
        eventually(lambda: all(name in bindings.nodes for name in bound))
        bindings.finished.set()
        twice = sorted(name for name, seen in bindings.nodes.items() if len(seen) > 1)
        events = scheduled_events(cluster)
        twice += sorted(name for name, n in events.items() if n > 1)
        overs = over_committed(cluster, pods)
        rss = rss_mib(cluster.process.pid)
    finally:
        stop(cluster)
    report(
        "scheduler-race",
        nodes=nodes,
        pods=count,
        bound=len(bound),
        settled_s=seconds,
        bound_twice=len(twice),
        over_committed=len(overs),
        worst_readyz_s=worst_readyz,
        rss_mib=rss,
    )
    assert twice == [] and overs == []
    assert bound, "no pod was bound at all"
