"""ResourceQuota, LimitRange and PriorityClass admission through `pinnace up`, as kubectl shows
it: storage quotas and LimitRanges on PersistentVolumeClaims, a Service's update charged to
its quota, the system priority classes kept from deletion; each message as kube-apiserver
v1.32 words it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-quota-limits"))
    yield running
    stop(running)


def claim(name: str, storage: str, storage_class: str = "") -> str:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": storage}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": spec,
        }
    )


def used(cluster: Cluster, namespace: str, name: str) -> dict[str, str]:
    quota = json.loads(cluster.ok("get", "quota", name, "-n", namespace, "-o", "json"))
    return dict(quota["status"].get("used", {}))


def test_a_quota_on_storage_alone_counts_claims(cluster: Cluster) -> None:
    """Before, a quota without `persistentvolumeclaims` among its resources never had its
    storage usage measured, and refused every claim with "status unknown for quota"."""
    cluster.ok("create", "namespace", "storage-only")
    cluster.ok(
        "create",
        "quota",
        "storage",
        "-n",
        "storage-only",
        "--hard=requests.storage=5Gi,gold.storageclass.storage.k8s.io/requests.storage=1Gi",
    )
    cluster.ok("apply", "-n", "storage-only", "-f", "-", stdin=claim("plain", "3Gi"))
    cluster.ok("apply", "-n", "storage-only", "-f", "-", stdin=claim("gold", "1Gi", "gold"))
    assert used(cluster, "storage-only", "storage") == {
        "requests.storage": "4Gi",
        "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
    }
    refused = cluster.kubectl("apply", "-n", "storage-only", "-f", "-", stdin=claim("big", "2Gi"))
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        'persistentvolumeclaims "big" is forbidden: exceeded quota: storage, requested: '
        "requests.storage=2Gi, used: requests.storage=4Gi, limited: requests.storage=5Gi"
    )


LIMIT_RANGE = """
apiVersion: v1
kind: LimitRange
metadata: {name: storage}
spec:
  limits:
  - type: PersistentVolumeClaim
    min: {storage: 1Gi}
    max: {storage: 3Gi}
"""


def test_a_limit_range_bounds_a_claims_storage_request(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "claim-limits")
    cluster.ok("apply", "-n", "claim-limits", "-f", "-", stdin=LIMIT_RANGE)
    for name, storage, why in [
        (
            "big",
            "6Gi",
            "maximum storage usage per PersistentVolumeClaim is 3Gi, but request is 6Gi",
        ),
        (
            "small",
            "100Mi",
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi",
        ),
    ]:
        refused = cluster.kubectl(
            "apply", "-n", "claim-limits", "-f", "-", stdin=claim(name, storage)
        )
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith(
            f'persistentvolumeclaims "{name}" is forbidden: {why}'
        )
    cluster.ok("apply", "-n", "claim-limits", "-f", "-", stdin=claim("fits", "2Gi"))
    names = cluster.ok("get", "pvc", "-n", "claim-limits", "-o", "name").split()
    assert names == ["persistentvolumeclaim/fits"]


def test_a_service_turned_node_port_is_charged_to_its_quota(cluster: Cluster) -> None:
    """v1.32's service evaluator handles updates, as a Service's type can change: before, the
    patch was stored and the quota left over its limit."""
    cluster.ok("create", "namespace", "service-quota")
    cluster.ok(
        "create",
        "quota",
        "ports",
        "-n",
        "service-quota",
        "--hard=services.nodeports=1,services.loadbalancers=0",
    )
    cluster.ok("create", "service", "clusterip", "web", "-n", "service-quota", "--tcp=80,443")
    refused = cluster.kubectl(
        "patch", "service", "web", "-n", "service-quota", "-p", '{"spec":{"type":"NodePort"}}'
    )
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): services "web" is forbidden: exceeded quota: ports, '
        "requested: services.nodeports=2, used: services.nodeports=0, limited: "
        "services.nodeports=1"
    )
    service = json.loads(cluster.ok("get", "service", "web", "-n", "service-quota", "-o", "json"))
    assert service["spec"]["type"] == "ClusterIP"
    assert used(cluster, "service-quota", "ports") == {
        "services.nodeports": "0",
        "services.loadbalancers": "0",
    }
    cluster.ok("create", "service", "clusterip", "one", "-n", "service-quota", "--tcp=80")
    cluster.ok(
        "patch", "service", "one", "-n", "service-quota", "-p", '{"spec":{"type":"NodePort"}}'
    )
    assert used(cluster, "service-quota", "ports")["services.nodeports"] == "1"


def test_the_system_priority_classes_cannot_be_deleted(cluster: Cluster) -> None:
    for name in ("system-node-critical", "system-cluster-critical"):
        refused = cluster.kubectl("delete", "priorityclass", name)
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            f'Error from server (Forbidden): priorityclasses.scheduling.k8s.io "{name}" is '
            "forbidden: this is a system priority class and cannot be deleted"
        )
    listed = cluster.ok("get", "priorityclasses", "-o", "name").split()
    assert listed == [
        "priorityclass.scheduling.k8s.io/system-cluster-critical",
        "priorityclass.scheduling.k8s.io/system-node-critical",
    ]


def test_a_server_dry_run_is_refused_as_the_write_would_be_and_charges_nothing(
    cluster: Cluster,
) -> None:
    """v1.32's quota evaluator checks a dry run and skips only its quota update: before, a
    `--dry-run=server` create or patch passed whatever the quota said."""
    cluster.ok("create", "namespace", "dry-run")
    cluster.ok("create", "quota", "small", "-n", "dry-run", "--hard=pods=1,services.nodeports=0")
    cluster.ok("run", "fits", "-n", "dry-run", "--image=nginx", "--dry-run=server")
    assert used(cluster, "dry-run", "small")["pods"] == "0"
    cluster.ok("run", "web", "-n", "dry-run", "--image=nginx")
    refused = cluster.kubectl("run", "more", "-n", "dry-run", "--image=nginx", "--dry-run=server")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): pods "more" is forbidden: exceeded quota: small, '
        "requested: pods=1, used: pods=1, limited: pods=1"
    )
    cluster.ok("create", "service", "clusterip", "web", "-n", "dry-run", "--tcp=80")
    patch = ("patch", "service", "web", "-n", "dry-run", "-p", '{"spec":{"type":"NodePort"}}')
    refused = cluster.kubectl(*patch, "--dry-run=server")
    assert refused.returncode == 1
    assert "exceeded quota: small, requested: services.nodeports=1" in refused.stderr
    assert used(cluster, "dry-run", "small") == {"pods": "1", "services.nodeports": "0"}


STUCK = """
apiVersion: v1
kind: Pod
metadata: {name: stuck, namespace: lost-node}
spec:
  nodeName: lost-node   # no kubelet ever confirms its end: deleted, it stays Terminating
  containers: [{name: app, image: nginx}]
"""


@pytest.fixture(scope="module")
def resyncing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(
        tmp_path_factory.mktemp("pinnace-quota-resync"),
        flags=("--resource-quota-sync-period", "2s"),
    )
    yield running
    stop(running)


def test_a_pod_stuck_terminating_stops_counting_at_the_next_resync(resyncing: Cluster) -> None:
    """Past its deletion timestamp plus its grace a pod no longer counts, and the resource
    quota controller's resync recounts it then (kube-controller-manager's
    --resource-quota-sync-period); before, it counted as long as it stayed stored."""
    resyncing.ok("create", "namespace", "lost-node")
    resyncing.ok("create", "quota", "pods", "-n", "lost-node", "--hard=pods=1")
    resyncing.ok("apply", "-f", "-", stdin=STUCK)
    resyncing.ok("delete", "pod", "stuck", "-n", "lost-node", "--grace-period=1", "--wait=false")
    deadline = time.monotonic() + 30
    while used(resyncing, "lost-node", "pods") != {"pods": "0"}:
        assert time.monotonic() < deadline, "the stuck pod was never recounted"
        time.sleep(0.2)
    pod = json.loads(resyncing.ok("get", "pod", "stuck", "-n", "lost-node", "-o", "json"))
    assert pod["metadata"]["deletionTimestamp"]
    resyncing.ok("run", "next", "-n", "lost-node", "--image=nginx")
