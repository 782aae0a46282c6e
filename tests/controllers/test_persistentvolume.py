"""The persistent volume controller and the volume protection controllers on the virtual
clock: binding claims to the smallest matching volume, phases, reclaim policies, the
simulated provisioner for Immediate and WaitForFirstConsumer classes, and the protection
finalizers (pkg/controller/volume/persistentvolume, pvcprotection, pvprotection v1.32)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import PODS, Workloads

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError

PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")
CLASSES = catalog.kind("storage.k8s.io", "storageclasses")


def volume(
    name: str, size: str, modes: tuple[str, ...] = ("ReadWriteOnce",), **spec: Any
) -> Object:
    body = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "hostPath": {"path": f"/mnt/{name}"},
    }
    return {"metadata": {"name": name}, "spec": {**body, **spec}}


def claim(name: str, size: str = "1Gi", **spec: Any) -> Object:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    return {"metadata": {"name": name}, "spec": {**body, **spec}}


def storage_class(name: str, mode: str = "Immediate", **fields: Any) -> Object:
    return {
        "metadata": {"name": name},
        "provisioner": fields.pop("provisioner", "rancher.io/local-path"),
        "volumeBindingMode": mode,
        **fields,
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=0)
    yield c
    c.close()


def create(cluster: Workloads, kind: Any, obj: Object, namespace: str = "default") -> Object:
    return cluster.run(
        cluster.client.create(kind, "" if kind is PVS or kind is CLASSES else namespace, obj)
    )


def get_pv(cluster: Workloads, name: str) -> Object:
    return cluster.run(cluster.client.get(PVS, "", name))


def test_a_claim_binds_to_the_smallest_volume_that_fits(cluster: Workloads) -> None:
    for name, size in (("big", "10Gi"), ("small", "1Gi"), ("fits", "3Gi"), ("rwx", "2Gi")):
        modes = ("ReadWriteMany",) if name == "rwx" else ("ReadWriteOnce",)
        create(cluster, PVS, volume(name, size, modes, storageClassName=""))
    cluster.settle()
    assert {get_pv(cluster, n)["status"]["phase"] for n in ("big", "small", "fits")} == {
        "Available"
    }
    create(cluster, PVCS, claim("data", "2Gi", storageClassName=""))
    cluster.settle()
    bound = cluster.get(PVCS, "data")
    assert bound["spec"]["volumeName"] == "fits"
    assert bound["status"] == {
        "phase": "Bound",
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "3Gi"},
    }
    notes = bound["metadata"]["annotations"]
    assert notes == {
        "pv.kubernetes.io/bind-completed": "yes",
        "pv.kubernetes.io/bound-by-controller": "yes",
    }
    pv = get_pv(cluster, "fits")
    assert pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["spec"]["claimRef"]["uid"] == bound["metadata"]["uid"]


def test_a_claim_without_class_or_volume_stays_pending(cluster: Workloads) -> None:
    create(cluster, PVCS, claim("lonely", storageClassName=""))
    cluster.settle()
    assert cluster.get(PVCS, "lonely")["status"]["phase"] == "Pending"
    assert cluster.events("FailedBinding") == [
        "no persistent volumes available for this claim and no storage class is set"
    ]


def test_retain_releases_and_delete_fails_for_a_static_volume(cluster: Workloads) -> None:
    create(cluster, PVS, volume("kept", "1Gi", storageClassName=""))
    create(
        cluster,
        PVS,
        volume("gone", "2Gi", storageClassName="", persistentVolumeReclaimPolicy="Delete"),
    )
    create(cluster, PVCS, claim("a", "1Gi", storageClassName=""))
    create(cluster, PVCS, claim("b", "2Gi", storageClassName=""))
    cluster.settle()
    for name in ("a", "b"):
        cluster.run(cluster.client.delete(PVCS, "default", name))
    cluster.settle()
    with pytest.raises(StatusError):
        cluster.get(PVCS, "a")  # nothing uses it: the protection finalizer went
    assert get_pv(cluster, "kept")["status"]["phase"] == "Released"
    assert get_pv(cluster, "gone")["status"]["phase"] == "Failed"
    items = cluster.run(cluster.client.list(catalog.kind("", "events"), "default"))["items"]
    assert [e["message"] for e in items if e["reason"] == "VolumeFailedDelete"] == [
        'error getting deleter volume plugin for volume "gone": no deletable volume plugin matched'
    ]


def test_an_immediate_class_provisions_and_delete_reclaims(cluster: Workloads) -> None:
    create(
        cluster,
        CLASSES,
        storage_class("standard", provisioner="ebs.csi.aws.com", mountOptions=["debug"]),
    )
    created = create(cluster, PVCS, claim("data", "5Gi", storageClassName="standard"))
    cluster.settle()
    name = f"pvc-{created['metadata']['uid']}"
    pv = get_pv(cluster, name)
    assert pv["metadata"]["annotations"] == {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}
    assert pv["spec"]["csi"] == {
        "driver": "ebs.csi.aws.com",
        "volumeHandle": name,
        "fsType": "ext4",
    }
    assert (pv["spec"]["capacity"], pv["spec"]["persistentVolumeReclaimPolicy"]) == (
        {"storage": "5Gi"},
        "Delete",
    )
    assert pv["spec"]["mountOptions"] == ["debug"]
    assert pv["status"]["phase"] == "Bound"
    bound = cluster.get(PVCS, "data")
    assert (bound["status"]["phase"], bound["spec"]["volumeName"]) == ("Bound", name)
    assert (
        bound["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"]
        == "ebs.csi.aws.com"
    )
    assert cluster.events("ProvisioningSucceeded") == [f"Successfully provisioned volume {name}"]
    assert cluster.events("Provisioning") == [
        'External provisioner is provisioning volume for claim "default/data"'
    ]
    cluster.run(cluster.client.delete(PVCS, "default", "data"))
    cluster.settle()
    names = [v["metadata"]["name"] for v in cluster.run(cluster.client.list(PVS, ""))["items"]]
    assert name not in names


def test_wait_for_first_consumer_provisions_on_the_selected_node(cluster: Workloads) -> None:
    create(cluster, CLASSES, storage_class("local", "WaitForFirstConsumer"))
    cluster.run(
        cluster.client.create(
            catalog.kind("", "nodes"),
            "",
            {"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}},
        )
    )
    created = create(cluster, PVCS, claim("data", storageClassName="local"))
    cluster.settle()
    assert cluster.get(PVCS, "data")["status"]["phase"] == "Pending"
    assert cluster.events("WaitForFirstConsumer") == [
        "waiting for first consumer to be created before binding"
    ]
    selected = clone(cluster.get(PVCS, "data"))
    selected["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "n1"}
    cluster.run(cluster.client.update(PVCS, selected))
    cluster.settle()
    pv = get_pv(cluster, f"pvc-{created['metadata']['uid']}")
    assert pv["spec"]["nodeAffinity"] == {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
                    ]
                }
            ]
        }
    }
    assert pv["spec"]["hostPath"]["type"] == "DirectoryOrCreate"
    assert cluster.get(PVCS, "data")["status"]["phase"] == "Bound"


def test_a_claim_in_use_keeps_its_finalizer_until_its_pod_goes(cluster: Workloads) -> None:
    create(cluster, PVS, volume("pv1", "1Gi", storageClassName=""))
    create(cluster, PVCS, claim("data", storageClassName=""))
    pod = {
        "metadata": {"name": "user"},
        "spec": {
            "nodeName": "nowhere",
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    create(cluster, PODS, pod)
    cluster.settle()
    cluster.run(cluster.client.delete(PVCS, "default", "data"))
    cluster.settle()
    assert cluster.get(PVCS, "data")["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert get_pv(cluster, "pv1")["status"]["phase"] == "Bound"
    cluster.run(
        cluster.client.delete(PODS, "default", "user", DeleteOptions(grace_period_seconds=0))
    )
    cluster.settle()
    assert get_pv(cluster, "pv1")["status"]["phase"] == "Released"
    cluster.run(cluster.client.delete(PVS, "", "pv1"))
    cluster.settle()
    assert cluster.run(cluster.client.list(PVS, ""))["items"] == []


def test_the_scheduler_waits_for_claims_and_provisions_on_its_node() -> None:
    """A pod naming a missing claim stays Pending; once the claim exists, on a
    WaitForFirstConsumer class, the scheduler picks a node, VolumeBinding's PreBind selects
    it on the claim, the provisioner makes the volume there, and the pod is bound."""
    cluster = Workloads(nodes=2)
    try:
        create(cluster, CLASSES, storage_class("local", "WaitForFirstConsumer"))
        pod = {
            "metadata": {"name": "user"},
            "spec": {
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        }
        create(cluster, PODS, pod)
        cluster.settle()
        assert cluster.events("FailedScheduling") == [
            '0/2 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/2 '
            "nodes are available: 2 Preemption is not helpful for scheduling.."
        ]
        create(cluster, PVCS, claim("data", storageClassName="local"))
        cluster.settle(5)
        placed = cluster.get(PODS, "user")
        node = placed["spec"]["nodeName"]
        bound = cluster.get(PVCS, "data")
        assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        assert bound["status"]["phase"] == "Bound"
        pv = get_pv(cluster, bound["spec"]["volumeName"])
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [node]
    finally:
        cluster.close()


def test_the_kubelet_mounts_a_claim_once_it_is_bound() -> None:
    """A pod on a node whose claim is not bound stays ContainerCreating, without a FailedMount
    event past podAttachAndMountTimeout (v1.32 records none for that wait's timeout); once the
    claim is bound the pod runs."""
    cluster = Workloads(nodes=1)
    try:
        node = cluster.run(cluster.client.list(catalog.kind("", "nodes"), ""))["items"][0]
        pod = {
            "metadata": {"name": "user"},
            "spec": {
                "nodeName": node["metadata"]["name"],
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        }
        create(cluster, PODS, pod)
        create(cluster, PVCS, claim("data", storageClassName=""))
        cluster.settle(130)
        assert cluster.get(PODS, "user")["status"]["phase"] == "Pending"
        # v1.32 records nothing when the kubelet's 2 min 3 s wait for the volumes times out
        assert cluster.events("FailedMount") == []
        create(cluster, PVS, volume("pv1", "1Gi", storageClassName=""))
        cluster.settle(5)
        assert cluster.get(PODS, "user")["status"]["phase"] == "Running"
    finally:
        cluster.close()
