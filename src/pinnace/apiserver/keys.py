"""Where each object lives in the store: `<group>/<plural>/<namespace>/<name>`.

The group is part of the key because two groups may serve the same plural; cluster-scoped
objects have an empty namespace segment, so every kind lists with one prefix.
"""

from __future__ import annotations

from pinnace.api.catalog import kinds
from pinnace.api.kind import Kind


def kind_prefix(kind: Kind) -> str:
    return f"{kind.group or 'core'}/{kind.plural}/"


def list_prefix(kind: Kind, namespace: str) -> str:
    """Every object of the kind, or those of one namespace when `namespace` is set."""
    if kind.namespaced and namespace:
        return f"{kind_prefix(kind)}{namespace}/"
    return kind_prefix(kind)


def object_key(kind: Kind, namespace: str, name: str) -> str:
    return f"{kind_prefix(kind)}{namespace if kind.namespaced else ''}/{name}"


ETCD_PREFIXES = {
    ("", "replicationcontrollers"): "controllers",
    ("", "endpoints"): "services/endpoints",
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("networking.k8s.io", "ingresses"): "ingress",
}
"""kube-apiserver's SpecialDefaultResourcePrefixes; every other built-in resource is stored under
its plural."""
CUSTOM_GROUPS = frozenset({"autoscaling.k8s.io"})
"""Groups Pinnace serves whose kinds are CustomResourceDefinitions in Kubernetes, which stores a
custom resource under `<group>/<plural>`."""


def etcd_resource_prefix(kind: Kind) -> str:
    """Where kube-apiserver keeps the kind's objects, under /registry/."""
    if kind.group in CUSTOM_GROUPS:
        return f"{kind.group}/{kind.plural}"
    return ETCD_PREFIXES.get((kind.group, kind.plural), kind.plural)


def etcd_key(kind: Kind, namespace: str, name: str) -> str:
    """The key kube-apiserver would store the object at, as its storage errors name it."""
    prefix = etcd_resource_prefix(kind)
    return f"/registry/{prefix}/{namespace + '/' if kind.namespaced else ''}{name}"


def etcd_resources() -> dict[str, tuple[str, bool]]:
    """For the etcd store's `KeyLayout`: each kind's store prefix, with kube-apiserver's etcd
    prefix for it (under /registry/) and whether it is namespaced."""
    return {
        kind_prefix(kind): (f"{etcd_resource_prefix(kind)}/", kind.namespaced) for kind in kinds()
    }
