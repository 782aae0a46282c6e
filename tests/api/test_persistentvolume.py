"""PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode and CSIDriver through the
API server: v1.32's defaulting, strategies, validation (pkg/apis/core/validation,
pkg/apis/storage/validation), the DefaultStorageClass and StorageObjectInUseProtection
admission plugins, and the `kubectl get` tables (printers.go)."""

from __future__ import annotations

import copy
from typing import Any

from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.tables import to_table

PVS = catalog.kind("", "persistentvolumes")
PVCS = catalog.kind("", "persistentvolumeclaims")
CLASSES = catalog.kind("storage.k8s.io", "storageclasses")
CSI_NODES = catalog.kind("storage.k8s.io", "csinodes")
CSI_DRIVERS = catalog.kind("storage.k8s.io", "csidrivers")


def pv(name: str = "pv0003", **spec: Any) -> dict[str, Any]:
    body = {
        "capacity": {"storage": "5Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/mnt/data"},
        **spec,
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": body,
    }


def pvc(name: str = "myclaim", **spec: Any) -> dict[str, Any]:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "8Gi"}}, **spec}
    return {"metadata": {"name": name}, "spec": body}


def storage_class(name: str, default: bool = False, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"metadata": meta, "provisioner": "rancher.io/local-path", **fields}


def test_a_volume_is_defaulted_pending_retained_and_protected(api: Harness) -> None:
    created = api.call(api.server.create, PVS, "", pv()).obj
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["spec"]["hostPath"] == {"path": "/mnt/data", "type": ""}
    assert created["status"] == {
        "phase": "Pending",
        "lastPhaseTransitionTime": created["metadata"]["creationTimestamp"],
    }
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


def test_volume_validation_in_kube_apiserver_words(api: Harness) -> None:
    bad = pv(
        capacity={"storage": "0"},
        accessModes=["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
        persistentVolumeReclaimPolicy="Keep",
        nfs={"server": "nfs", "path": "/x"},
    )
    assert api.invalid_causes(api.server.create, PVS, "", bad) == [
        'spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", '
        '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: '
        '"Delete", "Recycle", "Retain"',
        "spec.nfs: Forbidden: may not specify more than 1 volume type",
    ]
    local = pv(hostPath=None, local={"path": "/mnt/disks/ssd1"})
    assert api.invalid_causes(api.server.create, PVS, "", local) == [
        "spec.nodeAffinity: Required value: Local volume requires node affinity"
    ]
    none = pv(hostPath=None, accessModes=[])
    assert api.invalid_causes(api.server.create, PVS, "", none) == [
        "spec.accessModes: Required value",
        "spec: Required value: must specify a volume type",
    ]


def test_a_volume_source_is_immutable(api: Harness) -> None:
    created = copy.deepcopy(api.call(api.server.create, PVS, "", pv()).obj)
    created["spec"]["hostPath"]["path"] = "/elsewhere"
    assert api.invalid_causes(api.server.update, PVS, "", "pv0003", created) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"
    ]


def test_a_claim_gets_the_newest_default_class_and_the_protection_finalizer(api: Harness) -> None:
    api.call(api.server.create, CLASSES, "", storage_class("standard", default=True))
    api.loop.run_until_complete(api.server.clock.sleep(5))
    api.call(api.server.create, CLASSES, "", storage_class("fast", default=True))
    api.call(api.server.create, CLASSES, "", storage_class("slow"))
    created = api.call(api.server.create, PVCS, "default", pvc()).obj
    assert created["spec"]["storageClassName"] == "fast"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"] == {"phase": "Pending"}
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    # A claim naming a class, even "", keeps it.
    empty = api.call(api.server.create, PVCS, "default", pvc("static", storageClassName="")).obj
    assert empty["spec"]["storageClassName"] == ""


def test_claim_validation_and_immutability(api: Harness) -> None:
    bad = pvc(accessModes=[], resources={"requests": {"storage": "-1Gi"}}, volumeMode="Raw")
    assert api.invalid_causes(api.server.create, PVCS, "default", bad) == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        'spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero',
        'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"',
    ]
    missing = pvc(resources={})
    assert api.invalid_causes(api.server.create, PVCS, "default", missing) == [
        "spec.resources[storage]: Required value"
    ]
    created = api.call(api.server.create, PVCS, "default", pvc(storageClassName="")).obj
    created = copy.deepcopy(created)
    created["spec"]["accessModes"] = ["ReadWriteMany"]
    assert api.invalid_causes(api.server.update, PVCS, "default", "myclaim", created) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    ]


def test_storage_class_defaults_validation_and_updates(api: Harness) -> None:
    created = copy.deepcopy(api.call(api.server.create, CLASSES, "", storage_class("standard")).obj)
    assert (created["reclaimPolicy"], created["volumeBindingMode"]) == ("Delete", "Immediate")
    bad = storage_class("bad", reclaimPolicy="Recycle", volumeBindingMode="Later")
    bad["provisioner"] = ""
    bad["allowedTopologies"] = [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]
    assert api.invalid_causes(api.server.create, CLASSES, "", bad) == [
        "provisioner: Required value",
        'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", '
        '"WaitForFirstConsumer"',
        "allowedTopologies[0].matchLabelExpressions[0].values: Required value: must specify as "
        "least one value",
    ]
    created["provisioner"] = "example.com/other"
    created["parameters"] = {"type": "ssd"}
    assert api.invalid_causes(api.server.update, CLASSES, "", "standard", created) == [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
    ]


def test_csi_driver_defaults_and_csi_node_validation(api: Harness) -> None:
    driver = {"metadata": {"name": "hostpath.csi.k8s.io"}, "spec": {}}
    spec = api.call(api.server.create, CSI_DRIVERS, "", driver).obj["spec"]
    assert spec == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    node = {
        "metadata": {"name": "node-1"},
        "spec": {
            "drivers": [{"name": "hostpath.csi.k8s.io", "nodeID": "", "allocatable": {"count": -1}}]
        },
    }
    assert api.invalid_causes(api.server.create, CSI_NODES, "", node) == [
        "spec.drivers[0].nodeID: Required value: nodeID of CSINode cannot be empty",
        "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0",
    ]


def cells(kind: Any, obj: dict[str, Any]) -> tuple[list[str], list[Any]]:
    table = to_table(kind, [obj], now=0.0, list_meta={})
    return [c["name"] for c in table["columnDefinitions"]], table["rows"][0]["cells"][:-2]


def test_kubectl_get_columns() -> None:
    volume = pv()
    volume["spec"].update(
        persistentVolumeReclaimPolicy="Retain",
        accessModes=["ReadWriteMany", "ReadWriteOnce"],
        claimRef={"namespace": "default", "name": "myclaim"},
        storageClassName="manual",
    )
    volume["status"] = {"phase": "Bound"}
    columns, row = cells(PVS, volume)
    assert columns == [
        "Name",
        "Capacity",
        "Access Modes",
        "Reclaim Policy",
        "Status",
        "Claim",
        "StorageClass",
        "VolumeAttributesClass",
        "Reason",
        "Age",
        "VolumeMode",
    ]
    assert row == [
        "pv0003",
        "5Gi",
        "RWO,RWX",
        "Retain",
        "Bound",
        "default/myclaim",
        "manual",
        "<unset>",
        "",
    ]
    claim = pvc(volumeName="pv0003", storageClassName="manual", volumeMode="Filesystem")
    claim["status"] = {
        "phase": "Bound",
        "capacity": {"storage": "5Gi"},
        "accessModes": ["ReadWriteOnce"],
    }
    columns, row = cells(PVCS, claim)
    assert columns == [
        "Name",
        "Status",
        "Volume",
        "Capacity",
        "Access Modes",
        "StorageClass",
        "VolumeAttributesClass",
        "Age",
        "VolumeMode",
    ]
    assert row == ["myclaim", "Bound", "pv0003", "5Gi", "RWO", "manual", "<unset>"]
    columns, row = cells(CLASSES, storage_class("standard", default=True))
    assert columns == [
        "Name",
        "Provisioner",
        "ReclaimPolicy",
        "VolumeBindingMode",
        "AllowVolumeExpansion",
        "Age",
    ]
    assert row == ["standard (default)", "rancher.io/local-path", "Delete", "Immediate"]
