"""Readiness gates through `pinnace up` with real kubectl: a running pod stays unready, with
the kubelet's ReadinessGatesNotReady reason, until its gate's condition is set True through the
status subresource (as a load balancer controller sets it)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  readinessGates:
  - conditionType: example.com/load-balancer
  containers:
  - {name: app, image: nginx}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-readiness-gates"), flags=("--nodes", "1"))
    yield running
    stop(running)


def _ready(cluster: Cluster) -> dict[str, str]:
    pod = json.loads(cluster.ok("get", "pod/gated", "-o", "json"))
    return next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")


def test_a_pod_is_ready_only_once_its_gate_is_true(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=POD)
    cluster.ok("wait", "--for=condition=ContainersReady", "pod/gated", "--timeout=30s")
    ready = _ready(cluster)
    assert ready["status"] == "False"
    assert ready["reason"] == "ReadinessGatesNotReady"
    assert ready["message"] == (
        'corresponding condition of pod readiness gate "example.com/load-balancer" does not exist.'
    )
    gate = {"type": "example.com/load-balancer", "status": "True"}
    cluster.ok(
        "patch",
        "pod/gated",
        "--subresource=status",
        "-p",
        json.dumps({"status": {"conditions": [gate]}}),
    )
    cluster.ok("wait", "--for=condition=Ready", "pod/gated", "--timeout=30s")
    assert cluster.ok("get", "pod/gated", "-o", "wide").splitlines()[1].split()[-1] == "1/1"
