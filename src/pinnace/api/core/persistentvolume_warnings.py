"""The `Warning` headers kube-apiserver v1.32 returns for PersistentVolumes and
PersistentVolumeClaims, on create and update (pkg/api/persistentvolume and
pkg/api/persistentvolumeclaim's GetWarningsFor...): the deprecated beta class and
mount-options annotations, the deprecated Recycle reclaim policy, deprecated node labels in a
volume's node affinity, volume plugins removed from Kubernetes, and a fractional storage
request or limit."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.pod_shape import as_dict, as_list
from pinnace.api.core.pod_warnings import claim_spec_warnings, term_warnings

_ANNOTATIONS = (
    (
        "volume.beta.kubernetes.io/storage-class",
        'deprecated since v1.8; use "storageClassName" attribute instead',
    ),
)
_VOLUME_ANNOTATIONS = (
    *_ANNOTATIONS,
    (
        "volume.beta.kubernetes.io/mount-options",
        'deprecated since v1.31; use "mountOptions" attribute instead',
    ),
)
_RECYCLE = (
    "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, "
    "the recommended approach is to use dynamic provisioning."
)
_REMOVED_SOURCES = (
    ("cephfs", "cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    ("rbd", "rbd", "deprecated in v1.28, non-functional in v1.31+"),
    ("scaleIO", "scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("storageos", "storageOS", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
)
"""The v1 field, the name the message gives it (the Go field's), and the message."""


def _annotation_warnings(obj: dict[str, Any], known: tuple[tuple[str, str], ...]) -> list[str]:
    annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    return [f"metadata.annotations[{key}]: {why}" for key, why in known if key in annotations]


def persistent_volume_warnings(pv: Any) -> list[str]:
    pv = as_dict(pv)
    spec = as_dict(pv.get("spec"))
    warnings = _annotation_warnings(pv, _VOLUME_ANNOTATIONS)
    if spec.get("persistentVolumeReclaimPolicy") == "Recycle":
        warnings.append(_RECYCLE)
    required = as_dict(as_dict(spec.get("nodeAffinity")).get("required"))
    terms_path = "spec.nodeAffinity.required.nodeSelectorTerms"
    for i, term in enumerate(as_list(required.get("nodeSelectorTerms"))):
        warnings += term_warnings(as_dict(term), f"{terms_path}[{i}]")
    for source, name, why in _REMOVED_SOURCES:
        if spec.get(source) is not None:
            warnings.append(f"spec.{name}: {why}")
    return warnings


def persistent_volume_update_warnings(new: Any, old: Any) -> list[str]:
    return persistent_volume_warnings(new)


def persistent_volume_claim_warnings(pvc: Any) -> list[str]:
    pvc = as_dict(pvc)
    return _annotation_warnings(pvc, _ANNOTATIONS) + claim_spec_warnings(pvc.get("spec"), "spec")


def persistent_volume_claim_update_warnings(new: Any, old: Any) -> list[str]:
    return persistent_volume_claim_warnings(new)
