"""Node-pressure eviction as a kubectl user sees it on `pinnace up --config`: under memory
pressure the pods are evicted one at a time, BestEffort first, then the Burstable pod using
more than it requests, the Guaranteed pod last; each ends Failed with reason Evicted and the
kubelet's message, and the node reports MemoryPressure."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

# 4Gi of memory; under pressure below 1Gi free, and evicting until 1Gi + 2Gi is free.
CLUSTER = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: small
  count: 1
  capacity: {cpu: "4", memory: 4Gi}
  kubelet:
    evictionHard: {memory.available: 1Gi}
    evictionMinimumReclaim: {memory.available: 2Gi}
"""

PODS = """
apiVersion: v1
kind: Pod
metadata:
  name: guaranteed
  annotations: {sim.pinnace.dev/memory: 1200Mi}
spec:
  nodeName: small-1
  containers:
  - name: app
    image: nginx
    resources:
      limits: {cpu: 100m, memory: 1536Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: burstable
  annotations: {sim.pinnace.dev/memory: 1Gi}
spec:
  nodeName: small-1
  containers:
  - name: app
    image: nginx
    resources:
      requests: {memory: 100Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: best-effort
  annotations: {sim.pinnace.dev/memory: 1Gi}
spec:
  nodeName: small-1
  containers:
  - {name: app, image: nginx}
"""

NAMES = ("guaranteed", "burstable", "best-effort")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-eviction")
    (workdir / "cluster.yaml").write_text(CLUSTER)
    running = launch(workdir, flags=("--config", "cluster.yaml"))
    running.ok("wait", "--for=condition=Ready", "node/small-1", "--timeout=30s")
    running.ok("apply", "-f", "-", stdin=PODS)
    pods = [f"pod/{name}" for name in NAMES]
    running.ok("wait", "--for=jsonpath={.status.phase}=Failed", *pods, "--timeout=45s")
    yield running
    stop(running)


def test_pods_are_evicted_in_the_kubelets_order(cluster: Cluster) -> None:
    pods = json.loads(cluster.ok("get", "pods", "-o", "json"))["items"]
    evicted_at = {
        p["metadata"]["name"]: next(
            c["lastTransitionTime"]
            for c in p["status"]["conditions"]
            if c["type"] == "DisruptionTarget"
        )
        for p in pods
    }
    # A second at least between two evictions: the next waits for the last to be cleaned up.
    assert sorted(evicted_at, key=evicted_at.__getitem__) == [
        "best-effort",
        "burstable",
        "guaranteed",
    ]
    assert {p["status"]["reason"] for p in pods} == {"Evicted"}


def test_the_evicted_pod_shows_the_kubelets_message(cluster: Cluster) -> None:
    message = cluster.ok("get", "pod", "burstable", "-o", "jsonpath={.status.message}")
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 1872Mi. "
        "Container app was using 1Gi, request is 100Mi, has larger consumption of memory. "
    )
    events = cluster.ok(
        "get", "events", "--field-selector", "reason=Evicted,involvedObject.name=burstable"
    )
    assert "Warning   Evicted   pod/burstable   The node was low on resource: memory." in events


def test_the_node_reports_memory_pressure(cluster: Cluster) -> None:
    described = cluster.ok("describe", "node", "small-1")
    assert re.search(r"\n  MemoryPressure +True ", described)
    assert re.search(
        r"KubeletHasInsufficientMemory +kubelet has insufficient memory available", described
    )
    assert "node.kubernetes.io/memory-pressure:NoSchedule" in described
