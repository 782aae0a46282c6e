"""A container's environment as the v1.32 kubelet builds it (makeEnvironmentVariables in
pkg/kubelet/kubelet_pods.go), and `$(VAR)` expansion (third_party/forked/golang/expansion).

In order:

1. `envFrom[]`: every key of a ConfigMap's `data` (not `binaryData`, `configMapRef`) or of a
   Secret's `data`, decoded (`secretRef`), with the entry's `prefix`. Since v1.30 the kubelet no
   longer skips keys that are not C-like names (nor records InvalidEnvironmentVariableNames
   events): any such key is a valid environment variable name under the relaxed rules
   (kubernetes/kubernetes#123385, #130099).
2. `env[]` in order: a `value` has its `$(VAR)` references expanded against the variables
   defined before it (`$$` is a literal `$`; a reference to an undefined variable stays as
   written); a `valueFrom` takes a ConfigMap key (`configMapKeyRef`), a Secret key
   (`secretKeyRef`), a field of the pod (`fieldRef`: metadata.name, metadata.namespace,
   metadata.uid, metadata.labels['k'], metadata.annotations['k'], spec.nodeName,
   spec.serviceAccountName, status.hostIP(s), status.podIP(s)) or a resource of a container
   (`resourceFieldRef`: requests/limits of cpu, memory and ephemeral-storage over a divisor,
   rounded up; an unset limit is the node's allocatable). A later variable replaces an earlier
   one of the same name.

A ConfigMap, Secret or key that is missing and not optional makes the container's creation fail
with the kubelet's message (`ConfigError`; `pinnace.kubelet.sources` has the wording).

3. The Services' variables (`pinnace.kubelet.service_links`: KUBERNETES_SERVICE_HOST and
   the like), each unless a variable of the same name was declared. `$(VAR)` references in
   `env[].value` may name them.

The container's command and args have their `$(VAR)` references expanded against the result
(`expand_command`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pinnace.kubelet.service_links import ServiceLookup, no_services, service_environment
from pinnace.kubelet.sources import SOURCE_KINDS, SourceKind, SourceLookup
from pinnace.resources.lists import ResourceList, parse_quantity, parse_resource_list
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY
from pinnace.resources.quantity import Quantity

_SUBSCRIPT = re.compile(r"metadata\.(labels|annotations)\['(.*)'\]")
_DEFAULTED_LIMITS = (CPU, MEMORY, EPHEMERAL_STORAGE)


class ConfigError(Exception):
    """The container cannot be created: a ConfigMap, Secret or key it needs is missing, or a
    mount's subPathExpr does not expand to a path it may take (`pinnace.kubelet.volumes`)."""


@dataclass(frozen=True)
class NodeInfo:
    """What the environment takes from the node."""

    sources: SourceLookup
    allocatable: Callable[[], ResourceList]
    """Asked only for a resourceFieldRef of an unset limit."""
    host_ip: str
    services: ServiceLookup = no_services


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """`$(NAME)` replaced by its value when `lookup` knows it, `$$` by `$`; anything else
    (an unknown name, an unclosed reference, a lone `$`) stays as written."""
    out: list[str] = []
    i, checkpoint = 0, 0
    while i < len(text) - 1:
        if text[i] != "$":
            i += 1
            continue
        out.append(text[checkpoint:i])
        following = text[i + 1]
        if following == "$":
            out.append("$")
        elif following == "(" and (close := text.find(")", i + 2)) >= 0:
            name = text[i + 2 : close]
            value = lookup(name)
            out.append(f"$({name})" if value is None else value)
            i = close - 1
        else:
            out.append("$" + following)
        i += 2
        checkpoint = i
    return "".join(out) + text[checkpoint:]


def expand_command(argv: Sequence[str], variables: Mapping[str, str]) -> list[str]:
    """The command or args with their `$(VAR)` references expanded, as the kubelet passes
    them to the runtime."""
    return [expand(word, variables.get) for word in argv]


def may_fail(container: Mapping[str, Any]) -> bool:
    """Whether making `container`'s environment can raise ConfigError: only an `envFrom` or a
    `valueFrom` reads what may be missing or unsupported (a `value` and the Services'
    variables never fail)."""
    return bool(container.get("envFrom")) or any(
        var.get("valueFrom") for var in container.get("env") or ()
    )


def container_environment(
    pod: Mapping[str, Any], container: Mapping[str, Any], node: NodeInfo, pod_ip: str
) -> dict[str, str]:
    """The environment of `container` of `pod`, in order. Raises ConfigError."""
    namespace = pod["metadata"].get("namespace", "")
    found: dict[tuple[str, str], Mapping[str, Any]] = {}

    def source(kind: SourceKind, name: str, optional: bool) -> Mapping[str, Any] | None:
        """The values of a ConfigMap or Secret; None when it is optional and missing."""
        if (kind.resource, name) not in found:
            got = node.sources(kind, namespace, name)
            if got is None:
                if optional:
                    return None
                raise ConfigError(kind.not_found(name))
            found[kind.resource, name] = kind.env_values(got)
        return found[kind.resource, name]

    variables: dict[str, str] = {}
    service_variables = service_environment(pod, node.services)

    def lookup(name: str) -> str | None:
        declared = variables.get(name)
        return service_variables.get(name) if declared is None else declared

    for entry in container.get("envFrom") or ():
        for kind in SOURCE_KINDS:
            ref = entry.get(kind.env_from_ref)
            if ref is None:
                continue
            values = source(kind, ref.get("name", ""), bool(ref.get("optional")))
            if values is not None:
                prefix = entry.get("prefix") or ""
                variables.update((prefix + key, value) for key, value in values.items())
    for var in container.get("env") or ():
        value = var.get("value") or ""
        value_from = var.get("valueFrom")
        if value:
            value = expand(value, lookup)
        elif value_from:
            resolved = _value_from(value_from, pod, container, node, pod_ip, source)
            if resolved is None:
                continue
            value = resolved
        variables[var["name"]] = value
    for name, value in service_variables.items():
        variables.setdefault(name, value)
    return variables


def _value_from(
    value_from: Mapping[str, Any],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    node: NodeInfo,
    pod_ip: str,
    source: Callable[[SourceKind, str, bool], Mapping[str, Any] | None],
) -> str | None:
    """The value of one valueFrom; None when an optional source or key is missing."""
    if "fieldRef" in value_from:
        return _field_value(value_from["fieldRef"].get("fieldPath", ""), pod, node, pod_ip)
    if "resourceFieldRef" in value_from:
        selector = value_from["resourceFieldRef"]
        return resource_field_value(selector, pod, container, node.allocatable)
    for kind in SOURCE_KINDS:
        ref = value_from.get(kind.env_ref)
        if ref is None:
            continue
        name, key, optional = ref.get("name", ""), ref.get("key", ""), bool(ref.get("optional"))
        values = source(kind, name, optional)
        if values is None:
            return None
        value = values.get(key)
        if value is None and not optional:
            namespace = pod["metadata"].get("namespace", "")
            raise ConfigError(f"couldn't find key {key} in {kind.kind} {namespace}/{name}")
        return value
    return ""


def _field_value(path: str, pod: Mapping[str, Any], node: NodeInfo, pod_ip: str) -> str:
    m, spec = pod["metadata"], pod.get("spec") or {}
    simple = {
        "metadata.name": m.get("name", ""),
        "metadata.namespace": m.get("namespace", ""),
        "metadata.uid": m.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.hostIP": node.host_ip,
        "status.hostIPs": node.host_ip,
        "status.podIP": pod_ip,
        "status.podIPs": pod_ip,
    }
    if path in simple:
        return simple[path]
    subscript = _SUBSCRIPT.fullmatch(path)
    if subscript is None:
        raise ConfigError(f"unsupported fieldPath: {path}")
    return (m.get(subscript.group(1)) or {}).get(subscript.group(2), "")


def resource_field_value(
    selector: Mapping[str, Any],
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    allocatable: Callable[[], ResourceList],
) -> str:
    """ExtractContainerResourceValue on the container `selector` names (else `container`)
    with its limits defaulted to the node's `allocatable` (defaultPodLimitsForDownwardAPI).
    Raises ConfigError for a resource it does not give."""
    named = selector.get("containerName")
    if named:
        spec = pod.get("spec") or {}
        every = (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))
        container = next((c for c in every if c.get("name") == named), container)
    resources = container.get("resources") or {}
    limits = parse_resource_list(resources.get("limits") or {})
    # the API server defaults a missing request to the limit
    requests = {**limits, **parse_resource_list(resources.get("requests") or {})}
    unset = [n for n in _DEFAULTED_LIMITS if n not in limits or limits[n].is_zero()]
    node = allocatable() if unset else {}
    limits.update({n: node[n] for n in unset if n in node})
    kind, _, resource = str(selector.get("resource", "")).partition(".")
    table = {"limits": limits, "requests": requests}.get(kind)
    if table is None or resource not in _DEFAULTED_LIMITS:
        raise ConfigError(f"unsupported container resource : {selector.get('resource')}")
    divisor = parse_quantity(selector.get("divisor") or "1")
    if divisor.is_zero():
        divisor = Quantity(1)
    amount = table.get(resource, Quantity(0))
    if resource == CPU:
        return str(math.ceil(amount.milli_value() / divisor.milli_value()))
    return str(math.ceil(amount.value() / divisor.value()))
