"""A pod whose container keeps printing, through `pinnace up` and kubectl in real time: its node
keeps posting its status (Ready's lastHeartbeatTime advances) and the server logs no traceback,
as the eviction manager runs every 10 s beside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.clock import parse_time

# The node posts its status on every eviction tick (every 10 s), as a kubelet with
# nodeStatusReportFrequency 10s would, so a stalled status shows within seconds.
CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: worker
  kubelet:
    nodeStatusUpdateFrequency: 10s
    nodeStatusReportFrequency: 10s
"""
WAIT = 60.0
"""Seconds to wait for what takes a few eviction periods."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-up-logging")
    (workdir / "cluster.yaml").write_text(CLUSTER_FILE)
    running = launch(workdir, flags=("--config", str(workdir / "cluster.yaml")))
    yield running
    stop(running)


def test_a_pod_that_logs_leaves_its_node_reporting_and_no_traceback(cluster: Cluster) -> None:
    script = "while true; do date; sleep 5; done"
    cluster.ok("run", "logger", "--image=busybox", "--", "sh", "-c", script)
    cluster.ok("wait", "--for=condition=Ready", "pod/logger", "--timeout=30s")
    started = parse_time(cluster.ok("get", "pod", "logger", "-o", "jsonpath={.status.startTime}"))

    def heartbeat() -> float:
        ready = '{.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}'
        return parse_time(cluster.ok("get", "node", "worker-1", "-o", f"jsonpath={ready}"))

    # Two eviction passes at least have seen the pod by a status posted 20 s after it started.
    eventually(lambda: heartbeat() >= started + 20, timeout=WAIT, interval=1)
    assert " UTC " in cluster.ok("logs", "logger")  # busybox date lines
    assert "Traceback" not in (cluster.workdir / "server.log").read_text()
