"""A node fails and returns (`pinnace node stop|partition|start NAME`, docs/nodes.md): after
the node monitor grace period its Ready condition turns Unknown and it gets the unreachable
taint; once started it is Ready again and the taint goes. Short kubelet and node-lifecycle
timers keep a round to seconds. Short: one stop; long: five stops and five partitions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests
from tests.faults.conftest import LONG, readyz_seconds, report, rss_mib, scale
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: fast
  count: 2
  kubelet: {nodeLeaseDurationSeconds: 4, nodeStatusUpdateFrequency: 1s}
"""
NODE = "fast-1"
UNREACHABLE = "node.kubernetes.io/unreachable"


def node(cluster: Cluster) -> dict[str, Any]:
    answer = requests.get(f"{cluster.url}/api/v1/nodes/{NODE}", timeout=10)
    answer.raise_for_status()
    return answer.json()


def ready(cluster: Cluster) -> str:
    conditions = node(cluster)["status"]["conditions"]
    return next(c["status"] for c in conditions if c["type"] == "Ready")


def taints(cluster: Cluster) -> set[str]:
    return {taint["key"] for taint in node(cluster)["spec"].get("taints", [])}


def fail_and_return(cluster: Cluster, fault: str) -> tuple[float, float]:
    """Seconds until the failed node is Unknown and tainted, then until it is Ready again."""
    started = time.monotonic()
    assert main(["node", fault, NODE, "--server", cluster.url]) == 0
    eventually(lambda: ready(cluster) == "Unknown" and UNREACHABLE in taints(cluster))
    failed = time.monotonic() - started
    assert main(["node", "start", NODE, "--server", cluster.url]) == 0
    eventually(lambda: ready(cluster) == "True" and UNREACHABLE not in taints(cluster))
    return failed, time.monotonic() - started - failed


def test_a_failed_node_turns_unknown_and_tainted_and_returns(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(CLUSTER_FILE)
    flags = ("--config", "cluster.yaml", "--node-monitor-grace-period", "4s")
    cluster = launch(tmp_path, flags=(*flags, "--node-monitor-period", "1s"))
    rounds = scale(1, 5)
    to_unknown: list[float] = []
    to_ready: list[float] = []
    worst_readyz = 0.0
    try:
        eventually(lambda: ready(cluster) == "True")
        for _ in range(rounds):
            for fault in ("stop", "partition") if LONG else ("stop",):
                failed, back = fail_and_return(cluster, fault)
                to_unknown.append(failed)
                to_ready.append(back)
                worst_readyz = max(worst_readyz, readyz_seconds(cluster))
        rss = rss_mib(cluster.process.pid)
    finally:
        stop(cluster)
    report(
        "node-failure",
        rounds=rounds,
        faults=len(to_unknown),
        worst_to_unknown_s=max(to_unknown),
        worst_to_ready_s=max(to_ready),
        worst_readyz_s=worst_readyz,
        rss_mib=rss,
    )
