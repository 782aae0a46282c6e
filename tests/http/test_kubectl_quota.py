"""The Kubernetes docs' task "Configure a Pod Quota for a Namespace" through `pinnace up` (its
default SQLite store, nodes running the pods) and kubectl, as a user follows it: a quota of
`pods: "2"`, then a Deployment of 3 replicas, ends with 2 pods, the quota showing 2/2 and the
ReplicaSet reporting the refused create. Several namespaces do it at once, so that pod writes
of one land while the creates of others are being admitted."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from tests.http.conftest import Cluster, launch, stop

QUOTA = """
apiVersion: v1
kind: ResourceQuota
metadata:
  name: pod-demo
spec:
  hard:
    pods: "2"
"""

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pod-quota-demo
spec:
  selector:
    matchLabels:
      purpose: quota-demo
  replicas: 3
  template:
    metadata:
      labels:
        purpose: quota-demo
    spec:
      containers:
      - name: pod-quota-demo
        image: nginx
"""

NAMESPACES = [f"quota-pod-example-{i}" for i in range(8)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-quota")
    running = launch(workdir, "--data-dir", str(workdir / "data"), flags=("--nodes", "2"))
    yield running
    stop(running)


def follow_the_task(cluster: Cluster, namespace: str) -> None:
    cluster.ok("create", "namespace", namespace)
    cluster.ok("apply", "-n", namespace, "-f", "-", stdin=QUOTA)
    cluster.ok("apply", "-n", namespace, "-f", "-", stdin=DEPLOYMENT)


def refused_creates(cluster: Cluster, namespace: str) -> list[str]:
    listed = cluster.ok("get", "events", "-n", namespace, "-o", "json")
    return [
        e["message"]
        for e in json.loads(listed)["items"]
        if e["reason"] == "FailedCreate" and e["involvedObject"]["kind"] == "ReplicaSet"
    ]


def wait_for_refusal(cluster: Cluster, namespace: str, timeout: float = 45.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while not (found := refused_creates(cluster, namespace)):
        assert time.monotonic() < deadline, f"the ReplicaSet in {namespace} was never refused"
        time.sleep(0.2)
    return found


def test_a_pod_quota_of_two_keeps_a_deployment_of_three_at_two_pods(cluster: Cluster) -> None:
    with ThreadPoolExecutor(len(NAMESPACES)) as pool:
        list(pool.map(lambda ns: follow_the_task(cluster, ns), NAMESPACES))

    for namespace in NAMESPACES:
        refusal = wait_for_refusal(cluster, namespace)[0]
        assert refusal.startswith('Error creating: pods "pod-quota-demo-')
        assert refusal.endswith(
            "is forbidden: exceeded quota: pod-demo, requested: pods=1, used: pods=2, "
            "limited: pods=2"
        )
        pods = cluster.ok("get", "pods", "-n", namespace, "--no-headers").splitlines()
        assert len(pods) == 2
        quota = json.loads(cluster.ok("get", "quota", "pod-demo", "-n", namespace, "-o", "json"))
        assert quota["status"]["used"] == {"pods": "2"}
        assert cluster.ok("get", "quota", "-n", namespace, "--no-headers").split()[1:3] == [
            "pods:",
            "2/2",
        ]
