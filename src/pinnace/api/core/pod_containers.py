"""Validation of a PodSpec's containers: names, images, ports, env, mounts, probes, hooks."""

from __future__ import annotations

from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_fields import (
    object_items,
    read_bool,
    read_dict,
    read_int,
    read_list,
    read_str,
)
from pinnace.api.core.pod_resources import validate_resource_requirements
from pinnace.api.field import FieldError, Path
from pinnace.api.names import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
)
from pinnace.api.validation import IS_NEGATIVE_ERROR_MSG, is_int, parse_quantity_field
from pinnace.resources.names import (
    CPU,
    EPHEMERAL_STORAGE,
    HUGEPAGES_PREFIX,
    LIMITS_PREFIX,
    MEMORY,
    REQUESTS_PREFIX,
    is_hugepage_resource_name,
)
from pinnace.resources.quantity import Quantity

PROTOCOLS = ("SCTP", "TCP", "UDP")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
_MOUNT_PROPAGATIONS = ("Bidirectional", "HostToContainer", "None")
_RECURSIVE_READ_ONLY = ("Disabled", "Enabled", "IfPossible")
_ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
# Every field label the downward API converts (a wider set than env or volumes accept).
_DOWNWARD_API_LABELS = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)
_CONTAINER_RESOURCE_FIELDS = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_HUGEPAGES_FIELD_PREFIXES = (LIMITS_PREFIX + HUGEPAGES_PREFIX, REQUESTS_PREFIX + HUGEPAGES_PREFIX)
_BYTE_DIVISORS = frozenset(
    {"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)
# Fields an ephemeral container may not set: they would make it part of the workload.
_EPHEMERAL_FORBIDDEN = (
    "ports",
    "resources",
    "resizePolicy",
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "restartPolicy",
)
_INIT_ONLY_WITH_RESTART = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")
_NOT_INIT_MSG = "may not be set for init containers without restartPolicy=Always"
NOT_REQUIRED = "NotRequired"
RESTART_CONTAINER = "RestartContainer"
RESIZE_POLICIES = (NOT_REQUIRED, RESTART_CONTAINER)
RESIZE_RESOURCES = (CPU, MEMORY)
"""What a resizePolicy may name, and what pods/resize may change."""


def validate_containers(
    spec: dict[str, Any], volumes: set[str], path: Path, grace: int | None, *, is_pod: bool
) -> list[FieldError]:
    """containers, initContainers and ephemeralContainers of a PodSpec at `path`."""
    errs: list[FieldError] = []
    containers = object_items(
        read_list(spec, "containers", path, errs), path.child("containers"), errs
    )
    init = object_items(
        read_list(spec, "initContainers", path, errs), path.child("initContainers"), errs
    )
    ephemeral = object_items(
        read_list(spec, "ephemeralContainers", path, errs), path.child("ephemeralContainers"), errs
    )

    ctr_path = path.child("containers")
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        errs.append(field.required(ctr_path))
    names: set[str] = set()
    for i, ctr in containers:
        p = ctr_path.index(i)
        errs += _validate_container_common(ctr, volumes, p, is_pod=is_pod)
        name = ctr.get("name")
        if isinstance(name, str) and name in names:
            errs.append(field.duplicate(p.child("name"), name))
        elif isinstance(name, str):
            names.add(name)
        errs += _validate_hooks_and_probes(ctr, p, grace)
        if ctr.get("restartPolicy") is not None:
            errs.append(
                field.forbidden(p.child("restartPolicy"), "may not be set for non-init containers")
            )
        errs += validate_resize_policy(
            ctr.get("resizePolicy"), p.child("resizePolicy"), spec.get("restartPolicy")
        )
    errs += _host_port_conflicts([c for _, c in containers], [i for i, _ in containers], ctr_path)

    init_path = path.child("initContainers")
    for i, ctr in init:
        p = init_path.index(i)
        errs += _validate_container_common(ctr, volumes, p, is_pod=is_pod)
        restart = ctr.get("restartPolicy")
        if restart is not None and restart != "Always":
            errs.append(field.not_supported(p.child("restartPolicy"), restart, ("Always",)))
        name = ctr.get("name")
        if isinstance(name, str) and name in names:
            errs.append(field.duplicate(p.child("name"), name))
        elif isinstance(name, str) and name:
            names.add(name)
        errs += _host_port_conflicts([ctr], [i], init_path)
        if restart == "Always":
            errs += _validate_hooks_and_probes(ctr, p, grace)
        else:
            errs += [
                field.forbidden(p.child(key), _NOT_INIT_MSG)
                for key in _INIT_ONLY_WITH_RESTART
                if ctr.get(key) is not None
            ]
        if ctr.get("resizePolicy"):
            errs.append(
                field.invalid(
                    p.child("resizePolicy"),
                    ctr["resizePolicy"],
                    "must not be set for init containers",
                )
            )

    eph_path = path.child("ephemeralContainers")
    targets = set(names)
    for i, ctr in ephemeral:
        p = eph_path.index(i)
        errs += _validate_container_common(ctr, volumes, p, is_pod=True)
        name = ctr.get("name")
        if isinstance(name, str) and name in names:
            errs.append(field.duplicate(p.child("name"), name))
        elif isinstance(name, str):
            names.add(name)
        target = ctr.get("targetContainerName")
        if target and (not isinstance(target, str) or target not in targets):
            errs.append(field.not_found(p.child("targetContainerName"), target))
        errs += [
            field.forbidden(p.child(key), "cannot be set for an Ephemeral Container")
            for key in _EPHEMERAL_FORBIDDEN
            if ctr.get(key) not in (None, [], {})
        ]
        for j, mount in _dicts(ctr.get("volumeMounts")):
            for key in ("subPath", "subPathExpr"):
                if mount.get(key):
                    errs.append(
                        field.forbidden(
                            p.child("volumeMounts").index(j).child(key),
                            "cannot be set for an Ephemeral Container",
                        )
                    )
    return errs


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return (
        [(i, v) for i, v in enumerate(value) if isinstance(v, dict)]
        if isinstance(value, list)
        else []
    )


def _validate_container_common(
    ctr: dict[str, Any], volumes: set[str], path: Path, *, is_pod: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = read_str(ctr, "name", path, errs)
    if not name:
        errs.append(field.required(path.child("name")))
    else:
        errs += [field.invalid(path.child("name"), name, m) for m in is_dns1123_label(name)]
    image = read_str(ctr, "image", path, errs)
    if not image:
        errs.append(field.required(path.child("image")))
    elif is_pod and image != image.strip():
        errs.append(
            field.invalid(
                path.child("image"), image, "must not have leading or trailing whitespace"
            )
        )
    policy = read_str(ctr, "terminationMessagePolicy", path, errs)
    if not policy:
        errs.append(field.required(path.child("terminationMessagePolicy")))
    elif policy not in TERMINATION_MESSAGE_POLICIES:
        errs.append(
            field.not_supported(
                path.child("terminationMessagePolicy"), policy, TERMINATION_MESSAGE_POLICIES
            )
        )
    errs += _validate_ports(read_list(ctr, "ports", path, errs), path.child("ports"))
    errs += _validate_env(read_list(ctr, "env", path, errs), path.child("env"))
    errs += _validate_env_from(read_list(ctr, "envFrom", path, errs), path.child("envFrom"))
    errs += _validate_volume_mounts(ctr, volumes, path, errs)
    pull = read_str(ctr, "imagePullPolicy", path, errs)
    if not pull:
        errs.append(field.required(path.child("imagePullPolicy")))
    elif pull not in PULL_POLICIES:
        errs.append(field.not_supported(path.child("imagePullPolicy"), pull, PULL_POLICIES))
    errs += validate_resource_requirements(ctr.get("resources"), path.child("resources"))
    return errs


def _validate_ports(ports: list[Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in object_items(ports, path, errs):
        p = path.index(i)
        name = read_str(port, "name", p, errs)
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs += [field.invalid(p.child("name"), name, m) for m in msgs]
            elif name in names:
                errs.append(field.duplicate(p.child("name"), name))
            else:
                names.add(name)
        container_port = read_int(port, "containerPort", p, errs)
        if not container_port:
            errs.append(field.required(p.child("containerPort")))
        else:
            errs += [
                field.invalid(p.child("containerPort"), container_port, m)
                for m in is_valid_port_num(container_port)
            ]
        host_port = read_int(port, "hostPort", p, errs)
        if host_port:
            errs += [
                field.invalid(p.child("hostPort"), host_port, m)
                for m in is_valid_port_num(host_port)
            ]
        protocol = read_str(port, "protocol", p, errs)
        if not protocol:
            errs.append(field.required(p.child("protocol")))
        elif protocol not in PROTOCOLS:
            errs.append(field.not_supported(p.child("protocol"), protocol, PROTOCOLS))
    return errs


def _host_port_conflicts(
    containers: list[dict[str, Any]], indexes: list[int], path: Path
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for ctr, ci in zip(containers, indexes, strict=True):
        for pi, port in _dicts(ctr.get("ports")):
            host_port = port.get("hostPort")
            if not is_int(host_port) or host_port == 0:
                continue
            key = f"{port.get('protocol', '')}/{port.get('hostIP', '')}/{host_port}"
            if key in seen:
                errs.append(
                    field.duplicate(path.index(ci).child("ports").index(pi).child("hostPort"), key)
                )
            seen.add(key)
    return errs


def _validate_env(env: list[Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in object_items(env, path, errs):
        p = path.index(i)
        name = read_str(var, "name", p, errs)
        if not name:
            errs.append(field.required(p.child("name")))
        else:
            errs += [field.invalid(p.child("name"), name, m) for m in is_env_var_name(name)]
        value = read_str(var, "value", p, errs)
        if var.get("valueFrom") is not None:
            value_from = read_dict(var, "valueFrom", p, errs)
            errs += _validate_env_value_from(value_from, value, p.child("valueFrom"))
    return errs


def _validate_env_value_from(source: dict[str, Any], value: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    if source.get("fieldRef") is not None:
        count += 1
        ref = read_dict(source, "fieldRef", path, errs)
        errs += validate_object_field_selector(ref, _ENV_FIELD_PATHS, path.child("fieldRef"))
    if source.get("resourceFieldRef") is not None:
        count += 1
        ref = read_dict(source, "resourceFieldRef", path, errs)
        errs += validate_resource_field_selector(
            ref, path.child("resourceFieldRef"), in_volume=False
        )
    for key in ("configMapKeyRef", "secretKeyRef"):
        if source.get(key) is not None:
            count += 1
            errs += _validate_key_selector(read_dict(source, key, path, errs), path.child(key))
    if count == 0:
        errs.append(
            field.invalid(
                path,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                "`secretKeyRef`",
            )
        )
    elif value:
        errs.append(field.invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(field.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def validate_object_field_selector(
    ref: dict[str, Any], allowed: tuple[str, ...], path: Path
) -> list[FieldError]:
    """A downward API fieldRef: a pod field the kubelet can expose, labels and annotations
    by key."""
    errs: list[FieldError] = []
    api_version = read_str(ref, "apiVersion", path, errs)
    if not api_version:
        return [*errs, field.required(path.child("apiVersion"))]
    field_path = read_str(ref, "fieldPath", path, errs)
    if not field_path:
        return [*errs, field.required(path.child("fieldPath"))]
    base, subscript = _split_subscript(field_path)
    if api_version != "v1":
        conversion_error = f"unsupported pod version: {api_version}"
    elif subscript is not None and base not in ("metadata.annotations", "metadata.labels"):
        conversion_error = f"field label does not support subscript: {field_path}"
    elif subscript is None and field_path not in _DOWNWARD_API_LABELS | {"spec.host"}:
        conversion_error = f"field label not supported: {field_path}"
    else:
        conversion_error = ""
    if conversion_error:
        return [
            *errs,
            field.invalid(
                path.child("fieldPath"),
                field_path,
                f"error converting fieldPath: {conversion_error}",
            ),
        ]
    if subscript is not None:
        key = subscript.lower() if base == "metadata.annotations" else subscript
        return errs + [field.invalid(path, key, m) for m in is_qualified_name(key)]
    internal = "spec.nodeName" if field_path == "spec.host" else field_path
    if internal not in allowed:
        errs.append(field.not_supported(path.child("fieldPath"), internal, sorted(allowed)))
    return errs


def _split_subscript(field_path: str) -> tuple[str, str | None]:
    """`metadata.labels['app']` -> ("metadata.labels", "app")."""
    if field_path.endswith("']") and "['" in field_path:
        base, _, rest = field_path.partition("['")
        return base, rest[:-2]
    return field_path, None


def validate_resource_field_selector(
    ref: dict[str, Any], path: Path, *, in_volume: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    resource = read_str(ref, "resource", path, errs)
    if in_volume and not read_str(ref, "containerName", path, errs):
        errs.append(field.required(path.child("containerName")))
    elif not resource:
        errs.append(field.required(path.child("resource")))
    elif resource not in _CONTAINER_RESOURCE_FIELDS and not resource.startswith(
        _HUGEPAGES_FIELD_PREFIXES
    ):
        errs.append(
            field.not_supported(path.child("resource"), resource, _CONTAINER_RESOURCE_FIELDS)
        )
    if ref.get("divisor") is not None:
        divisor, parse_errs = parse_quantity_field(ref["divisor"], path.child("divisor"))
        errs += parse_errs
        if divisor is not None and divisor != Quantity(0):
            errs += _validate_divisor(resource, str(divisor), path.child("divisor"))
    return errs


def _validate_divisor(resource: str, divisor: str, path: Path) -> list[FieldError]:
    _, _, name = resource.partition(".")
    byte_sizes = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"
    if name == CPU and divisor not in ("1m", "1"):
        return [
            field.invalid(
                path, resource, "only divisor's values 1m and 1 are supported with the cpu resource"
            )
        ]
    what = {MEMORY: "memory", EPHEMERAL_STORAGE: "local ephemeral storage"}.get(name)
    if is_hugepage_resource_name(name):
        what = "hugepages"
    if what and divisor not in _BYTE_DIVISORS:
        return [
            field.invalid(
                path,
                resource,
                f"only divisor's values {byte_sizes} are supported with the {what} resource",
            )
        ]
    return []


def _validate_key_selector(ref: dict[str, Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = read_str(ref, "name", path, errs)
    errs += [field.invalid(path.child("name"), name, m) for m in is_dns1123_subdomain(name)]
    key = read_str(ref, "key", path, errs)
    if not key:
        errs.append(field.required(path.child("key")))
    else:
        errs += [field.invalid(path.child("key"), key, m) for m in is_config_map_key(key)]
    return errs


def _validate_env_from(sources: list[Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, source in object_items(sources, path, errs):
        p = path.index(i)
        prefix = read_str(source, "prefix", p, errs)
        if prefix:
            errs += [field.invalid(p.child("prefix"), prefix, m) for m in is_env_var_name(prefix)]
        count = 0
        for key in ("configMapRef", "secretRef"):
            if source.get(key) is None:
                continue
            count += 1
            ref = read_dict(source, key, p, errs)
            name = read_str(ref, "name", p.child(key), errs)
            if not name:
                errs.append(field.required(p.child(key, "name")))
            else:
                errs += [
                    field.invalid(p.child(key, "name"), name, m) for m in is_dns1123_subdomain(name)
                ]
        if count == 0:
            errs.append(
                field.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`")
            )
        elif count > 1:
            errs.append(
                field.invalid(path, "", "may not have more than one field specified at a time")
            )
    return errs


def _validate_volume_mounts(
    ctr: dict[str, Any], volumes: set[str], path: Path, errs: list[FieldError]
) -> list[FieldError]:
    mount_errs: list[FieldError] = []
    mounts_path = path.child("volumeMounts")
    security = ctr.get("securityContext")
    privileged = isinstance(security, dict) and security.get("privileged") is True
    seen_paths: set[str] = set()
    for i, mount in object_items(read_list(ctr, "volumeMounts", path, errs), mounts_path, errs):
        p = mounts_path.index(i)
        name = read_str(mount, "name", p, mount_errs)
        if not name:
            mount_errs.append(field.required(p.child("name")))
        if name not in volumes:
            mount_errs.append(field.not_found(p.child("name"), name))
        mount_path = read_str(mount, "mountPath", p, mount_errs)
        if not mount_path:
            mount_errs.append(field.required(p.child("mountPath")))
        if mount_path in seen_paths:
            mount_errs.append(field.invalid(p.child("mountPath"), mount_path, "must be unique"))
        seen_paths.add(mount_path)
        sub_path = read_str(mount, "subPath", p, mount_errs)
        if sub_path:
            # Kubernetes reports these under the list, not the element.
            mount_errs += validate_local_descending_path(sub_path, mounts_path.child("subPath"))
        sub_path_expr = read_str(mount, "subPathExpr", p, mount_errs)
        if sub_path_expr:
            if sub_path:
                mount_errs.append(
                    field.invalid(
                        p.child("subPathExpr"),
                        sub_path_expr,
                        "subPathExpr and subPath are mutually exclusive",
                    )
                )
            mount_errs += validate_local_descending_path(
                sub_path_expr, mounts_path.child("subPathExpr")
            )
        propagation = mount.get("mountPropagation")
        if propagation is not None:
            prop_path = mounts_path.child("mountPropagation")
            if propagation not in _MOUNT_PROPAGATIONS:
                mount_errs.append(field.not_supported(prop_path, propagation, _MOUNT_PROPAGATIONS))
            if propagation == "Bidirectional" and not privileged:
                mount_errs.append(
                    field.forbidden(
                        prop_path,
                        "Bidirectional mount propagation is available only to privileged "
                        "containers",
                    )
                )
        mount_errs += _validate_recursive_read_only(mount, mounts_path, mount_errs)
    return mount_errs


def _validate_recursive_read_only(
    mount: dict[str, Any], mounts_path: Path, errs: list[FieldError]
) -> list[FieldError]:
    value = mount.get("recursiveReadOnly")
    path = mounts_path.child("recursiveReadOnly")
    if value is None or value == "Disabled":
        return []
    if value not in _RECURSIVE_READ_ONLY:
        return [field.not_supported(path, value, _RECURSIVE_READ_ONLY)]
    rro_errs = []
    if not read_bool(mount, "readOnly", mounts_path, errs):
        rro_errs.append(field.forbidden(path, "may only be specified when readOnly is true"))
    if mount.get("mountPropagation") not in (None, "None"):
        rro_errs.append(
            field.forbidden(
                path, "may only be specified when mountPropagation is None or not specified"
            )
        )
    return rro_errs


def validate_local_descending_path(target: str, path: Path) -> list[FieldError]:
    errs = []
    if target.startswith("/"):
        errs.append(field.invalid(path, target, "must be a relative path"))
    return errs + validate_path_no_backsteps(target, path)


def validate_path_no_backsteps(target: str, path: Path) -> list[FieldError]:
    if ".." in target.replace("\\", "/").split("/"):
        return [field.invalid(path, target, "must not contain '..'")]
    return []


def _validate_hooks_and_probes(
    ctr: dict[str, Any], path: Path, grace: int | None
) -> list[FieldError]:
    errs: list[FieldError] = []
    if ctr.get("lifecycle") is not None:
        lifecycle = read_dict(ctr, "lifecycle", path, errs)
        for hook in ("postStart", "preStop"):
            if lifecycle.get(hook) is not None:
                handler = read_dict(lifecycle, hook, path.child("lifecycle"), errs)
                errs += _validate_handler(
                    handler,
                    ("exec", "httpGet", "tcpSocket", "sleep"),
                    path.child("lifecycle", hook),
                    grace,
                )
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        if ctr.get(probe_name) is None:
            continue
        p = path.child(probe_name)
        probe = read_dict(ctr, probe_name, path, errs)
        errs += _validate_handler(probe, ("exec", "httpGet", "tcpSocket", "grpc"), p, grace)
        for key in (
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ):
            value = read_int(probe, key, p, errs)
            if value is not None and value < 0:
                errs.append(field.invalid(p.child(key), value, IS_NEGATIVE_ERROR_MSG))
        probe_grace = read_int(probe, "terminationGracePeriodSeconds", p, errs)
        if probe_grace is not None and probe_grace <= 0:
            errs.append(
                field.invalid(
                    p.child("terminationGracePeriodSeconds"), probe_grace, "must be greater than 0"
                )
            )
        if probe_name == "readinessProbe":
            if probe.get("terminationGracePeriodSeconds") is not None:
                errs.append(
                    field.invalid(
                        p.child("terminationGracePeriodSeconds"),
                        probe["terminationGracePeriodSeconds"],
                        "must not be set for readinessProbes",
                    )
                )
        elif probe.get("successThreshold", 0) != 1:
            errs.append(
                field.invalid(
                    p.child("successThreshold"), probe.get("successThreshold", 0), "must be 1"
                )
            )
    return errs


def _validate_handler(
    handler: dict[str, Any], kinds: tuple[str, ...], path: Path, grace: int | None
) -> list[FieldError]:
    errs: list[FieldError] = []
    found = False
    for kind in kinds:
        if handler.get(kind) is None:
            continue
        if found:
            errs.append(
                field.forbidden(path.child(kind), "may not specify more than 1 handler type")
            )
            continue
        found = True
        action = read_dict(handler, kind, path, errs)
        p = path.child(kind)
        if kind == "exec":
            if not read_list(action, "command", p, errs):
                errs.append(field.required(p.child("command")))
        elif kind == "httpGet":
            if not read_str(action, "path", p, errs):
                errs.append(field.required(p.child("path")))
            errs += validate_port_num_or_name(action.get("port"), p.child("port"))
            scheme = action.get("scheme", "")
            if scheme not in ("HTTP", "HTTPS"):
                errs.append(field.not_supported(p.child("scheme"), scheme, ("HTTP", "HTTPS")))
        elif kind == "sleep":
            seconds = read_int(action, "seconds", p, errs) or 0
            if grace is not None and not 0 < seconds <= grace:
                errs.append(
                    field.invalid(
                        p,
                        seconds,
                        "must be greater than 0 and less than terminationGracePeriodSeconds "
                        f"({grace}). Enable AllowPodLifecycleSleepActionZeroValue feature gate "
                        "for zero sleep.",
                    )
                )
        else:  # tcpSocket, grpc
            errs += validate_port_num_or_name(action.get("port"), p.child("port"))
    if not found:
        errs.append(field.required(path, "must specify a handler type"))
    return errs


def validate_port_num_or_name(port: Any, path: Path) -> list[FieldError]:
    """An IntOrString port: a number 1-65535 or an IANA_SVC_NAME."""
    if isinstance(port, str):
        return [field.invalid(path, port, m) for m in is_valid_port_name(port)]
    if is_int(port):
        return [field.invalid(path, port, m) for m in is_valid_port_num(port)]
    if port is None:
        return [field.invalid(path, 0, m) for m in is_valid_port_num(0)]
    return [field.type_invalid(path, port, "must be of type integer or string")]


def validate_resize_policy(policies: Any, path: Path, restart_policy: Any) -> list[FieldError]:
    """validateResizePolicy of a regular container: cpu or memory, once each, NotRequired or
    RestartContainer, and only NotRequired in a pod that never restarts its containers."""
    errs: list[FieldError] = []
    seen: set[Any] = set()
    for i, policy in _dicts(policies):
        name, restart = policy.get("resourceName", ""), policy.get("restartPolicy", "")
        if name in seen:
            errs.append(field.duplicate(path.index(i), name))
        seen.add(name)
        if not name:
            errs.append(field.required(path))
        elif name not in RESIZE_RESOURCES:
            errs.append(field.not_supported(path, name, RESIZE_RESOURCES))
        if not restart:
            errs.append(field.required(path))
        elif restart not in RESIZE_POLICIES:
            errs.append(field.not_supported(path, restart, RESIZE_POLICIES))
        if restart_policy == "Never" and restart != NOT_REQUIRED:
            errs.append(
                field.invalid(
                    path, restart, "must be 'NotRequired' when `restartPolicy` is 'Never'"
                )
            )
    return errs
