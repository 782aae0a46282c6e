"""How the node agent finds ConfigMaps, and which ones a pod's containers take environment
from (`pinnace.kubelet.environment` builds it; `pinnace.kubelet.volumes` mounts them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ConfigMapLookup = Callable[[str, str], Mapping[str, Any] | None]
"""(namespace, name) -> the ConfigMap, or None when there is none."""


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
