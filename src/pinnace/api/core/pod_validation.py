"""PodSpec, pod template and Pod create validation (ValidatePodSpec, ValidatePodTemplateSpec,
ValidatePodCreate in Kubernetes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_containers import validate_containers
from pinnace.api.core.pod_fields import (
    object_items,
    read_bool,
    read_dict,
    read_int,
    read_list,
    read_str,
)
from pinnace.api.core.pod_resources import validate_overhead
from pinnace.api.core.pod_scheduling import (
    validate_affinity,
    validate_node_selector,
    validate_scheduling_gates,
    validate_tolerations,
    validate_topology_spread_constraints,
)
from pinnace.api.core.pod_shape import as_dict, as_str
from pinnace.api.core.pod_volumes import validate_volumes
from pinnace.api.core.pod_warnings import (
    pod_name_warnings,
    pod_warnings,
    reads_annotations,
    spec_warnings,
)
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import validate_labels
from pinnace.api.meta import validate_annotations, validate_object_meta
from pinnace.api.names import (
    inclusive_range_error,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_good_dns1123_label,
    is_qualified_name,
)
from pinnace.api.objects import Remembered, plain_json
from pinnace.api.validation import string_map, type_error

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
OS_NAMES = ("linux", "windows")
MAX_INT32 = 2**31 - 1
SPEC = Path("spec")


def validate_pod_spec(
    spec: Any, path: Path, *, is_pod: bool = False, pod_name: str = ""
) -> list[FieldError]:
    """ValidatePodSpec: every rule a PodSpec obeys, in a Pod or in a template (`is_pod` adds
    the Pod-only checks on hostNetwork ports and image whitespace)."""
    if not isinstance(spec, dict):
        return [type_error(path, spec, "object")]
    errs: list[FieldError] = []
    grace = read_int(spec, "terminationGracePeriodSeconds", path, errs)
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(field.required(path.child("terminationGracePeriodSeconds")))

    volumes = validate_volumes(
        read_list(spec, "volumes", path, errs), path.child("volumes"), errs, pod_name
    )
    errs += validate_containers(spec, volumes, path, grace, is_pod=is_pod)
    errs += _validate_host_network_ports(spec, path, is_pod=is_pod)

    restart = read_str(spec, "restartPolicy", path, errs)
    if not restart:
        errs.append(field.required(path.child("restartPolicy")))
    elif restart not in RESTART_POLICIES:
        errs.append(field.not_supported(path.child("restartPolicy"), restart, RESTART_POLICIES))
    dns_policy = read_str(spec, "dnsPolicy", path, errs)
    if not dns_policy:
        errs.append(field.required(path.child("dnsPolicy")))
    elif dns_policy not in DNS_POLICIES:
        errs.append(field.not_supported(path.child("dnsPolicy"), dns_policy, DNS_POLICIES))
    errs += validate_node_selector(spec.get("nodeSelector"), path.child("nodeSelector"))
    errs += validate_affinity(spec.get("affinity"), path.child("affinity"))
    errs += _validate_dns_config(spec, dns_policy, path)
    gates_path = path.child("readinessGates")
    for i, gate in object_items(read_list(spec, "readinessGates", path, errs), gates_path, errs):
        p = gates_path.index(i).child("conditionType")
        condition = read_str(gate, "conditionType", gates_path.index(i), errs)
        errs += [field.invalid(p, condition, m) for m in is_qualified_name(condition)]
    errs += validate_scheduling_gates(spec.get("schedulingGates"), path.child("schedulingGates"))
    errs += validate_topology_spread_constraints(
        spec.get("topologySpreadConstraints"), path.child("topologySpreadConstraints")
    )
    for key in ("serviceAccountName", "nodeName"):
        name = read_str(spec, key, path, errs)
        if name:
            errs += [field.invalid(path.child(key), name, m) for m in is_dns1123_subdomain(name)]
    deadline = read_int(spec, "activeDeadlineSeconds", path, errs)
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        errs.append(
            field.invalid(
                path.child("activeDeadlineSeconds"), deadline, inclusive_range_error(1, MAX_INT32)
            )
        )
    for key in ("hostname", "subdomain"):
        name = read_str(spec, key, path, errs)
        if name:
            errs += [field.invalid(path.child(key), name, m) for m in is_dns1123_label(name)]
    errs += validate_tolerations(spec.get("tolerations"), path.child("tolerations"))
    for key in ("priorityClassName", "runtimeClassName"):
        name = read_str(spec, key, path, errs)
        if name or (key == "runtimeClassName" and spec.get(key) == ""):
            errs += [field.invalid(path.child(key), name, m) for m in is_dns1123_subdomain(name)]
    preemption = spec.get("preemptionPolicy")
    if preemption is not None and preemption not in PREEMPTION_POLICIES:
        if preemption == "":
            errs.append(field.required(path.child("preemptionPolicy")))
        else:
            errs.append(
                field.not_supported(path.child("preemptionPolicy"), preemption, PREEMPTION_POLICIES)
            )
    if spec.get("overhead") is not None:
        errs += validate_overhead(spec["overhead"], path.child("overhead"))
    if spec.get("os") is not None:
        os_spec = read_dict(spec, "os", path, errs)
        os_name = read_str(os_spec, "name", path.child("os"), errs)
        if not os_name:
            errs.append(field.required(path.child("os", "name"), "cannot be empty"))
        elif os_name not in OS_NAMES:
            errs.append(field.not_supported(path.child("os"), os_name, OS_NAMES))
    return errs


def _validate_host_network_ports(
    spec: dict[str, Any], path: Path, *, is_pod: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    if not read_bool(spec, "hostNetwork", path, errs):
        return errs
    ctr_path = path.child("containers")
    for i, ctr in object_items(read_list(spec, "containers", path, []), ctr_path, []):
        for j, port in object_items(read_list(ctr, "ports", ctr_path.index(i), []), ctr_path, []):
            host_port = port.get("hostPort") or 0
            container_port = port.get("containerPort") or 0
            # A template may leave hostPort unset: the Pod made from it gets it defaulted.
            if (is_pod or host_port != 0) and host_port != container_port:
                errs.append(
                    field.invalid(
                        ctr_path.index(i).child("ports").index(j).child("hostPort"),
                        host_port,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
                )
    return errs


def _validate_dns_config(spec: dict[str, Any], dns_policy: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    config_path = path.child("dnsConfig")
    if spec.get("dnsConfig") is None:
        if dns_policy == "None":
            errs.append(
                field.required(config_path, "must provide `dnsConfig` when `dnsPolicy` is None")
            )
        return errs
    config = read_dict(spec, "dnsConfig", path, errs)
    nameservers = read_list(config, "nameservers", config_path, errs)
    if dns_policy == "None" and not nameservers:
        errs.append(
            field.required(
                config_path.child("nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            )
        )
        return errs
    if len(nameservers) > 3:
        errs.append(
            field.invalid(
                config_path.child("nameservers"),
                nameservers,
                "must not have more than 3 nameservers",
            )
        )
    options_path = config_path.child("options")
    for i, option in object_items(
        read_list(config, "options", config_path, errs), options_path, errs
    ):
        if not read_str(option, "name", options_path.index(i), errs):
            errs.append(field.required(options_path.index(i), "must not be empty"))
    return errs


def validate_pod_template_spec(template: Any, path: Path) -> list[FieldError]:
    """ValidatePodTemplateSpec: the template's labels and annotations (reported under
    `<path>.labels` as Kubernetes does) and its spec."""
    if not isinstance(template, dict):
        return [type_error(path, template, "object")]
    errs: list[FieldError] = []
    meta = read_dict(template, "metadata", path, errs)
    labels, e = string_map(meta.get("labels"), path.child("labels"))
    errs += e + validate_labels(labels, path.child("labels"))
    annotations, e = string_map(meta.get("annotations"), path.child("annotations"))
    errs += e + validate_annotations(annotations, path.child("annotations"))
    spec_path = path.child("spec")
    errs += validate_pod_spec(template.get("spec"), spec_path)
    spec = template.get("spec")
    if isinstance(spec, dict) and spec.get("ephemeralContainers"):
        errs.append(
            field.forbidden(
                spec_path.child("ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    return errs


def validate_pod_metadata_and_spec(pod: Any) -> list[FieldError]:
    """The checks a Pod gets on create and on every update."""
    return _pod_checks(pod)[0]


def _pod_checks(pod: Any) -> tuple[list[FieldError], _ValidSpec | None]:
    """validate_pod_metadata_and_spec, and what is remembered of the pod's spec when that is
    valid and can be remembered."""
    errs = validate_object_meta(pod, namespaced=True)
    if not isinstance(pod, dict):
        return errs, None
    spec = pod.get("spec")
    meta = as_dict(pod.get("metadata"))
    name = as_str(meta.get("name"))
    errs += _validate_pod_annotations(meta, spec)
    spec_errs, known = _pod_spec_errors(spec, name)
    errs += spec_errs
    if isinstance(spec, dict) and not spec.get("serviceAccountName"):
        volumes_path = SPEC.child("volumes")
        for vi, volume in object_items(read_list(spec, "volumes", SPEC, []), volumes_path, []):
            projected = volume.get("projected")
            if not isinstance(projected, dict):
                continue
            sources_path = volumes_path.index(vi).child("projected", "sources")
            for si, source in object_items(
                read_list(projected, "sources", SPEC, []), sources_path, []
            ):
                if source.get("serviceAccountToken") is not None:
                    errs.append(
                        field.forbidden(
                            sources_path.index(si).child("serviceAccountToken"),
                            "must not be specified when serviceAccountName is not set",
                        )
                    )
    return errs, known


@dataclass(slots=True)
class _ValidSpec:
    """What is remembered of a pod spec found valid: its own warnings (`spec_warnings`),
    once a create has asked for them."""

    warnings: list[str] | None = None


_valid_specs: Remembered[_ValidSpec] = Remembered(1024)
"""By the plain JSON text of a pod spec found valid (its volumes renamed, see `_spec_key`),
what is known of it: checking a spec takes ~30 us, working out its warnings ~8 us."""


def _pod_spec_errors(spec: Any, pod_name: str) -> tuple[list[FieldError], _ValidSpec | None]:
    """validate_pod_spec of a pod's spec, answered from memory for a spec found valid
    before: the checks depend on nothing else, but for the pod's name, which only its
    ephemeral volumes' checks read. With the errors, what is remembered of the spec when it
    is valid (None when it cannot be remembered)."""
    key = _spec_key(spec, pod_name)
    if key is None:
        return validate_pod_spec(spec, SPEC, is_pod=True, pod_name=pod_name), None
    known = _valid_specs.get(key)
    if known is not None:
        return [], known
    errs = validate_pod_spec(spec, SPEC, is_pod=True, pod_name=pod_name)
    if errs:
        return errs, None
    known = _ValidSpec()
    _valid_specs.put(key, known)
    return errs, known


def _spec_key(spec: Any, pod_name: str) -> bytes | tuple[bytes, str] | None:
    """What `_valid_specs` knows a spec by, None for a spec it cannot remember.

    Every pod gets a volume of its own name (the ServiceAccount admission's
    kube-api-access-<random>), mounted in each container, so a template's pods differ in
    nothing else. The checks read a volume's name only to see that it is a DNS label, unique
    and what mounts name (and, for an ephemeral volume, with the pod's name): a spec whose
    volumes have good, distinct names that every mount and device names is valid exactly when
    the same spec with its volumes named by their index is, and is known by that one's text.
    Any other spec is known by its own text (and the pod's name, with volumes). The warnings
    read no volume's or mount's name, so the specs known by one text share them too."""
    if not isinstance(spec, dict) or not spec.get("volumes"):
        return plain_json(spec)
    renamed = volumes_renamed(spec)
    if renamed is not None:
        return plain_json(renamed)
    text = plain_json(spec)
    return None if text is None else (text, pod_name)


_MOUNT_LISTS = ("volumeMounts", "volumeDevices")


def volumes_renamed(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The spec with its volumes named by their index in spec.volumes, in the volumes and in
    every container's mounts and devices; None when a name is not a good, distinct DNS label,
    a mount or device names no volume, or a volume is ephemeral (its claim's name is the pod's
    and the volume's). Shares what it does not rename with `spec`."""
    volumes = spec["volumes"]
    if not isinstance(volumes, list):
        return None
    index: dict[str, str] = {}
    for i, volume in enumerate(volumes):
        if not isinstance(volume, dict) or volume.get("ephemeral") is not None:
            return None
        name = volume.get("name")
        if not isinstance(name, str) or name in index or not is_good_dns1123_label(name):
            return None
        index[name] = str(i)
    renamed = {**spec, "volumes": [{**v, "name": index[v["name"]]} for v in volumes]}
    for list_name in ("containers", "initContainers", "ephemeralContainers"):
        containers = spec.get(list_name)
        if containers is not None:
            if not isinstance(containers, list):
                return None
            renamed_containers = [_mounts_renamed(c, index) for c in containers]
            if None in renamed_containers:
                return None
            renamed[list_name] = renamed_containers
    return renamed


def _mounts_renamed(container: Any, index: dict[str, str]) -> dict[str, Any] | None:
    """The container with the volumes its mounts and devices name renamed by `index`; None
    when one names a volume not in it."""
    if not isinstance(container, dict):
        return None
    container = dict(container)
    for mount_list in _MOUNT_LISTS:
        mounts = container.get(mount_list)
        if mounts is None:
            continue
        if not isinstance(mounts, list):
            return None
        renamed = []
        for mount in mounts:
            name = mount.get("name") if isinstance(mount, dict) else None
            if not isinstance(name, str) or name not in index:
                return None
            renamed.append({**mount, "name": index[name]})
        container[mount_list] = renamed
    return container


MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def _validate_pod_annotations(meta: dict[str, Any], spec: Any) -> list[FieldError]:
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or MIRROR_POD_ANNOTATION not in annotations:
        return []
    if isinstance(spec, dict) and spec.get("nodeName"):
        return []
    return [
        field.invalid(
            Path("metadata", "annotations").key(MIRROR_POD_ANNOTATION),
            annotations[MIRROR_POD_ANNOTATION],
            "must set spec.nodeName if mirror pod annotation is set",
        )
    ]


def validate_pod_create(pod: Any) -> list[FieldError]:
    """ValidatePodCreate."""
    return _pod_create_checks(pod)[0]


def check_pod_create(pod: Any) -> tuple[list[FieldError], list[str]]:
    """ValidatePodCreate and, for a valid pod, the strategy's WarningsOnCreate
    (`pod_warnings`), the spec looked up once for both: the warnings of a pod whose
    annotations they do not read are its name's and its spec's, and a valid spec's are
    remembered with it."""
    errs, known = _pod_create_checks(pod)
    if errs:
        return errs, []
    meta = as_dict(pod.get("metadata"))
    if known is None or reads_annotations(as_dict(meta.get("annotations"))):
        return errs, pod_warnings(pod)
    if known.warnings is None:
        known.warnings = spec_warnings(pod["spec"])
    return errs, pod_name_warnings(meta) + known.warnings


def _pod_create_checks(pod: Any) -> tuple[list[FieldError], _ValidSpec | None]:
    errs, known = _pod_checks(pod)
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return errs, known
    if spec.get("ephemeralContainers"):
        errs.append(field.forbidden(SPEC.child("ephemeralContainers"), "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(
            field.forbidden(
                SPEC.child("nodeName"), "cannot be set until all schedulingGates have been cleared"
            )
        )
    return errs, known
