"""What a container needs from ConfigMaps before it can be created: every ConfigMap named by
`envFrom[].configMapRef` and every key named by `env[].valueFrom.configMapKeyRef`, unless the
reference is optional. A missing one keeps the container waiting with the reason
CreateContainerConfigError and the kubelet's message (makeEnvironmentVariables in
pkg/kubelet/kubelet_pods.go) until the ConfigMap appears.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ConfigMapLookup = Callable[[str, str], Mapping[str, Any] | None]
"""(namespace, name) -> the ConfigMap, or None when there is none."""


def config_error(
    namespace: str, container: Mapping[str, Any], lookup: ConfigMapLookup
) -> str | None:
    """Why the container cannot be created yet, or None when all it needs is there."""
    for source in container.get("envFrom") or ():
        ref = source.get("configMapRef")
        if ref is None:
            continue
        name = ref.get("name", "")
        if lookup(namespace, name) is None and not ref.get("optional"):
            return _not_found(name)
    for env in container.get("env") or ():
        ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
        if ref is None or ref.get("optional"):
            continue
        name, key = ref.get("name", ""), ref.get("key", "")
        config_map = lookup(namespace, name)
        if config_map is None:
            return _not_found(name)
        data = config_map.get("data") or {}
        binary = config_map.get("binaryData") or {}
        if key not in data and key not in binary:
            return f"couldn't find key {key} in ConfigMap {namespace}/{name}"
    return None


def referenced_config_maps(pod: Mapping[str, Any]) -> set[str]:
    """The names of the ConfigMaps the pod's containers take environment from."""
    spec = pod.get("spec") or {}
    names = set()
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or ():
            for source in c.get("envFrom") or ():
                if source.get("configMapRef"):
                    names.add(source["configMapRef"].get("name", ""))
            for env in c.get("env") or ():
                ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
                if ref:
                    names.add(ref.get("name", ""))
    return names


def _not_found(name: str) -> str:
    return f'configmap "{name}" not found'
