"""Storage through `pinnace up --nodes 1` and kubectl, as the Kubernetes docs' "Configure a Pod
to Use a PersistentVolume for Storage" task does it: a hostPath volume and a claim of class
`manual` bind, the pod using the claim runs; kubectl's tables are kube-apiserver's, a bad
claim gets its 422, and a pod naming a missing claim stays Pending with kube-scheduler's
message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

TASK = """
apiVersion: v1
kind: PersistentVolume
metadata:
  name: task-pv-volume
  labels:
    type: local
spec:
  storageClassName: manual
  capacity:
    storage: 10Gi
  accessModes:
    - ReadWriteOnce
  hostPath:
    path: "/mnt/data"
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: task-pv-claim
spec:
  storageClassName: manual
  accessModes:
    - ReadWriteOnce
  resources:
    requests:
      storage: 3Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: task-pv-pod
spec:
  volumes:
    - name: task-pv-storage
      persistentVolumeClaim:
        claimName: task-pv-claim
  containers:
    - name: task-pv-container
      image: nginx
      volumeMounts:
        - mountPath: "/usr/share/nginx/html"
          name: task-pv-storage
"""

ORPHAN = """
apiVersion: v1
kind: Pod
metadata:
  name: orphan
spec:
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: nowhere
  containers:
    - name: c
      image: nginx
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-storage"), flags=("--nodes", "1"))
    yield running
    stop(running)


def rows(cluster: Cluster, *args: str) -> list[list[str]]:
    return [line.split() for line in cluster.ok("get", *args).splitlines()]


def test_the_docs_persistent_volume_task(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=TASK)

    def running() -> str:
        pod = json.loads(cluster.ok("get", "pod", "task-pv-pod", "-o", "json"))
        return str(pod["status"].get("phase"))

    assert eventually(lambda: running() == "Running")
    volumes = rows(cluster, "pv")
    assert volumes[0][:5] == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM"]
    assert volumes[1][:7] == [
        "task-pv-volume", "10Gi", "RWO", "Retain", "Bound", "default/task-pv-claim", "manual",
    ]  # fmt: skip
    claims = rows(cluster, "pvc")
    assert claims[1][:6] == ["task-pv-claim", "Bound", "task-pv-volume", "10Gi", "RWO", "manual"]
    # In use by a pod: deleting the claim leaves it Terminating.
    cluster.ok("delete", "pvc", "task-pv-claim", "--wait=false")
    assert rows(cluster, "pvc")[1][1] == "Terminating"


def test_a_bad_claim_gets_kube_apiservers_error(cluster: Cluster) -> None:
    bad = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "bad"},
        "spec": {"accessModes": [], "resources": {"requests": {"storage": "1Gi"}}},
    }
    done = cluster.kubectl("apply", "-f", "-", stdin=json.dumps(bad))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'The PersistentVolumeClaim "bad" is invalid: spec.accessModes: Required value: at '
        "least 1 access mode is required"
    )


def test_a_pod_naming_a_missing_claim_stays_pending(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=ORPHAN)

    def message() -> str:
        pod = json.loads(cluster.ok("get", "pod", "orphan", "-o", "json"))
        conditions = pod["status"].get("conditions") or []
        return next((c["message"] for c in conditions if c["type"] == "PodScheduled"), "")

    assert eventually(message).startswith(
        '0/1 nodes are available: persistentvolumeclaim "nowhere" not found.'
    )
    assert rows(cluster, "pod", "orphan")[1][2] == "Pending"


def test_a_quota_on_claims_refuses_one_over_it(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "quota-demo")
    cluster.ok("create", "quota", "storage", "-n", "quota-demo",
               "--hard=persistentvolumeclaims=1,requests.storage=2Gi")  # fmt: skip
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "first", "namespace": "quota-demo"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    cluster.ok("apply", "-f", "-", stdin=json.dumps(claim))
    claim["metadata"]["name"] = "second"
    done = cluster.kubectl("apply", "-f", "-", stdin=json.dumps(claim))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": persistentvolumeclaims '
        '"second" is forbidden: exceeded quota: storage, requested: persistentvolumeclaims=1, '
        "used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1"
    )


EPHEMERAL = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
    - name: c
      image: nginx
      volumeMounts: [{{name: scratch, mountPath: /scratch}}]
  volumes:
    - name: scratch
      ephemeral:
        volumeClaimTemplate:
          metadata:
            labels: {{type: scratch}}
          spec:
            accessModes: [ReadWriteOnce]
            resources: {{requests: {{storage: 1Gi}}}}
"""


def events_of(cluster: Cluster, kind: str, name: str) -> list[tuple[str, str, str]]:
    found = json.loads(
        cluster.ok("get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json")
    )
    return [
        (e["reason"], e["source"].get("component", ""), e["message"])
        for e in found["items"]
        if e["involvedObject"]["kind"] == kind
    ]


def test_a_generic_ephemeral_volume_gets_its_own_claim(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=EPHEMERAL.format(name="scratchy"))

    def phase() -> str:
        return str(
            json.loads(cluster.ok("get", "pod", "scratchy", "-o", "json"))["status"]["phase"]
        )

    assert eventually(lambda: phase() == "Running")
    claim = json.loads(cluster.ok("get", "pvc", "scratchy-scratch", "-o", "json"))
    pod = json.loads(cluster.ok("get", "pod", "scratchy", "-o", "json"))
    assert claim["metadata"]["labels"] == {"type": "scratch"}
    assert claim["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "scratchy",
            "uid": pod["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim["status"]["phase"] == "Bound"
    assert claim["spec"]["storageClassName"] == "standard"  # the default class
    # The garbage collector deletes the claim with its pod.
    cluster.ok("delete", "pod", "scratchy", "--wait=false")
    assert eventually(
        lambda: cluster.kubectl("get", "pvc", "scratchy-scratch").returncode == 1, timeout=30
    )


def test_an_ephemeral_volume_whose_claim_is_not_the_pods_waits(cluster: Cluster) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "squatter-scratch"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    cluster.ok("apply", "-f", "-", stdin=json.dumps(claim))
    cluster.ok("apply", "-f", "-", stdin=EPHEMERAL.format(name="squatter"))
    problem = (
        "PVC default/squatter-scratch was not created for pod default/squatter (pod is not owner)"
    )

    def seen() -> set[tuple[str, str, str]]:
        return set(events_of(cluster, "Pod", "squatter"))

    assert eventually(
        lambda: (
            ("FailedBinding", "ephemeral_volume", f"ephemeral volume scratch: {problem}") in seen()
        )
    )
    assert eventually(
        lambda: any(
            reason == "FailedScheduling"
            and message.startswith(f"0/1 nodes are available: {problem}.")
            for reason, _, message in seen()
        )
    )


IMMEDIATE_CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {name}
spec:
  storageClassName: {cls}
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 2Gi
"""


def test_a_bound_claim_may_not_shrink_below_its_capacity(cluster: Cluster) -> None:
    immediate = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: immediate
provisioner: ebs.csi.aws.com
"""
    cluster.ok("apply", "-f", "-", stdin=immediate)
    cluster.ok("apply", "-f", "-", stdin=IMMEDIATE_CLAIM.format(name="shrinking", cls="immediate"))
    assert eventually(lambda: rows(cluster, "pvc", "shrinking")[1][1] == "Bound")
    done = cluster.kubectl(
        "patch", "pvc", "shrinking", "-p", '{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}'
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'The PersistentVolumeClaim "shrinking" is invalid: spec.resources.requests.storage: '
        "Forbidden: field can not be less than status.capacity"
    )


def test_a_claim_grows_only_when_its_class_allows_it(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=IMMEDIATE_CLAIM.format(name="fixed", cls="immediate"))
    assert eventually(lambda: rows(cluster, "pvc", "fixed")[1][1] == "Bound")
    done = cluster.kubectl(
        "patch", "pvc", "fixed", "-p", '{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}'
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (Forbidden): persistentvolumeclaims "fixed" is forbidden: only '
        "dynamically provisioned pvc can be resized and the storageclass that provisions the "
        "pvc must support resize"
    )
    assert rows(cluster, "pvc", "fixed")[1][3] == "2Gi"


def test_a_claim_is_expanded_by_the_resizer_then_on_its_node(cluster: Cluster) -> None:
    expandable = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: expandable
provisioner: pd.csi.storage.gke.io
allowVolumeExpansion: true
"""
    cluster.ok("apply", "-f", "-", stdin=expandable)
    cluster.ok("apply", "-f", "-", stdin=IMMEDIATE_CLAIM.format(name="growing", cls="expandable"))
    assert eventually(lambda: rows(cluster, "pvc", "growing")[1][1] == "Bound")
    volume = rows(cluster, "pvc", "growing")[1][2]
    cluster.ok(
        "patch", "pvc", "growing", "-p", '{"spec":{"resources":{"requests":{"storage":"5Gi"}}}}'
    )

    def claim() -> dict[str, Any]:
        return dict(json.loads(cluster.ok("get", "pvc", "growing", "-o", "json")))

    # The volume grows; the claim's file system waits for a node to expand it.
    assert eventually(
        lambda: (
            claim()["status"].get("allocatedResourceStatuses") == {"storage": "NodeResizePending"}
        )
    )
    status = claim()["status"]
    assert status["capacity"] == {"storage": "2Gi"}
    assert status["allocatedResources"] == {"storage": "5Gi"}
    assert [(c["type"], c["status"], c.get("message")) for c in status["conditions"]] == [
        (
            "FileSystemResizePending",
            "True",
            "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
        )
    ]
    assert rows(cluster, "pv", volume)[1][1] == "5Gi"
    assert rows(cluster, "pvc", "growing")[1][3] == "2Gi"
    pod = ORPHAN.replace("orphan", "grower").replace("nowhere", "growing")
    cluster.ok("apply", "-f", "-", stdin=pod)
    assert eventually(lambda: rows(cluster, "pvc", "growing")[1][3] == "5Gi")
    status = claim()["status"]
    assert "allocatedResourceStatuses" not in status and not status.get("conditions")
    node = json.loads(cluster.ok("get", "pod", "grower", "-o", "json"))["spec"]["nodeName"]
    expanded = f'MountVolume.NodeExpandVolume succeeded for volume "{volume}" {node}'
    assert eventually(
        lambda: (
            [
                e
                for e in events_of(cluster, "PersistentVolumeClaim", "growing")
                if e[0] != "ExternalProvisioning" and not e[0].startswith("Provisioning")
            ]
            == [
                (
                    "ExternalExpanding",
                    "volume_expand",
                    "waiting for an external controller to expand this PVC",
                ),
                (
                    "Resizing",
                    "external-resizer pd.csi.storage.gke.io",
                    f"External resizer is resizing volume {volume}",
                ),
                (
                    "FileSystemResizeRequired",
                    "external-resizer pd.csi.storage.gke.io",
                    "Require file system resize of volume on node",
                ),
                ("FileSystemResizeSuccessful", "kubelet", expanded),
            ]
        )
    )
    assert ("FileSystemResizeSuccessful", "kubelet", expanded) in events_of(
        cluster, "Pod", "grower"
    )
    annotations = json.loads(cluster.ok("get", "pv", volume, "-o", "json"))["metadata"][
        "annotations"
    ]
    assert "volume.alpha.kubernetes.io/pre-resize-capacity" not in annotations


def test_deprecated_volume_fields_get_kube_apiservers_warnings(cluster: Cluster) -> None:
    volume = """
apiVersion: v1
kind: PersistentVolume
metadata:
  name: old-style
  annotations:
    volume.beta.kubernetes.io/storage-class: slow
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Recycle
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [a]}
  nfs: {server: 10.0.0.1, path: /exports}
"""
    done = cluster.kubectl("apply", "-f", "-", stdin=volume)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "Warning: metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated "
        'since v1.8; use "storageClassName" attribute instead',
        "Warning: spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. "
        "Instead, the recommended approach is to use dynamic provisioning.",
        "Warning: spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: "
        "failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "
        '"topology.kubernetes.io/zone" instead',
    ]
    claim = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: fractional
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1500m
"""
    done = cluster.kubectl("apply", "-f", "-", stdin=claim)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        'Warning: spec.resources.requests[storage]: fractional byte value "1500m" is invalid, '
        "must be an integer"
    ]


def test_a_claim_waiting_for_an_unschedulable_pod_says_so(cluster: Cluster) -> None:
    manifest = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: elsewhere
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - key: topology.kubernetes.io/zone
    values: [nowhere]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: stranded
spec:
  storageClassName: elsewhere
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""
    cluster.ok("apply", "-f", "-", stdin=manifest)
    pod = ORPHAN.replace("orphan", "stranded-pod").replace("nowhere", "stranded")
    cluster.ok("apply", "-f", "-", stdin=pod)

    def pod_events() -> list[tuple[str, str, str]]:
        return events_of(cluster, "Pod", "stranded-pod")

    assert eventually(lambda: [e for e in pod_events() if e[0] == "FailedScheduling"])[0][2] == (
        "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.."
    )
    waiting = (
        "WaitForPodScheduled",
        "persistentvolume-controller",
        "waiting for pod stranded-pod to be scheduled",
    )
    assert eventually(lambda: waiting in events_of(cluster, "PersistentVolumeClaim", "stranded"))


def test_a_pod_writing_past_its_empty_dir_size_limit_is_evicted(cluster: Cluster) -> None:
    line = "0123456789" * 30
    filler = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "filler"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "command": [
                        "sh",
                        "-c",
                        f"while true; do echo {line} >> /cache/log; sleep 1; done",
                    ],
                    "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                }
            ],
            "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Ki"}}],
        },
    }
    cluster.ok("apply", "-f", "-", stdin=json.dumps(filler))

    def status() -> dict[str, Any]:
        found = json.loads(cluster.ok("get", "pod", "filler", "-o", "json"))["status"]
        assert found["phase"] == "Failed"
        return dict(found)

    message = 'Usage of EmptyDir volume "cache" exceeds the limit "1Ki". '
    assert eventually(status, timeout=60)["reason"] == "Evicted"
    assert status()["message"] == message
    assert ("Evicted", "kubelet", message) in events_of(cluster, "Pod", "filler")


def test_a_claim_made_without_a_default_class_gets_one_later(cluster: Cluster) -> None:
    # Retroactive default StorageClass assignment (GA in v1.28): the PV controller gives an
    # unbound claim without a class the default class once there is one.
    default = "storageclass.kubernetes.io/is-default-class"
    cluster.ok("annotate", "storageclass", "standard", f"{default}=false", "--overwrite")
    try:
        claim = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: early}\n"
        claim += "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
        cluster.ok("apply", "-f", "-", stdin=claim)
        jsonpath = "jsonpath={.spec.storageClassName}"
        assert cluster.ok("get", "pvc", "early", "-o", jsonpath) == ""
    finally:
        cluster.ok("annotate", "storageclass", "standard", f"{default}=true", "--overwrite")
    assert eventually(lambda: cluster.ok("get", "pvc", "early", "-o", jsonpath) == "standard")
