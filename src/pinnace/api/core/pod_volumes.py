"""Validation of a PodSpec's volumes: unique names and exactly one well-formed source each."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_containers import (
    validate_local_descending_path,
    validate_object_field_selector,
    validate_path_no_backsteps,
    validate_resource_field_selector,
)
from pinnace.api.core.pod_fields import object_items, read_dict, read_int, read_list, read_str
from pinnace.api.field import FieldError, Path
from pinnace.api.names import is_dns1123_label, is_dns1123_subdomain
from pinnace.api.objects import Remembered, plain_json
from pinnace.api.validation import parse_quantity_field

# Every volume source, in the order Kubernetes checks them; the first one set wins and each
# later one is "may not specify more than 1 volume type".
VOLUME_SOURCES = (
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
)
# Kubernetes names two of them differently in that error.
_SOURCE_ERROR_NAMES = {"cephfs": "cephFS", "downwardAPI": "downwarAPI"}
HOST_PATH_TYPES = (
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
)
_SOURCE_ORDER = {source: i for i, source in enumerate(VOLUME_SOURCES)}
_VOLUME_FIELD_PATHS = (
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
)
FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"


def validate_volumes(
    volumes: list[Any], path: Path, errs: list[FieldError], pod_name: str = ""
) -> set[str]:
    """Validate spec.volumes into `errs`; return the names of the valid volumes, which
    volume mounts may refer to."""
    names: set[str] = set()
    for i, volume in object_items(volumes, path, errs):
        p = path.index(i)
        vol_errs = _validate_volume_source(volume, p, pod_name)
        name = read_str(volume, "name", p, vol_errs)
        if not name:
            vol_errs.append(field.required(p.child("name")))
        else:
            vol_errs += [field.invalid(p.child("name"), name, m) for m in is_dns1123_label(name)]
        if name in names:
            vol_errs.append(field.duplicate(p.child("name"), name))
        if vol_errs:
            errs += vol_errs
        else:
            names.add(name)
    return names


def _validate_volume_source(volume: dict[str, Any], path: Path, pod_name: str) -> list[FieldError]:
    errs: list[FieldError] = []
    chosen = ""
    given = [k for k, v in volume.items() if v is not None and k in _SOURCE_ORDER]
    for source in sorted(given, key=_SOURCE_ORDER.__getitem__) if len(given) > 1 else given:
        if chosen:
            errs.append(
                field.forbidden(
                    path.child(_SOURCE_ERROR_NAMES.get(source, source)),
                    "may not specify more than 1 volume type",
                )
            )
            continue
        chosen = source
        body = read_dict(volume, source, path, errs)
        errs += _source_errors(source, body, path.child(source))
        if source == "ephemeral" and pod_name and volume.get("name"):
            claim = f"{pod_name}-{volume['name']}"
            errs += [
                field.invalid(path.child("name"), volume["name"], f'PVC name "{claim}": {m}')
                for m in is_dns1123_subdomain(claim)
            ]
    if not chosen:
        errs.append(field.required(path, "must specify a volume type"))
    return errs


_valid_sources: Remembered[bool] = Remembered(256)
"""The plain JSON texts of projected volume sources found valid: every pod gets the same
kube-api-access projection (its token, the root CA, its namespace), whose checks take a sixth
of a pod's create."""


def _source_errors(source: str, body: dict[str, Any], path: Path) -> list[FieldError]:
    """_validate_source, answered from memory for a projected source found valid before (its
    checks read nothing but the source)."""
    if source != "projected":
        return _validate_source(source, body, path)
    text = plain_json(body)
    if text is not None and _valid_sources.get(text):
        return []
    errs = _validate_source(source, body, path)
    if text is not None and not errs:
        _valid_sources.put(text, True)
    return errs


def _validate_source(source: str, body: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if source == "emptyDir":
        if body.get("sizeLimit") is not None:
            size, parse_errs = parse_quantity_field(body["sizeLimit"], path.child("sizeLimit"))
            errs += parse_errs
            if size is not None and size.sign() < 0:
                errs.append(
                    field.forbidden(
                        path.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"
                    )
                )
    elif source == "hostPath":
        errs += validate_host_path(body, path)
    elif source == "secret":
        if not read_str(body, "secretName", path, errs):
            errs.append(field.required(path.child("secretName")))
        errs += _validate_mode(body, "defaultMode", path)
        errs += _validate_items(body, path)
    elif source == "configMap":
        if not read_str(body, "name", path, errs):
            errs.append(field.required(path.child("name")))
        errs += _validate_mode(body, "defaultMode", path)
        errs += _validate_items(body, path)
    elif source == "persistentVolumeClaim":
        if not read_str(body, "claimName", path, errs):
            errs.append(field.required(path.child("claimName")))
    elif source == "downwardAPI":
        errs += _validate_mode(body, "defaultMode", path)
        for _, item in object_items(
            read_list(body, "items", path, errs), path.child("items"), errs
        ):
            errs += _validate_downward_api_file(item, path)
    elif source == "projected":
        errs += _validate_mode(body, "defaultMode", path)
        errs += _validate_projection_sources(body, path)
    elif source == "nfs":
        errs += validate_nfs(body, path)
    elif source == "gitRepo":
        if not read_str(body, "repository", path, errs):
            errs.append(field.required(path.child("repository")))
        errs += validate_local_descending_path(
            read_str(body, "directory", path, errs), path.child("directory")
        )
    elif source == "csi" and not read_str(body, "driver", path, errs):
        errs.append(field.required(path.child("driver")))
    return errs


def validate_host_path(body: dict[str, Any], path: Path) -> list[FieldError]:
    """validateHostPathVolumeSource: a pod's hostPath volume and a PersistentVolume's."""
    errs: list[FieldError] = []
    host_path = read_str(body, "path", path, errs)
    if not host_path:
        return [*errs, field.required(path.child("path"))]
    errs += validate_path_no_backsteps(host_path, path.child("path"))
    host_type = body.get("type")
    if host_type is not None and host_type not in HOST_PATH_TYPES:
        errs.append(field.not_supported(path.child("type"), host_type, HOST_PATH_TYPES))
    return errs


def validate_nfs(body: dict[str, Any], path: Path) -> list[FieldError]:
    """validateNFSVolumeSource: a pod's nfs volume and a PersistentVolume's."""
    errs: list[FieldError] = []
    if not read_str(body, "server", path, errs):
        errs.append(field.required(path.child("server")))
    nfs_path = read_str(body, "path", path, errs)
    if not nfs_path:
        errs.append(field.required(path.child("path")))
    if not nfs_path.startswith("/"):
        errs.append(field.invalid(path.child("path"), nfs_path, "must be an absolute path"))
    return errs


def _validate_mode(body: dict[str, Any], key: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    mode = read_int(body, key, path, errs)
    if mode is not None and not 0 <= mode <= 0o777:
        errs.append(field.invalid(path.child(key), mode, FILE_MODE_ERROR))
    return errs


def _validate_items(body: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    items_path = path.child("items")
    for i, item in object_items(read_list(body, "items", path, errs), items_path, errs):
        errs += _validate_key_to_path(item, items_path.index(i))
    return errs


def _validate_key_to_path(item: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not read_str(item, "key", path, errs):
        errs.append(field.required(path.child("key")))
    target = read_str(item, "path", path, errs)
    if not target:
        errs.append(field.required(path.child("path")))
    errs += validate_local_non_reserved_path(target, path.child("path"))
    return errs + _validate_mode(item, "mode", path)


def validate_local_non_reserved_path(target: str, path: Path) -> list[FieldError]:
    errs = validate_local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(field.invalid(path, target, "must not start with '..'"))
    return errs


def _validate_downward_api_file(item: dict[str, Any], path: Path) -> list[FieldError]:
    """One downward API file; like Kubernetes, errors are reported against the volume."""
    errs: list[FieldError] = []
    target = read_str(item, "path", path, errs)
    if not target:
        errs.append(field.required(path.child("path")))
    errs += validate_local_non_reserved_path(target, path.child("path"))
    if item.get("fieldRef") is not None:
        ref = read_dict(item, "fieldRef", path, errs)
        errs += validate_object_field_selector(ref, _VOLUME_FIELD_PATHS, path.child("fieldRef"))
        if item.get("resourceFieldRef") is not None:
            errs.append(
                field.invalid(
                    path,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                )
            )
    elif item.get("resourceFieldRef") is not None:
        ref = read_dict(item, "resourceFieldRef", path, errs)
        errs += validate_resource_field_selector(
            ref, path.child("resourceFieldRef"), in_volume=True
        )
    else:
        errs.append(field.required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _validate_mode(item, "mode", path)


def _validate_projection_sources(body: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen_paths: set[str] = set()

    def claim_path(target: str, bad_value: Any) -> None:
        if target in seen_paths:
            errs.append(field.invalid(path, bad_value, "conflicting duplicate paths"))
        seen_paths.add(target)

    sources_path = path.child("sources")
    for i, source in object_items(read_list(body, "sources", path, errs), sources_path, errs):
        p = sources_path.index(i)
        count = 0
        for kind in ("secret", "configMap"):
            if source.get(kind) is None:
                continue
            count += 1
            ref = read_dict(source, kind, p, errs)
            name = read_str(ref, "name", p.child(kind), errs)
            if not name:
                errs.append(field.required(p.child(kind, "name")))
            items_path = p.child(kind, "items")
            for j, item in object_items(
                read_list(ref, "items", p.child(kind), errs), items_path, errs
            ):
                errs += _validate_key_to_path(item, items_path.index(j))
                if isinstance(item.get("path"), str) and item["path"]:
                    claim_path(item["path"], name)
        if source.get("downwardAPI") is not None:
            count += 1
            ref = read_dict(source, "downwardAPI", p, errs)
            for _, item in object_items(
                read_list(ref, "items", p.child("downwardAPI"), errs),
                p.child("downwardAPI", "items"),
                errs,
            ):
                errs += _validate_downward_api_file(item, p.child("downwardAPI"))
                if isinstance(item.get("path"), str) and item["path"]:
                    claim_path(item["path"], item["path"])
        if source.get("serviceAccountToken") is not None:
            count += 1
            token = read_dict(source, "serviceAccountToken", p, errs)
            token_path = p.child("serviceAccountToken")
            seconds = read_int(token, "expirationSeconds", token_path, errs) or 0
            if seconds < 600:
                errs.append(
                    field.invalid(
                        token_path.child("expirationSeconds"),
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                )
            if seconds > 1 << 32:
                errs.append(
                    field.invalid(
                        token_path.child("expirationSeconds"),
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                )
            target = read_str(token, "path", token_path, errs)
            if not target:
                errs.append(field.required(path.child("path")))
            else:
                errs += validate_local_non_reserved_path(target, path.child("path"))
        if source.get("clusterTrustBundle") is not None:
            count += 1
        if count > 1:
            errs.append(field.forbidden(p, "may not specify more than 1 volume type per source"))
    return errs
