"""A DaemonSet through `pinnace up --nodes 3` and kubectl, as a user runs one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

MANIFEST = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: fluentd:v1.17
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-daemonsets"), flags=("--nodes", "3"))
    yield running
    stop(running)


def pods_by_node(cluster: Cluster) -> list[tuple[str, str]]:
    listing = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={range .items[*]}{.spec.nodeName} {.metadata.name} {.status.phase}"
        " {.metadata.deletionTimestamp}{'\\n'}{end}",
    )
    rows = [line.split() for line in listing.splitlines()]
    return sorted((r[0], r[1]) for r in rows if len(r) == 3 and r[2] == "Running")


def test_kubectl_applies_rolls_out_and_restarts_a_daemon_set(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=MANIFEST).strip() == (
        "daemonset.apps/agent created"
    )
    status = cluster.ok("rollout", "status", "ds/agent", "--timeout=60s")
    assert status.strip().endswith('daemon set "agent" successfully rolled out')
    first = pods_by_node(cluster)
    assert [node for node, _ in first] == [f"pinnace-node-{i}" for i in (1, 2, 3)]

    header, row = cluster.ok("get", "ds").splitlines()
    assert header.split() == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE",
        "SELECTOR",
        "AGE",
    ]
    assert row.split()[:7] == ["agent", "3", "3", "3", "3", "3", "<none>"]

    restarted = cluster.ok("rollout", "restart", "ds/agent")
    assert restarted.strip() == "daemonset.apps/agent restarted"
    status = cluster.ok("rollout", "status", "ds/agent", "--timeout=60s")
    assert status.strip().endswith('daemon set "agent" successfully rolled out')
    second = pods_by_node(cluster)
    assert [node for node, _ in second] == [node for node, _ in first]
    assert not {name for _, name in first} & {name for _, name in second}
    generations = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={range .items[*]}{.metadata.labels.pod-template-generation}"
        " {.metadata.deletionTimestamp}{'\\n'}{end}",
    )
    rows = [line.split() for line in generations.splitlines()]
    assert [r for r in rows if len(r) == 1] == [["2"]] * 3  # old pods, if any, are terminating
