"""The `Warning` headers kube-apiserver v1.32 returns for a pod and for a workload's pod
template (pkg/api/pod/warnings.go warningsForPodSpecAndMeta, pkg/api/node/util.go for the
deprecated node labels, and the strategies' WarningsOnCreate/WarningsOnUpdate in
pkg/registry/core/pod and the template-bearing kinds' registries).

A pod is checked on create only (its strategy skips updates, a high-frequency path); a template
on create and on an update that bumps the generation. The checks read only the fields the rules
name; a new pod's spec warnings are remembered with its spec's validity by
`pod_validation.check_pod_create`. Not produced: the warnings of an ephemeral volume's claim
template (pkg/api/persistentvolumeclaim).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypedDict

from pinnace.api.core.pod_shape import as_dict, as_list, as_str
from pinnace.api.goquote import quote
from pinnace.api.names import is_dns1123_label, is_good_dns1123_label
from pinnace.resources.lists import parse_quantity

_DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": (
        'deprecated since v1.17; use "topology.kubernetes.io/region" instead'
    ),
    "failure-domain.beta.kubernetes.io/zone": (
        'deprecated since v1.17; use "topology.kubernetes.io/zone" instead'
    ),
    "beta.kubernetes.io/instance-type": (
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead'
    ),
}

_DEPRECATED_ANNOTATIONS = {
    "scheduler.alpha.kubernetes.io/critical-pod": (
        'non-functional in v1.16+; use the "priorityClassName" field instead'
    ),
    "security.alpha.kubernetes.io/sysctls": (
        'non-functional in v1.11+; use the "sysctls" field instead'
    ),
    "security.alpha.kubernetes.io/unsafe-sysctls": (
        'non-functional in v1.11+; use the "sysctls" field instead'
    ),
}

_DEPRECATED_VOLUMES = (
    ("photonPersistentDisk", "deprecated in v1.11, non-functional in v1.16+"),
    ("gitRepo", "deprecated in v1.11"),
    ("scaleIO", "deprecated in v1.16, non-functional in v1.22+"),
    ("flocker", "deprecated in v1.22, non-functional in v1.25+"),
    ("storageos", "deprecated in v1.22, non-functional in v1.25+"),
    ("quobyte", "deprecated in v1.22, non-functional in v1.25+"),
    ("glusterfs", "deprecated in v1.25, non-functional in v1.26+"),
    ("ephemeral", ""),  # its claim template's own warnings come at this point
    ("cephfs", "deprecated in v1.28, non-functional in v1.31+"),
    ("rbd", "deprecated in v1.28, non-functional in v1.31+"),
)
_DEPRECATED_VOLUME_SOURCES = frozenset(source for source, _ in _DEPRECATED_VOLUMES)
# The v1 JSON name of StorageOS is `storageos`; the message names the Go field, `storageOS`.
_VOLUME_PATH_NAMES = {"storageos": "storageOS"}

_SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
_APPARMOR_CONTAINER = "container.apparmor.security.beta.kubernetes.io/"
_SECCOMP_MESSAGE = 'non-functional in v1.27+; use the "seccompProfile" field instead'
_APPARMOR_MESSAGE = 'deprecated since v1.30; use the "appArmorProfile" field instead'
_WARNED_ANNOTATIONS = frozenset((*_DEPRECATED_ANNOTATIONS, _SECCOMP_POD))
_WARNED_ANNOTATION_PREFIXES = (_SECCOMP_CONTAINER, _APPARMOR_CONTAINER)
_NULL_SELECTOR = "a null labelSelector results in matching no pod"
_BYTE_RESOURCES = ("memory", "ephemeral-storage")
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def pod_warnings(pod: Any) -> list[str]:
    """The pod strategy's WarningsOnCreate."""
    pod = as_dict(pod)
    warnings = pod_name_warnings(as_dict(pod.get("metadata")))
    return warnings + spec_and_meta_warnings(pod, "")


def pod_name_warnings(meta: dict[str, Any]) -> list[str]:
    """The warning of a pod's name (its metadata) that is no DNS label."""
    return _name_warnings(meta, "used in the Pod's hostname")


def spec_warnings(spec: Any) -> list[str]:
    """`pod_warnings` of a pod with this spec, but for its name's, when `reads_annotations`
    says its annotations play no part."""
    return spec_and_meta_warnings({"spec": spec}, "")


def reads_annotations(annotations: dict[str, Any]) -> bool:
    """Whether the warnings of a pod or template with these annotations read any of them."""
    return any(
        key in _WARNED_ANNOTATIONS or key.startswith(_WARNED_ANNOTATION_PREFIXES)
        for key in annotations
    )


def _name_warnings(meta: dict[str, Any], use: str) -> list[str]:
    name = as_str(meta.get("name"))
    if is_good_dns1123_label(name):
        return []
    label_errors = is_dns1123_label(name)
    return [
        f"metadata.name: this is {use}, which can result in surprising behavior; a DNS label "
        f"is recommended: [{' '.join(label_errors)}]"
    ]


class TemplateWarnings(TypedDict):
    warnings_on_create: Callable[[Any], list[str]]
    warnings_on_update: Callable[[Any, Any], list[str]]


def template_warnings(
    *path: str, name: bool = False, spec: Callable[[Any], list[str]] | None = None
) -> TemplateWarnings:
    """The Kind fields warnings_on_create and warnings_on_update of a kind whose pod template
    is at `path`: on update, only a write that bumped the generation (a changed spec) is
    checked. `name`: a create also warns of a name that is not a DNS label, as the pods'
    names and hostnames are made from it (Deployment, ReplicaSet, ReplicationController, Job,
    CronJob). `spec`: the object's own warnings, ahead of its template's (a Job spec's)."""
    prefix = ".".join(path) + "."

    def template_of(obj: Any) -> dict[str, Any]:
        for step in path:
            obj = as_dict(obj).get(step)
        return as_dict(obj)

    def of_spec(obj: Any) -> list[str]:
        own = spec(obj) if spec is not None else []
        return own + spec_and_meta_warnings(template_of(obj), prefix)

    def on_create(obj: Any) -> list[str]:
        meta = as_dict(as_dict(obj).get("metadata"))
        warnings = _name_warnings(meta, "used in Pod names and hostnames") if name else []
        return warnings + of_spec(obj)

    def on_update(new: Any, old: Any) -> list[str]:
        return [] if _generation(new) == _generation(old) else of_spec(new)

    return {"warnings_on_create": on_create, "warnings_on_update": on_update}


def _generation(obj: Any) -> Any:
    return as_dict(as_dict(obj).get("metadata")).get("generation")


def spec_and_meta_warnings(obj: dict[str, Any], prefix: str) -> list[str]:
    """warningsForPodSpecAndMeta for `obj` (a pod or a template: metadata and spec), its
    field paths under `prefix` ("" for a pod, "spec.template." for a Deployment's)."""
    spec = as_dict(obj.get("spec"))
    annotations = as_dict(as_dict(obj.get("metadata")).get("annotations"))
    spec_path = prefix + "spec"
    warnings = []
    if "nodeSelector" in spec or "affinity" in spec or "topologySpreadConstraints" in spec:
        warnings += _node_label_warnings(spec, spec_path)
    if annotations:
        warnings += _annotation_warnings(annotations, prefix + "metadata.annotations")
    if spec.get("volumes"):
        warnings += _volume_warnings(as_list(spec.get("volumes")), spec_path + ".volumes")
    if "hostAliases" in spec or "imagePullSecrets" in spec:
        warnings += _duplicate_warnings(spec, spec_path)
    overhead = as_dict(spec.get("overhead"))
    for resource in _BYTE_RESOURCES:
        if resource in overhead:
            warnings += _fractional(overhead[resource], spec_path, "overhead", resource)
    security = as_dict(spec.get("securityContext"))
    if security.get("seccompProfile") is None and _SECCOMP_POD in annotations:
        warning = f"{prefix}metadata.annotations[{_SECCOMP_POD}]: {_SECCOMP_MESSAGE}"
        warnings.append(warning)
    containers = _containers(spec, spec_path)
    warnings += _container_warnings(spec, containers, annotations, prefix)
    if any("ports" in container for container, _ in containers):
        warnings += _port_warnings(containers)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        warnings.append(
            f"{spec_path}.terminationGracePeriodSeconds: must be >= 0; negative values are "
            "invalid and will be treated as 1"
        )
    if "affinity" in spec:
        affinity = as_dict(spec.get("affinity"))
        warnings += _pod_affinity_warnings(affinity, spec_path + ".affinity")
    return warnings


def _node_label_warnings(spec: dict[str, Any], spec_path: str) -> list[str]:
    warnings = []
    for key in as_dict(spec.get("nodeSelector")):
        if key in _DEPRECATED_NODE_LABELS:
            warnings.append(f"{spec_path}.nodeSelector[{key}]: {_DEPRECATED_NODE_LABELS[key]}")
    node_affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
    if node_affinity:
        path = spec_path + ".affinity.nodeAffinity"
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            terms_path = path + ".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            for i, term in enumerate(as_list(as_dict(required).get("nodeSelectorTerms"))):
                warnings += term_warnings(as_dict(term), f"{terms_path}[{i}]")
        preferred = as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
        for i, weighted in enumerate(preferred):
            term = as_dict(as_dict(weighted).get("preference"))
            term_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference"
            warnings += term_warnings(term, term_path)
    constraints_path = spec_path + ".topologySpreadConstraints"
    for i, constraint in enumerate(as_list(spec.get("topologySpreadConstraints"))):
        constraint = as_dict(constraint)
        key = as_str(constraint.get("topologyKey"))
        if key in _DEPRECATED_NODE_LABELS:
            warnings.append(
                f"{constraints_path}[{i}].topologyKey: {key} is {_DEPRECATED_NODE_LABELS[key]}"
            )
        if constraint.get("labelSelector") is None:
            warnings.append(f"{constraints_path}[{i}].labelSelector: {_NULL_SELECTOR}")
    return warnings


def term_warnings(term: dict[str, Any], path: str) -> list[str]:
    warnings = []
    for i, expression in enumerate(as_list(term.get("matchExpressions"))):
        key = as_str(as_dict(expression).get("key"))
        if key in _DEPRECATED_NODE_LABELS:
            warnings.append(
                f"{path}.matchExpressions[{i}].key: {key} is {_DEPRECATED_NODE_LABELS[key]}"
            )
    return warnings


def _annotation_warnings(annotations: dict[str, Any], path: str) -> list[str]:
    return [
        f"{path}[{key}]: {message}"
        for key, message in _DEPRECATED_ANNOTATIONS.items()
        if key in annotations
    ]


def _volume_warnings(volumes: list[Any], path: str) -> list[str]:
    warnings = []
    for i, volume in enumerate(volumes):
        volume = as_dict(volume)
        if _DEPRECATED_VOLUME_SOURCES.isdisjoint(volume):
            continue
        for source, message in _DEPRECATED_VOLUMES:
            if volume.get(source) is None:
                continue
            if message:
                name = _VOLUME_PATH_NAMES.get(source, source)
                warnings.append(f"{path}[{i}].{name}: {message}")
                continue
            claim = as_dict(volume[source]).get("volumeClaimTemplate")
            if claim is not None:
                claim_path = f"{path}[{i}].ephemeral.volumeClaimTemplate.spec"
                warnings += claim_spec_warnings(as_dict(claim).get("spec"), claim_path)
    return warnings + _token_path_warnings(volumes, path)


def claim_spec_warnings(spec: Any, path: str) -> list[str]:
    """pvcutil.GetWarningsForPersistentVolumeClaimSpec: a fractional storage request or
    limit."""
    resources = as_dict(as_dict(spec).get("resources"))
    warnings = []
    for bound in ("requests", "limits"):
        values = as_dict(resources.get(bound))
        if "storage" in values:
            warnings += _fractional(values["storage"], path, "resources", bound, "storage")
    return warnings


_PROJECTED_ITEMS = {"configMap": "configMap", "secret": "secrets", "downwardAPI": "downwardAPI"}
"""The projected sources with items, and the name each has in a warning's path."""


def _token_path_warnings(volumes: list[Any], path: str) -> list[str]:
    """Projected items that land on a service account token's path."""
    projected = [as_list(as_dict(as_dict(v).get("projected")).get("sources")) for v in volumes]
    token_paths = {
        as_str(as_dict(source.get("serviceAccountToken")).get("path"))
        for sources in projected
        for source in map(as_dict, sources)
        if source.get("serviceAccountToken") is not None
    }
    if not token_paths:
        return []
    warnings = []
    for i, sources in enumerate(projected):
        # A projection has one source each (validation), so its keys' order is the checks'.
        for source in map(as_dict, sources):
            for kind, value in source.items():
                name = _PROJECTED_ITEMS.get(kind)
                if name is not None:
                    items = as_list(as_dict(value).get("items"))
                    if items:
                        where = f"{path}[{i}].projected.sources.{name}"
                        warnings += _token_clashes(items, token_paths, where)
                elif kind == "clusterTrustBundle" and value is not None:
                    bundle_path = as_str(as_dict(value).get("path"))
                    if bundle_path in token_paths:
                        warnings.append(
                            f"{path}[{i}].projected.sources.ClusterTrustBundle: has duplicated "
                            f"path with ServiceAccountToken {quote(bundle_path)}"
                        )
    return warnings


def _token_clashes(items: list[Any], token_paths: set[str], path: str) -> list[str]:
    warnings = []
    for j, item in enumerate(items):
        item_path = as_str(as_dict(item).get("path"))
        if item_path in token_paths:
            warnings.append(
                f"{path}[{j}]: has duplicated path with ServiceAccountToken {quote(item_path)}"
            )
    return warnings


def _duplicate_warnings(spec: dict[str, Any], spec_path: str) -> list[str]:
    warnings = []
    aliases = as_list(spec.get("hostAliases"))
    if len(aliases) > 1:
        seen: set[str] = set()
        for i, alias in enumerate(aliases):
            ip = as_str(as_dict(alias).get("ip"))
            if ip in seen:
                warnings.append(f"{spec_path}.hostAliases[{i}].ip: duplicate ip {quote(ip)}")
            seen.add(ip)
    secrets = as_list(spec.get("imagePullSecrets"))
    names = [as_str(as_dict(secret).get("name")) for secret in secrets]
    if len(names) > 1:
        seen = set()
        for i, name in enumerate(names):
            if name in seen:
                path = f"{spec_path}.imagePullSecrets[{i}].name"
                warnings.append(f"{path}: duplicate name {quote(name)}")
            seen.add(name)
    for i, name in enumerate(names):
        if not name:
            warnings.append(f'{spec_path}.imagePullSecrets[{i}].name: invalid empty name ""')
    return warnings


def _fractional(value: Any, *path: str) -> list[str]:
    """The warning for a fractional byte quantity at `path`: its parent's path, then the
    field, then the key (`.field[key]`, the path built only when it is needed)."""
    shown = _fractional_text(value) if isinstance(value, str) else _fractional_value(value)
    if shown is None:
        return []
    *parents, key = path
    where = ".".join(parents) + f"[{key}]"
    return [f"{where}: fractional byte value {quote(shown)} is invalid, must be an integer"]


@functools.lru_cache(maxsize=256)
def _fractional_text(value: str) -> str | None:
    """Remembered: every pod of a workload carries the same few quantity strings."""
    return _fractional_value(value)


def _fractional_value(value: Any) -> str | None:
    """The quantity's canonical text when it is not a whole number of bytes."""
    try:
        quantity = parse_quantity(value)
    except ValueError:
        return None
    return None if quantity.milli_value() % 1000 == 0 else str(quantity)


def _containers(spec: dict[str, Any], spec_path: str) -> list[tuple[dict[str, Any], str]]:
    """pods.VisitContainersWithPath's order: init containers, containers, ephemeral ones."""
    return [
        (as_dict(container), f"{spec_path}.{group}[{i}]")
        for group in _CONTAINER_LISTS
        for i, container in enumerate(as_list(spec.get(group)))
    ]


def _container_warnings(
    spec: dict[str, Any],
    containers: list[tuple[dict[str, Any], str]],
    annotations: dict[str, Any],
    prefix: str,
) -> list[str]:
    pod_apparmor = as_dict(spec.get("securityContext")).get("appArmorProfile") is not None
    warnings = []
    for container, path in containers:
        name = as_str(container.get("name"))
        security = as_dict(container.get("securityContext"))
        if annotations:
            seccomp_key = _SECCOMP_CONTAINER + name
            if security.get("seccompProfile") is None and seccomp_key in annotations:
                warnings.append(f"{prefix}metadata.annotations[{seccomp_key}]: {_SECCOMP_MESSAGE}")
            # A pod's own AppArmor annotations are reconciled with its fields instead.
            apparmor_key = _APPARMOR_CONTAINER + name
            has_field = pod_apparmor or security.get("appArmorProfile") is not None
            if prefix and not has_field and apparmor_key in annotations:
                warning = f"{prefix}metadata.annotations[{apparmor_key}]: {_APPARMOR_MESSAGE}"
                warnings.append(warning)
        resources = as_dict(container.get("resources"))
        bounds = [(bound, as_dict(resources.get(bound))) for bound in ("limits", "requests")]
        for resource in _BYTE_RESOURCES:
            for bound, values in bounds:
                if resource in values:
                    warnings += _fractional(values[resource], path, "resources", bound, resource)
        env = as_list(container.get("env"))
        if len(env) > 1:
            warnings += _env_warnings(env, path + ".env")
    return warnings


def _env_warnings(env: list[Any], path: str) -> list[str]:
    warnings = []
    seen: set[str] = set()
    for i, var in enumerate(map(as_dict, env)):
        name = as_str(var.get("name"))
        if name not in seen:
            seen.add(name)
            continue
        ref = f"$({name})"
        value = as_str(var.get("value"))
        if var.get("valueFrom") is not None or value == ref or ref not in value:
            warnings.append(
                f"{path}[{i}]: hides previous definition of {quote(name)}, which may be dropped "
                "when using apply"
            )
    return warnings


def _port_warnings(containers: list[tuple[dict[str, Any], str]]) -> list[str]:
    warnings = []
    seen: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for container, container_path in containers:
        for i, port in enumerate(map(as_dict, as_list(container.get("ports")))):
            path = f"{container_path}.ports[{i}]"
            host_ip = as_str(port.get("hostIP"))
            host_port = port.get("hostPort") or 0
            if host_ip and not host_port:
                warnings.append(f"{path}: hostIP set without hostPort: {_go_port(port)}")
            key = f"{port.get('containerPort') or 0}/{as_str(port.get('protocol'))}"
            for other_path, other in seen.get(key, []):
                other_ip = as_str(other.get("hostIP"))
                other_port = other.get("hostPort") or 0
                if host_ip == other_ip and host_port == other_port:
                    warnings.append(f"{path}: duplicate port definition with {other_path}")
                elif not host_port or not other_port:
                    warnings.append(f"{path}: overlapping port definition with {other_path}")
                elif host_port == other_port and bool(host_ip) != bool(other_ip):
                    warning = f"{path}: dangerously ambiguous port definition with {other_path}"
                    warnings.append(warning)
            seen.setdefault(key, []).append((path, port))
    return warnings


def _go_port(port: dict[str, Any]) -> str:
    """A ContainerPort as Go's %+v prints the struct."""
    return (
        f"{{Name:{as_str(port.get('name'))} HostPort:{port.get('hostPort') or 0} "
        f"ContainerPort:{port.get('containerPort') or 0} "
        f"Protocol:{as_str(port.get('protocol'))} HostIP:{as_str(port.get('hostIP'))}}}"
    )


def _pod_affinity_warnings(affinity: dict[str, Any], path: str) -> list[str]:
    warnings = []
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = as_dict(affinity.get(kind))
        required = as_list(terms.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for i, term in enumerate(required):
            if as_dict(term).get("labelSelector") is None:
                warnings.append(
                    f"{path}.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                    f".labelSelector: {_NULL_SELECTOR}"
                )
        preferred = as_list(terms.get("preferredDuringSchedulingIgnoredDuringExecution"))
        for i, weighted in enumerate(preferred):
            term = as_dict(as_dict(weighted).get("podAffinityTerm"))
            if term.get("labelSelector") is None:
                warnings.append(
                    f"{path}.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
                    f".podAffinityTerm.labelSelector: {_NULL_SELECTOR}"
                )
    return warnings
