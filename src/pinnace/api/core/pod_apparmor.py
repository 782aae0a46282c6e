"""A new pod's deprecated AppArmor annotations and its appArmorProfile fields, kept in step
as kube-apiserver v1.32 does on create (pkg/registry/core/pod/strategy.go
applyAppArmorVersionSkew, the AppArmor KEP's version skew strategy).

A container with a profile field (its own, or else the pod's) and no annotation gets the
annotation; a container with an annotation and no field of its own gets the field, unless the
pod's field says the same, and each such annotation is warned of as deprecated. (A template's
annotations are warned of by pod_warnings instead.) Not done: validation of the annotations'
values and the fields (ValidateAppArmorPodAnnotations, ValidateAppArmorProfileField, the
annotation/field match on create, and the ban on changing the annotations on update).
"""

from __future__ import annotations

from typing import Any

from pinnace.api.core.pod_shape import CONTAINER_LISTS, as_dict, as_str, pod_containers

ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_MESSAGE = 'deprecated since v1.30; use the "appArmorProfile" field instead'
_LOCALHOST_PREFIX = "localhost/"
_MAX_LOCALHOST_PROFILE_BYTES = 4095  # PATH_MAX - 1
_ANNOTATIONS = {"Unconfined": "unconfined", "RuntimeDefault": "runtime/default"}
"""The annotation's value of each profile type but Localhost."""


def apply_apparmor_version_skew(pod: dict[str, Any]) -> list[str]:
    """Sync the annotations and fields of `pod` in place; the warnings of the annotations
    without a field of their container."""
    spec = as_dict(pod.get("spec"))
    meta = pod.get("metadata")
    if not isinstance(meta, dict) or as_dict(spec.get("os")).get("name") == "windows":
        return []
    pod_profile = as_dict(spec.get("securityContext")).get("appArmorProfile")
    if pod_profile is None and not _has_profiles(spec) and not _has_annotations(meta):
        return []  # nothing to sync (most pods)
    warnings = []
    for container in pod_containers(spec):
        key = ANNOTATION_PREFIX + as_str(container.get("name"))
        annotations = meta.get("annotations")
        profile = _profile(container)
        if not isinstance(annotations, dict) or key not in annotations:
            value = _annotation_of(profile if profile is not None else pod_profile)
            if value:
                if not isinstance(annotations, dict):
                    annotations = meta["annotations"] = {}
                annotations[key] = value
        elif profile is None:
            field = _field_of(as_str(annotations[key]))
            copied = field is not None and field != _profile_of(pod_profile)
            if copied:
                security = container.get("securityContext")
                if not isinstance(security, dict):
                    security = container["securityContext"] = {}
                security["appArmorProfile"] = field
            if field is None or copied:
                warnings.append(f"metadata.annotations[{key}]: {_MESSAGE}")
    return warnings


def _profile(container: dict[str, Any]) -> Any:
    security = container.get("securityContext")
    return security.get("appArmorProfile") if isinstance(security, dict) else None


def _has_profiles(spec: dict[str, Any]) -> bool:
    """Whether a container of `spec` has a profile field of its own."""
    for list_name in CONTAINER_LISTS:
        containers = spec.get(list_name)
        if isinstance(containers, list):
            for container in containers:
                if isinstance(container, dict) and _profile(container) is not None:
                    return True
    return False


def _has_annotations(meta: dict[str, Any]) -> bool:
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        return False
    return any(key.startswith(ANNOTATION_PREFIX) for key in annotations)


def _annotation_of(profile: Any) -> str:
    """The annotation's value for a profile field; "" for none or one it cannot say."""
    profile = as_dict(profile)
    kind = profile.get("type")
    if kind == "Localhost":
        name = profile.get("localhostProfile")
        return _LOCALHOST_PREFIX + name if isinstance(name, str) else ""
    return _ANNOTATIONS.get(kind, "") if isinstance(kind, str) else ""


def _field_of(annotation: str) -> dict[str, str] | None:
    """The valid profile field an annotation's value stands for, None when there is none."""
    for kind, value in _ANNOTATIONS.items():
        if annotation == value:
            return {"type": kind}
    if not annotation.startswith(_LOCALHOST_PREFIX):
        return None
    name = annotation.removeprefix(_LOCALHOST_PREFIX)
    if not name or name.strip() != name or len(name.encode()) > _MAX_LOCALHOST_PROFILE_BYTES:
        return None
    return {"type": "Localhost", "localhostProfile": name}


def _profile_of(profile: Any) -> dict[str, Any] | None:
    """A profile field as `_field_of` writes one, to compare with it."""
    if not isinstance(profile, dict):
        return None
    return {
        key: profile[key] for key in ("type", "localhostProfile") if profile.get(key) is not None
    }
