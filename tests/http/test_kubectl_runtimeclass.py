"""The Kubernetes documentation's pod overhead task (concepts/scheduling-eviction/pod-overhead)
with real kubectl against `pinnace up --nodes 1`: a RuntimeClass with a fixed overhead, a pod
of that class that gets the overhead and is scheduled and accounted with it, and a pod naming
a class that does not exist, refused as kube-apiserver v1.32 refuses it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

RUNTIME_CLASS = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: kata-fc
handler: kata-fc
overhead:
  podFixed:
    memory: "120Mi"
    cpu: "250m"
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  runtimeClassName: {runtime_class}
  containers:
  - name: busybox-ctr
    image: busybox:1.28
    stdin: true
    tty: true
    resources:
      limits:
        cpu: 500m
        memory: 100Mi
  - name: nginx-ctr
    image: nginx
    resources:
      limits:
        cpu: 500m
        memory: 100Mi
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-runtimeclass"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_pod_overhead_is_set_from_the_runtime_class_and_accounted(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=RUNTIME_CLASS) == (
        "runtimeclass.node.k8s.io/kata-fc created\n"
    )
    listed = cluster.ok("get", "runtimeclass").splitlines()
    assert listed[0].split() == ["NAME", "HANDLER", "AGE"]
    assert listed[1].split()[:2] == ["kata-fc", "kata-fc"]

    cluster.ok("apply", "-f", "-", stdin=POD.format(name="test-pod", runtime_class="kata-fc"))
    overhead = cluster.ok("get", "pod", "test-pod", "-o", "jsonpath={.spec.overhead}")
    assert overhead == '{"cpu":"250m","memory":"120Mi"}'

    cluster.ok("wait", "--for=condition=Ready", "pod/test-pod", "--timeout=30s")
    described = cluster.ok("describe", "node", "pinnace-node-1")
    row = next(line.split() for line in described.splitlines() if "test-pod" in line)
    # cpu requests and limits, memory requests and limits: containers plus overhead.
    assert row[2:10] == ["1250m", "(31%)", "1250m", "(31%)", "320Mi", "(1%)", "320Mi", "(1%)"]
    allocated = described.split("Allocated resources:")[1]
    assert re.search(r"\n\s+cpu\s+1250m \(31%\)\s+1250m \(31%\)\n", allocated)
    assert re.search(r"\n\s+memory\s+320Mi \(1%\)\s+320Mi \(1%\)\n", allocated)


def test_a_pod_naming_a_missing_runtime_class_is_refused(cluster: Cluster) -> None:
    refused = cluster.kubectl(
        "apply", "-f", "-", stdin=POD.format(name="other", runtime_class="kata-qemu")
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "other" is forbidden: '
        'pod rejected: RuntimeClass "kata-qemu" not found\n'
    )
    assert cluster.kubectl("get", "pod", "other").returncode == 1
