"""What the node agent writes lands through `pinnace up` on its SQLite store, where other writes
race it: a Guaranteed pod given exclusive CPUs by the static CPU manager runs with its cpuset
(its status write races the agent's own cpuset annotation), and an extended resource
advertised by patching a node's status.capacity becomes allocatable and schedulable."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: cpu
  capacity: {cpu: "4", memory: 8Gi}
  kubelet:
    kubeReserved: {cpu: 500m, memory: 1Gi}
    systemReserved: {cpu: 500m}
    cpuManagerPolicy: static
    nodeStatusUpdateFrequency: 2s   # the advertised resource reaches allocatable sooner
"""

GUARANTEED = """\
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {cpu: "2", memory: 100Mi}
      limits: {cpu: "2", memory: 100Mi}
"""

DONGLE_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: dongle-user}
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests: {example.com/dongle: "1"}
      limits: {example.com/dongle: "1"}
"""

WAIT = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-up-status")
    (workdir / "cluster.yaml").write_text(CLUSTER_FILE)
    running = launch(
        workdir,
        "--data-dir",
        str(workdir / "data"),
        flags=("--config", str(workdir / "cluster.yaml")),
    )
    yield running
    stop(running)


def test_a_guaranteed_pod_with_whole_cpus_runs_with_its_cpuset(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=GUARANTEED)
    cluster.ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/web", "--timeout=30s")
    cpuset = cluster.ok(
        "get", "pod", "web", "-o", r"jsonpath={.metadata.annotations.sim\.pinnace\.dev/cpuset}"
    )
    assert json.loads(cpuset) == {"app": "1-2"}
    shared = cluster.ok(
        "get",
        "node",
        "cpu-1",
        "-o",
        r"jsonpath={.metadata.annotations.sim\.pinnace\.dev/shared-cpuset}",
    )
    assert shared == "0,3"


def test_an_extended_resource_patched_into_capacity_is_allocatable_and_schedulable(
    cluster: Cluster,
) -> None:
    cluster.ok(
        "patch",
        "node",
        "cpu-1",
        "--subresource=status",
        "--type=json",
        "-p",
        '[{"op": "add", "path": "/status/capacity/example.com~1dongle", "value": "4"}]',
    )
    query = r"jsonpath={.status.allocatable.example\.com/dongle}"
    eventually(lambda: cluster.ok("get", "node", "cpu-1", "-o", query) == "4", timeout=WAIT)
    cluster.ok("apply", "-f", "-", stdin=DONGLE_POD)
    cluster.ok("wait", "--for=jsonpath={.status.phase}=Running", "pod/dongle-user", "--timeout=30s")
    assert cluster.ok("get", "pod", "dongle-user", "-o", "jsonpath={.spec.nodeName}") == "cpu-1"
