"""Sidecars (init containers with restartPolicy Always, beta and on in v1.32) through
`pinnace up --nodes 1` and kubectl, in real time: a sidecar failing its liveness probe is
restarted as an init container (computeInitContainerActions' words)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

WAIT = 30.0

LIVENESS = """
apiVersion: v1
kind: Pod
metadata:
  name: mesh
  annotations:
    sim.pinnace.dev/liveness-fails-after.proxy: "2s"
spec:
  initContainers:
  - name: proxy
    image: nginx:1.27
    restartPolicy: Always
    livenessProbe:
      tcpSocket:
        port: 80
      periodSeconds: 1
      failureThreshold: 1
  containers:
  - name: app
    image: nginx:1.27
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-sidecars"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_a_sidecar_failing_its_liveness_probe_is_restarted_as_an_init_container(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=LIVENESS)

    def killed() -> str:
        text = cluster.ok("describe", "pod", "mesh")
        return text if "Killing" in text else ""

    text = eventually(killed, timeout=WAIT)
    assert "Init container proxy failed liveness probe" in text
    assert "will be restarted" not in text
    assert "Liveness probe failed: dial tcp" in text

    def restarted() -> bool:
        statuses = cluster.ok(
            "get", "pod", "mesh", "-o", "jsonpath={.status.initContainerStatuses[0].restartCount}"
        )
        return int(statuses or 0) >= 1

    eventually(restarted, timeout=WAIT)
