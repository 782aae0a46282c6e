"""CSIDriver and CSINode (storage.k8s.io/v1): defaulting and validation as Kubernetes v1.32
(pkg/apis/storage/v1/defaults.go SetDefaults_CSIDriver, pkg/apis/storage/validation
ValidateCSIDriver and ValidateCSINode).

A CSINode lists the CSI drivers installed on the node of its name, each with the topology keys
it reports and how many of its volumes the node can attach (`allocatable.count`), which the
scheduler's NodeVolumeLimits plugin counts against.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_shape import as_dict
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_subdomain, is_qualified_name
from pinnace.api.validation import is_int, validate_immutable

FS_GROUP_POLICIES = ("File", "None", "ReadWriteOnceWithFSType")
LIFECYCLE_MODES = ("Ephemeral", "Persistent")
_DRIVER_NAME_MAX = 63
_NODE_ID_MAX = 192


def _driver_name_errors(name: str, path: Path) -> list[FieldError]:
    """validateCSIDriverName."""
    if not name:
        return [field.required(path, name)]
    if len(name) > _DRIVER_NAME_MAX:
        return [field.too_long(path, name, _DRIVER_NAME_MAX)]
    return [field.invalid(path, name, m) for m in is_dns1123_subdomain(name.lower())]


def default_csi_driver(driver: Any) -> None:
    spec = as_dict(driver).get("spec") if isinstance(driver, dict) else None
    if spec is None and isinstance(driver, dict):
        spec = driver["spec"] = {}
    if not isinstance(spec, dict):
        return
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),
    ):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def validate_csi_driver(driver: Any) -> list[FieldError]:
    errs = validate_object_meta(driver, namespaced=False)
    if not isinstance(driver, dict):
        return errs
    spec, path = as_dict(driver.get("spec")), Path("spec")
    for key in ("attachRequired", "podInfoOnMount", "storageCapacity", "requiresRepublish"):
        if spec.get(key) is None:
            errs.append(field.required(path.child(key)))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        errs.append(field.not_supported(path.child("fsGroupPolicy"), policy, FS_GROUP_POLICIES))
    for mode in spec.get("volumeLifecycleModes") or ():
        if mode not in LIFECYCLE_MODES:
            errs.append(
                field.not_supported(path.child("volumeLifecycleModes"), mode, LIFECYCLE_MODES)
            )
    return errs


def validate_csi_driver_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + validate_csi_driver(new)
    new_spec, old_spec = as_dict(as_dict(new).get("spec")), as_dict(as_dict(old).get("spec"))
    for key in ("attachRequired", "volumeLifecycleModes", "fsGroupPolicy", "storageCapacity"):
        errs += validate_immutable(new_spec.get(key), old_spec.get(key), Path("spec", key))
    return errs


def validate_csi_node(node: Any) -> list[FieldError]:
    errs = validate_object_meta(node, namespaced=False)
    if not isinstance(node, dict):
        return errs
    path = Path("spec", "drivers")
    names: set[str] = set()
    drivers = as_dict(node.get("spec")).get("drivers") or []
    for i, driver in enumerate(drivers if isinstance(drivers, list) else ()):
        driver, driver_path = as_dict(driver), path.index(i)
        name = str(driver.get("name") or "")
        errs += _driver_name_errors(name, driver_path.child("name"))
        if name in names:
            errs.append(field.duplicate(driver_path.child("name"), name))
        names.add(name)
        node_id = str(driver.get("nodeID") or "")
        if not node_id:
            errs.append(
                field.required(driver_path.child("nodeID"), "nodeID of CSINode cannot be empty")
            )
        elif len(node_id) > _NODE_ID_MAX:
            detail = f"must be {_NODE_ID_MAX} characters or less"
            errs.append(field.invalid(driver_path.child("nodeID"), node_id, detail))
        keys = driver.get("topologyKeys") or []
        for j, key in enumerate(keys):
            key_path = driver_path.child("topologyKeys").index(j)
            if key in keys[:j]:
                errs.append(field.duplicate(key_path, key))
            errs += [field.invalid(key_path, key, m) for m in is_qualified_name(str(key))]
        count = as_dict(driver.get("allocatable")).get("count")
        if count is not None and (not is_int(count) or count < 0):
            count_path = driver_path.child("allocatable", "count")
            errs.append(field.invalid(count_path, count, "must be greater than or equal to 0"))
    return errs


def validate_csi_node_update(new: Any, old: Any) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_csi_node(new)


CSI_DRIVER = Kind(
    group="storage.k8s.io",
    version="v1",
    kind="CSIDriver",
    plural="csidrivers",
    namespaced=False,
    model="V1CSIDriver",
    default=default_csi_driver,
    validate=validate_csi_driver,
    validate_update=validate_csi_driver_update,
)

CSI_NODE = Kind(
    group="storage.k8s.io",
    version="v1",
    kind="CSINode",
    plural="csinodes",
    namespaced=False,
    model="V1CSINode",
    validate=validate_csi_node,
    validate_update=validate_csi_node_update,
)
