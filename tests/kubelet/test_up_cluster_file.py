"""`pinnace up --config FILE` as a user sees it through kubectl: the pools' nodes with their
labels, taints and allocatable; a bad file refused before anything starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: general
  count: 2
  capacity: {cpu: "4", memory: 16Gi}
- name: gpu
  capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
  labels: {accelerator: a100}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  images: [{names: ["nvcr.io/nvidia/cuda:12.4"], sizeBytes: 4000000000}]
  kubelet:
    kubeReserved: {cpu: 500m, memory: 1Gi}
    systemReserved: {cpu: 500m}
    evictionHard: {memory.available: 500Mi}
    maxPods: 64
- name: huge
  capacity: {cpu: "4", memory: 16Gi, hugepages-2Mi: 1Gi}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-up-config")
    (workdir / "cluster.yaml").write_text(CLUSTER_FILE)
    running = launch(workdir, flags=("--config", str(workdir / "cluster.yaml")))
    yield running
    stop(running)


def test_kubectl_shows_each_pools_nodes_and_labels(cluster: Cluster) -> None:
    lines = cluster.ok("get", "nodes", "-L", "pinnace.dev/node-pool,accelerator").splitlines()
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[5:]) for r in rows] == [
        ("general-1", "Ready", ["general"]),
        ("general-2", "Ready", ["general"]),
        ("gpu-1", "Ready", ["gpu", "a100"]),
        ("huge-1", "Ready", ["huge"]),
    ]


def test_the_gpu_pool_has_its_taint_capacity_and_reserved_allocatable(cluster: Cluster) -> None:
    node = json.loads(cluster.ok("get", "node", "gpu-1", "-o", "json"))
    assert node["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert node["status"]["capacity"] == {
        "cpu": "16",
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",  # as a v1.32 kubelet reports a machine's page sizes
        "hugepages-2Mi": "0",
        "memory": "64Gi",
        "nvidia.com/gpu": "4",
        "pods": "64",
    }
    # 64Gi - 1Gi kube-reserved - 500Mi hard eviction; 16 - 500m - 500m CPUs
    assert node["status"]["allocatable"] == {
        "cpu": "15",
        "ephemeral-storage": "100Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "64012Mi",
        "nvidia.com/gpu": "4",
        "pods": "64",
    }
    assert {"names": ["nvcr.io/nvidia/cuda:12.4"], "sizeBytes": 4000000000} in node["status"][
        "images"
    ]
    described = cluster.ok("describe", "node", "gpu-1")
    assert "Taints:             nvidia.com/gpu=present:NoSchedule" in described


HUGE_PAGES_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: %(name)s}
spec:
  containers:
  - name: app
    image: nginx
    resources:
      limits: {cpu: 100m, memory: 64Mi, hugepages-2Mi: %(pages)s}
"""


def test_a_pool_with_huge_pages_holds_the_pods_that_ask_for_them(cluster: Cluster) -> None:
    node = json.loads(cluster.ok("get", "node", "huge-1", "-o", "json"))
    capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
    assert (capacity["hugepages-2Mi"], capacity["hugepages-1Gi"]) == ("1Gi", "0")
    assert (allocatable["hugepages-2Mi"], allocatable["hugepages-1Gi"]) == ("1Gi", "0")
    assert allocatable["memory"] == "15260Mi"  # 16Gi - 100Mi hard eviction - 1Gi of pages
    cluster.ok("apply", "-f", "-", stdin=HUGE_PAGES_POD % {"name": "paged", "pages": "512Mi"})
    cluster.ok("apply", "-f", "-", stdin=HUGE_PAGES_POD % {"name": "greedy", "pages": "2Gi"})
    cluster.ok("wait", "--for=condition=Ready", "pod/paged", "--timeout=30s")
    assert cluster.ok("get", "pod", "paged", "-o", "jsonpath={.spec.nodeName}") == "huge-1"

    def refused() -> str:
        events = cluster.ok(
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=greedy,reason=FailedScheduling",
        )
        assert "Insufficient hugepages-2Mi" in events
        return events

    eventually(refused, timeout=20)
    # huge-1 and the general nodes without pages; gpu-1 is tainted
    assert "3 Insufficient hugepages-2Mi" in refused()


def test_a_deleted_node_lease_comes_back_at_the_next_renewal(cluster: Cluster) -> None:
    """As the garbage collector deletes it when its owner Node is gone: the kubelet's next
    renewal finds it NotFound and creates it again, owned by the Node there now."""
    uid = cluster.ok("get", "node", "general-2", "-o", "jsonpath={.metadata.uid}")
    cluster.ok("delete", "lease", "-n", "kube-node-lease", "general-2")

    def back() -> dict[str, Any]:
        lease = json.loads(
            cluster.ok("get", "lease", "-n", "kube-node-lease", "general-2", "-o", "json")
        )
        assert [o["uid"] for o in lease["metadata"]["ownerReferences"]] == [uid]
        return lease

    eventually(back, timeout=30)


ADOPTED = """\
apiVersion: v1
kind: Node
metadata:
  name: adopted-1
  labels: {pinnace.dev/simulated: "true", team: infra}
status:
  capacity: {cpu: "2", memory: 8Gi, pods: "20"}
"""


def test_a_node_applied_with_the_simulated_label_is_adopted(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=ADOPTED)

    def ready() -> list[str]:
        row = cluster.ok("get", "node", "adopted-1", "--no-headers").split()
        assert row[:2] == ["adopted-1", "Ready"]
        return row

    eventually(ready, timeout=20)
    node = json.loads(cluster.ok("get", "node", "adopted-1", "-o", "json"))
    assert node["metadata"]["labels"]["team"] == "infra"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "adopted-1"
    assert node["status"]["allocatable"]["cpu"] == "2"
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.0"


def test_a_bad_cluster_file_is_refused_naming_the_field_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "cluster.yaml"
    bad.write_text(CLUSTER_FILE.replace('cpu: "16"', "cpu: x"))
    assert main(["up", "--in-memory", "--port", "0", "--config", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f'pinnace up: --config: {bad}:8: nodePools[1].capacity.cpu: Invalid value: "x"'
    )
    assert "Traceback" not in err


def test_nodes_flags_and_a_cluster_file_do_not_mix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER_FILE)
    assert main(["up", "--in-memory", "--config", str(path), "--nodes", "3"]) == 1
    assert capsys.readouterr().err == (
        "pinnace up: --nodes cannot be used with --config: give the nodes in its nodePools\n"
    )
