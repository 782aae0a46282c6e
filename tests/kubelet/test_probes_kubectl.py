"""Probes and hooks through `pinnace up --nodes 1` and kubectl, in real time: the liveness
example of the Kubernetes documentation (with shorter times) restarts its container, and a pod
with a preStop hook goes through Terminating before it is gone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

WAIT = 30.0
"""Seconds to wait for what takes a few."""

LIVENESS = """
apiVersion: v1
kind: Pod
metadata:
  name: liveness-exec
  labels:
    test: liveness
spec:
  terminationGracePeriodSeconds: 2  # its sleep ignores SIGTERM: killed when this ends
  containers:
  - name: liveness
    image: registry.k8s.io/busybox:1.27.2
    args:
    - /bin/sh
    - -c
    - touch /tmp/healthy; sleep 2; rm -f /tmp/healthy; sleep 600
    livenessProbe:
      exec:
        command:
        - cat
        - /tmp/healthy
      initialDelaySeconds: 1
      periodSeconds: 1
      failureThreshold: 2
"""

PRE_STOP = """
apiVersion: v1
kind: Pod
metadata:
  name: drain
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: web
    image: nginx:1.27
    lifecycle:
      preStop:
        exec:
          command: ["sleep", "3"]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-probes"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_the_liveness_exec_example_restarts_its_container(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=LIVENESS)

    def restarted() -> bool:
        rows = cluster.ok("get", "pod", "liveness-exec", "--no-headers").split()
        return rows[2] == "Running" and int(rows[3]) >= 1

    eventually(restarted, timeout=WAIT)

    def described() -> bool:
        text = cluster.ok("describe", "pod", "liveness-exec")
        return "Container liveness failed liveness probe, will be restarted" in text

    eventually(described, timeout=WAIT)
    text = cluster.ok("describe", "pod", "liveness-exec")
    assert "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory" in (
        text
    )
    assert "Liveness:       exec [cat /tmp/healthy] delay=1s timeout=1s period=1s" in text


def test_a_pre_stop_hook_runs_while_the_pod_is_terminating(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=PRE_STOP)
    eventually(lambda: "Running" in cluster.ok("get", "pod", "drain", "--no-headers"), timeout=WAIT)
    cluster.ok("delete", "pod", "drain", "--wait=false")
    # The hook runs 3 s before the container is sent SIGTERM.
    assert "Terminating" in cluster.ok("get", "pod", "drain", "--no-headers")
    eventually(lambda: cluster.kubectl("get", "pod", "drain").returncode != 0, timeout=WAIT)
    gone = cluster.kubectl("get", "pod", "drain")
    assert 'pods "drain" not found' in gone.stderr
