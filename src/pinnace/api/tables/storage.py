"""core/v1's persistent volumes and claims, and storage.k8s.io/v1's storage classes, CSI nodes
and CSI drivers (printers.go's printPersistentVolume, printPersistentVolumeClaim,
printStorageClass, printCSINode and printCSIDriver)."""

from __future__ import annotations

from typing import Any

from pinnace.api.storage.storageclass import is_default_class
from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    items,
    meta,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import quantity

_MODE_ABBREVIATIONS = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes(modes: Any) -> str:
    """GetAccessModesAsString: the abbreviations of the modes present, in a fixed order."""
    present = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _MODE_ABBREVIATIONS if mode in present)


def _phase(obj: Object) -> str:
    if meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return str(section(obj, "status").get("phase") or "")


def _volume_attributes_class(spec: Object) -> str:
    return str(spec.get("volumeAttributesClassName") or "<unset>")


def _storage(resources: Object) -> str:
    value = resources.get("storage")
    return quantity(value) if value is not None else "0"


def _pv_row(pv: Object, now: float) -> Row:
    spec, status = section(pv, "spec"), section(pv, "status")
    ref = section(spec, "claimRef")
    claim = f"{ref.get('namespace') or ''}/{ref.get('name') or ''}" if ref else ""
    return Row(
        [
            name_of(pv),
            _storage(section(spec, "capacity")),
            access_modes(spec.get("accessModes")),
            str(spec.get("persistentVolumeReclaimPolicy") or ""),
            _phase(pv),
            claim,
            str(spec.get("storageClassName") or ""),
            _volume_attributes_class(spec),
            str(status.get("reason") or ""),
            age_of(pv, now),
            str(spec.get("volumeMode") or "Filesystem"),
        ]
    )


PERSISTENT_VOLUMES = Printer(
    (
        name_column(),
        Column("Capacity", "string", doc("V1PersistentVolumeSpec", "capacity")),
        Column("Access Modes", "string", doc("V1PersistentVolumeSpec", "accessModes")),
        Column(
            "Reclaim Policy",
            "string",
            doc("V1PersistentVolumeSpec", "persistentVolumeReclaimPolicy"),
        ),
        Column("Status", "string", doc("V1PersistentVolumeStatus", "phase")),
        Column("Claim", "string", doc("V1PersistentVolumeSpec", "claimRef")),
        Column("StorageClass", "string", "StorageClass of the pv"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        Column("Reason", "string", doc("V1PersistentVolumeStatus", "reason")),
        age_column(),
        Column("VolumeMode", "string", doc("V1PersistentVolumeSpec", "volumeMode"), 1),
    ),
    _pv_row,
)


def _pvc_row(pvc: Object, now: float) -> Row:
    spec, status = section(pvc, "spec"), section(pvc, "status")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes(status.get("accessModes"))
        capacity = _storage(section(status, "capacity"))
    class_name = spec.get("storageClassName")
    if class_name is None:
        class_name = section(pvc, "metadata", "annotations").get(
            "volume.beta.kubernetes.io/storage-class"
        )
    mode = spec.get("volumeMode")
    return Row(
        [
            name_of(pvc),
            _phase(pvc),
            str(spec.get("volumeName") or ""),
            capacity,
            modes,
            str(class_name or ""),
            _volume_attributes_class(spec),
            age_of(pvc, now),
            str(mode) if mode else "<unset>",
        ]
    )


PERSISTENT_VOLUME_CLAIMS = Printer(
    (
        name_column(),
        Column("Status", "string", doc("V1PersistentVolumeClaimStatus", "phase")),
        Column("Volume", "string", doc("V1PersistentVolumeClaimSpec", "volumeName")),
        Column("Capacity", "string", doc("V1PersistentVolumeClaimStatus", "capacity")),
        Column("Access Modes", "string", doc("V1PersistentVolumeClaimStatus", "accessModes")),
        Column("StorageClass", "string", "StorageClass of the pvc"),
        Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        age_column(),
        Column("VolumeMode", "string", doc("V1PersistentVolumeClaimSpec", "volumeMode"), 1),
    ),
    _pvc_row,
)


def _storage_class_row(sc: Object, now: float) -> Row:
    name = name_of(sc) + (" (default)" if is_default_class(sc) else "")
    return Row(
        [
            name,
            str(sc.get("provisioner") or ""),
            str(sc.get("reclaimPolicy") or "Delete"),
            str(sc.get("volumeBindingMode") or "Immediate"),
            sc.get("allowVolumeExpansion") is True,
            age_of(sc, now),
        ]
    )


STORAGE_CLASSES = Printer(
    (
        name_column(),
        Column("Provisioner", "string", doc("V1StorageClass", "provisioner")),
        Column("ReclaimPolicy", "string", doc("V1StorageClass", "reclaimPolicy")),
        Column("VolumeBindingMode", "string", doc("V1StorageClass", "volumeBindingMode")),
        Column("AllowVolumeExpansion", "string", doc("V1StorageClass", "allowVolumeExpansion")),
        age_column(),
    ),
    _storage_class_row,
)

CSI_NODES = Printer(
    (
        name_column(),
        Column(
            "Drivers",
            "integer",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        age_column(),
    ),
    lambda node, now: Row([name_of(node), len(items(node, "spec", "drivers")), age_of(node, now)]),
)


def _csi_driver_row(driver: Object, now: float) -> Row:
    spec = section(driver, "spec")
    audiences = [str(t.get("audience") or "") for t in items(driver, "spec", "tokenRequests")]
    modes = spec.get("volumeLifecycleModes") or []
    return Row(
        [
            name_of(driver),
            spec.get("attachRequired") is True,
            spec.get("podInfoOnMount") is True,
            spec.get("storageCapacity") is True,
            ",".join(audiences) or "<unset>",
            spec.get("requiresRepublish") is True,
            ",".join(map(str, modes)) or "<none>",
            age_of(driver, now),
        ]
    )


CSI_DRIVERS = Printer(
    (
        name_column(),
        Column("AttachRequired", "boolean", doc("V1CSIDriverSpec", "attachRequired")),
        Column("PodInfoOnMount", "boolean", doc("V1CSIDriverSpec", "podInfoOnMount")),
        Column("StorageCapacity", "boolean", doc("V1CSIDriverSpec", "storageCapacity")),
        Column("TokenRequests", "string", doc("V1CSIDriverSpec", "tokenRequests")),
        Column("RequiresRepublish", "boolean", doc("V1CSIDriverSpec", "requiresRepublish")),
        Column("Modes", "string", doc("V1CSIDriverSpec", "volumeLifecycleModes")),
        age_column(),
    ),
    _csi_driver_row,
)
