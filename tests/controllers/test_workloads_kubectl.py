"""Deployments, ReplicaSets, StatefulSets and DaemonSets through `pinnace up` and kubectl (and
the `kubernetes` client), compared field by field with what a v1.32 cluster shows."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-workloads"), flags=("--nodes", "2"))
    yield running
    stop(running)


def status_of(cluster: Cluster, resource: str) -> dict:
    return json.loads(cluster.ok("get", resource, "-o", "jsonpath={.status}") or "{}")


def test_a_deployment_status_leaves_out_its_zero_counters(cluster: Cluster) -> None:
    """apps/v1 DeploymentStatus' counters are omitempty: a rolled-out Deployment has no
    unavailableReplicas, and one scaled to zero keeps only observedGeneration and conditions."""
    cluster.ok("create", "deployment", "zeros", "--image=nginx:1.27", "--replicas=2")
    cluster.ok("rollout", "status", "deployment/zeros", "--timeout=60s")
    status = status_of(cluster, "deployment/zeros")
    assert "unavailableReplicas" not in status
    assert status["availableReplicas"] == status["replicas"] == 2

    cluster.ok("scale", "deployment/zeros", "--replicas=0")

    def scaled_down() -> dict:
        status = status_of(cluster, "deployment/zeros")
        return status if status.get("observedGeneration") == 2 and "replicas" not in status else {}

    status = eventually(scaled_down)
    assert sorted(status) == ["conditions", "observedGeneration"]


def test_a_deployment_replica_set_leaves_out_a_zero_min_ready_seconds(cluster: Cluster) -> None:
    """The ReplicaSet takes the Deployment's minReadySeconds; at 0 it is not written, as
    apps/v1 ReplicaSetSpec's omitempty leaves it out (kubectl get rs -o yaml shows none)."""
    cluster.ok("create", "deployment", "ready0", "--image=nginx:1.27")
    cluster.ok("rollout", "status", "deployment/ready0", "--timeout=60s")
    [rs] = json.loads(cluster.ok("get", "rs", "-l", "app=ready0", "-o", "json"))["items"]
    assert "minReadySeconds" not in rs["spec"]
    cluster.ok("patch", "deployment", "ready0", "-p", '{"spec":{"minReadySeconds":5}}')

    def min_ready() -> list[int]:
        listing = json.loads(cluster.ok("get", "rs", "-l", "app=ready0", "-o", "json"))
        return [rs["spec"].get("minReadySeconds", 0) for rs in listing["items"]]

    eventually(lambda: min_ready() == [5])


def test_kubectl_patch_does_not_record_the_unknown_fields_it_drops(cluster: Cluster) -> None:
    """kube-apiserver's patcher runs the field manager on the object the patch decodes to: a
    field the Deployment does not have is a warning and owned by no one, whichever the patch
    type (before, kubectl-patch's managedFields entry claimed f:spec.f:foo)."""
    cluster.ok("create", "deployment", "patched", "--image=nginx:1.27")
    for patch_type, patch in (
        ("strategic", '{"spec":{"foo":1,"paused":true}}'),
        ("merge", '{"spec":{"bar":1}}'),
        ("json", '[{"op":"add","path":"/spec/baz","value":1}]'),
    ):
        done = cluster.kubectl(
            "patch", "deployment", "patched", f"--type={patch_type}", "-p", patch
        )
        assert done.returncode == 0, done.stderr
        assert "Warning: unknown field" in done.stderr
    deployment = json.loads(
        cluster.ok("get", "deployment", "patched", "-o", "json", "--show-managed-fields")
    )
    [entry] = [
        e for e in deployment["metadata"]["managedFields"] if e["manager"] == "kubectl-patch"
    ]
    assert entry["fieldsV1"] == {"f:spec": {"f:paused": {}}}


STATEFUL_SET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
"""


def event_reasons(cluster: Cluster, name: str) -> list[str]:
    listing = cluster.ok(
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name={name}",
        "-o",
        "jsonpath={range .items[*]}{.reason}{'\\n'}{end}",
    )
    return sorted(set(listing.split()))


def test_a_stateful_set_replaces_a_failed_pod_without_recreating_events(
    cluster: Cluster,
) -> None:
    """v1.32 (kubernetes#123809) deletes a pod in a final phase, once, and makes its
    successor after it is gone, reporting only the delete and the create: no
    RecreatingFailedPod (or RecreatingTerminatedPod, which every rollout used to spam as the
    kubelet now gives each pod it stops a final phase)."""
    cluster.ok("apply", "-f", "-", stdin=STATEFUL_SET)
    cluster.ok("rollout", "status", "statefulset/db", "--timeout=90s")
    uid = cluster.ok("get", "pod", "db-2", "-o", "jsonpath={.metadata.uid}")
    # As the kubelet leaves a pod it evicted.
    failed = '{"status":{"phase":"Failed","reason":"Evicted"}}'
    cluster.ok("patch", "pod", "db-2", "--subresource=status", "-p", failed)

    def replaced() -> bool:
        pod = json.loads(
            cluster.ok("get", "pod", "db-2", "-o", "json", "--ignore-not-found") or "{}"
        )
        return bool(pod) and pod["metadata"]["uid"] != uid and pod["status"]["phase"] == "Running"

    eventually(replaced, timeout=60)
    assert event_reasons(cluster, "db") == ["SuccessfulCreate", "SuccessfulDelete"]
    deletes = cluster.ok(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=db,reason=SuccessfulDelete",
        "-o",
        "jsonpath={.items[*].message}",
    )
    assert deletes == "delete Pod db-2 in StatefulSet db successful"


CLAIMED = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pv}
spec:
  serviceName: pv
  replicas: 1
  selector: {matchLabels: {app: pv}}
  template:
    metadata: {labels: {app: pv}}
    spec: {containers: [{name: c, image: "nginx:1.27"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def test_a_pending_stateful_pod_gets_back_the_claim_deleted_under_it(cluster: Cluster) -> None:
    """v1.32 makes a pending pod's missing claims again before it waits for the pod to be
    ready (kubernetes#113270), so an OrderedReady pod whose claim was deleted while it could
    not be scheduled starts once it can; before, it stayed Pending for good."""
    cluster.ok("apply", "-f", "-", stdin=CLAIMED)
    cluster.ok("rollout", "status", "statefulset/pv", "--timeout=90s")
    nodes = cluster.ok("get", "nodes", "-o", "name").split()
    cluster.ok("cordon", *nodes)
    try:
        uid = cluster.ok("get", "pod", "pv-0", "-o", "jsonpath={.metadata.uid}")
        # Not waited for by kubectl: its successor, of the same name, may come first.
        cluster.ok("delete", "pod", "pv-0", "--wait=false")

        def replaced() -> bool:
            found = cluster.ok("get", "pod", "pv-0", "-o", "jsonpath={.metadata.uid}")
            return found not in ("", uid)

        eventually(replaced)
        # Unscheduled, the pod does not hold the claim: it goes at once.
        cluster.ok("delete", "pvc", "data-pv-0", "--timeout=30s")
    finally:
        cluster.ok("uncordon", *nodes)
    eventually(lambda: cluster.ok("get", "pvc", "data-pv-0", "--ignore-not-found"), timeout=60)
    cluster.ok("rollout", "status", "statefulset/pv", "--timeout=90s")
    phase = cluster.ok("get", "pod", "pv-0", "-o", "jsonpath={.status.phase}")
    assert phase == "Running"


def test_a_stateful_set_controls_the_claims_its_retention_policy_deletes(cluster: Cluster) -> None:
    """With whenDeleted Delete, v1.32 (kubernetes#122499) makes the set the claims' controller
    (controller and blockOwnerDeletion set), and takes over a claim the set only owned."""
    manifest = CLAIMED.replace("name: pv}", "name: keep}").replace("app: pv}", "app: keep}")
    manifest = manifest.replace("serviceName: pv", "serviceName: keep")
    policy = "  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}\n"
    manifest = manifest.replace("  volumeClaimTemplates:", policy + "  volumeClaimTemplates:")
    cluster.ok("apply", "-f", "-", stdin=manifest)
    cluster.ok("rollout", "status", "statefulset/keep", "--timeout=90s")
    uid = cluster.ok("get", "statefulset", "keep", "-o", "jsonpath={.metadata.uid}")
    expected = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "keep",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }

    def owners() -> list[dict]:
        found = cluster.ok(
            "get", "pvc", "data-keep-0", "-o", "jsonpath={.metadata.ownerReferences}"
        )
        return json.loads(found or "[]")

    assert eventually(owners) == [expected]
    # A claim the set owns without controlling it, as a v1.30 controller left it: fixed on the
    # next sync.
    owned = [{k: v for k, v in expected.items() if k in ("apiVersion", "kind", "name", "uid")}]
    patch = json.dumps({"metadata": {"ownerReferences": owned}})
    cluster.ok("patch", "pvc", "data-keep-0", "--type=merge", "-p", patch)
    cluster.ok("annotate", "statefulset", "keep", "resync=1")
    eventually(lambda: owners() == [expected])
