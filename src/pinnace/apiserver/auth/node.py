"""The Node authorizer and the NodeRestriction admission plugin: a kubelet (user
`system:node:<name>` in group `system:nodes`) reads and writes only what concerns its own node,
as kube-apiserver v1.32's (plugin/pkg/auth/authorizer/node/node_authorizer.go with
AuthorizeNodeWithSelectors, on by default in v1.32; plugin/pkg/admission/noderestriction).

kube-apiserver keeps a graph of what the pods bound to each node reference; Pinnace derives the
same relationships on demand from the pods of the object's namespace: a node may read a pod
bound to it, and the configmaps, secrets, persistent volume claims and service accounts (their
tokens) such pods reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api import catalog, status
from pinnace.api.core.pod_shape import all_containers, as_dict, as_str, child_dict, dict_items
from pinnace.api.fieldselector import parse_field_selector
from pinnace.api.kind import Kind
from pinnace.api.labels import SelectorError
from pinnace.api.objects import Object
from pinnace.apiserver.auth.rules import Attributes, rule_allows
from pinnace.apiserver.auth.user import NODE_PREFIX, NODES_GROUP, UserInfo, requester
from pinnace.apiserver.keys import list_prefix
from pinnace.store import Store

NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


def node_identity(user: UserInfo) -> tuple[str, bool]:
    """(node name, whether the user is a node): nodes.NewDefaultNodeIdentifier."""
    if NODES_GROUP not in user.groups:
        return "", False
    if not user.name.startswith(NODE_PREFIX):
        return "", True
    return user.name[len(NODE_PREFIX) :], True


class NodeAuthorizer:
    def __init__(self, store: Store, node_rules: list[dict[str, Any]]) -> None:
        self.store = store
        self.node_rules = node_rules

    async def authorize(self, attributes: Attributes) -> tuple[bool | None, str]:
        """(True to allow, None for no opinion; the reason)."""
        node, is_node = node_identity(attributes.user)
        if not is_node:
            return None, ""
        if not node:
            return None, f'unknown node for user "{attributes.user.name}"'
        if attributes.resource_request:
            decided = await self._subdivided(node, attributes)
            if decided is not None:
                return decided
        if any(rule_allows(attributes, rule) for rule in self.node_rules):
            return True, ""
        return None, ""

    async def _subdivided(self, node: str, a: Attributes) -> tuple[bool | None, str] | None:
        group, resource = a.api_group, a.resource
        if not group and resource in ("secrets", "configmaps"):
            return await self._read_namespaced(node, resource, a)
        if not group and resource == "persistentvolumeclaims":
            if a.subresource == "status":
                if a.verb not in ("update", "patch"):
                    return None, "can only get/update/patch this type"
                return await self._related(node, resource, a)
            return await self._get(node, resource, a)
        if (group, resource) in (
            ("", "persistentvolumes"),
            ("resource.k8s.io", "resourceclaims"),
            ("storage.k8s.io", "volumeattachments"),
        ):
            return await self._get(node, resource, a)
        if not group and resource == "serviceaccounts":
            if a.verb != "create" or not a.name:
                return None, "can only create tokens for individual service accounts"
            if a.subresource != "token":
                return None, "can only create token subresource of serviceaccount"
            return await self._related(node, resource, a)
        if (group, resource) == ("coordination.k8s.io", "leases"):
            return _lease(node, a)
        if not group and resource == "nodes":
            return _node(node, a)
        if not group and resource == "pods":
            return await self._pod(node, a)
        return None

    async def _read_namespaced(
        self, node: str, resource: str, a: Attributes
    ) -> tuple[bool | None, str]:
        if a.verb not in ("get", "list", "watch"):
            return None, "can only read resources of this type"
        if a.subresource:
            return None, "cannot read subresource"
        if not a.namespace:
            return None, "can only read namespaced object of this type"
        return await self._related(node, resource, a)

    async def _get(self, node: str, resource: str, a: Attributes) -> tuple[bool | None, str]:
        if a.verb != "get":
            return None, "can only get individual resources of this type"
        if a.subresource:
            return None, "cannot get subresource"
        return await self._related(node, resource, a)

    async def _pod(self, node: str, a: Attributes) -> tuple[bool | None, str] | None:
        if not a.subresource:
            if a.verb == "get":
                return await self._get(node, "pods", a)
            if a.verb in ("list", "watch"):
                if _selects_node(a.field_selector, node):
                    return True, ""
                if a.name:
                    return await self._related(node, "pods", a)
                return None, "can only list/watch pods with spec.nodeName field selector"
            if a.verb in ("create", "delete"):
                return True, ""
        elif (a.subresource == "status" and a.verb in ("update", "patch")) or (
            a.subresource == "eviction" and a.verb == "create"
        ):
            return True, ""
        return None, ""

    async def _related(self, node: str, resource: str, a: Attributes) -> tuple[bool | None, str]:
        if not a.name:
            return None, "No Object name found"
        for pod in await self._pods_on(node, a.namespace):
            if (resource, a.name) in pod_references(pod):
                return True, ""
        return None, f"no relationship found between node '{node}' and this object"

    async def _pods_on(self, node: str, namespace: str) -> list[Object]:
        if not namespace:
            return []
        pods = catalog.kind("", "pods")
        listed = await self.store.list(list_prefix(pods, namespace))
        return [p for p in listed.items if (p.get("spec") or {}).get("nodeName") == node]


def _lease(node: str, a: Attributes) -> tuple[bool | None, str]:
    if a.verb not in ("get", "create", "update", "patch", "delete"):
        return None, "can only get, create, update, patch, or delete a node lease"
    if a.namespace != NODE_LEASE_NAMESPACE:
        return None, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
    if a.verb != "create" and a.name != node:
        return None, "can only access node lease with the same name as the requesting node"
    return True, ""


def _node(node: str, a: Attributes) -> tuple[bool | None, str]:
    if not a.subresource:
        if a.verb in ("create", "update", "patch"):
            return True, ""
        if a.verb in ("get", "list", "watch"):
            if a.name == node:
                return True, ""
            if not a.name:
                return None, f"node '{node}' cannot read all nodes, only its own Node object"
            return None, f"node '{node}' cannot read '{a.name}', only its own Node object"
    elif a.subresource == "status" and a.verb in ("update", "patch"):
        return True, ""
    return None, ""


def _selects_node(selector: str, node: str) -> bool:
    """Whether a term of the field selector is `spec.nodeName=<node>`; one that does not parse
    selects nothing."""
    try:
        terms = parse_field_selector(selector).terms
    except SelectorError:
        return False
    return ("spec.nodeName", True, node) in terms


def pod_references(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(resource, name) of what the pod uses: VisitPodSecretNames, VisitPodConfigmapNames, its
    volumes' claims and its service account; a reference of the wrong shape is skipped."""
    spec, name = as_dict(pod.get("spec")), as_str(as_dict(pod.get("metadata")).get("name"))
    found = {("pods", name)}
    found.add(("serviceaccounts", as_str(spec.get("serviceAccountName")) or "default"))
    found |= {("secrets", _name(s)) for _, s in dict_items(spec.get("imagePullSecrets"))}
    for _, _, container in all_containers(spec):
        for _, env in dict_items(container.get("env")):
            source = as_dict(env.get("valueFrom"))
            _add(found, "secrets", source.get("secretKeyRef"))
            _add(found, "configmaps", source.get("configMapKeyRef"))
        for _, env_from in dict_items(container.get("envFrom")):
            _add(found, "secrets", env_from.get("secretRef"))
            _add(found, "configmaps", env_from.get("configMapRef"))
    for _, volume in dict_items(spec.get("volumes")):
        _add(found, "secrets", volume.get("secret"), "secretName")
        _add(found, "configmaps", volume.get("configMap"))
        _add(found, "persistentvolumeclaims", volume.get("persistentVolumeClaim"), "claimName")
        if child_dict(volume, "ephemeral") is not None:
            found.add(("persistentvolumeclaims", f"{name}-{as_str(volume.get('name'))}"))
        for _, source in dict_items(as_dict(volume.get("projected")).get("sources")):
            _add(found, "secrets", source.get("secret"))
            _add(found, "configmaps", source.get("configMap"))
    return found


def _add(found: set[tuple[str, str]], resource: str, ref: Any, key: str = "name") -> None:
    """A reference that is there (an object, even without a name, as Go visits a non-nil
    pointer)."""
    if isinstance(ref, dict):
        found.add((resource, as_str(ref.get(key))))


def _name(ref: dict[str, Any]) -> str:
    return as_str(ref.get("name"))


# --- NodeRestriction ---------------------------------------------------------------------------


def admit(operation: str, kind: Kind, obj: Object, old: Object | None, subresource: str) -> None:
    """NodeRestriction: a node writes only its own Node and Lease and the pods bound to it
    (mirror pods only, when it creates one); a 403 otherwise. Others pass."""
    who = requester()
    if who is None:
        return
    node, is_node = node_identity(who.user)
    if not is_node:
        return
    m = obj.get("metadata") or {}
    name = m.get("name", "")
    if not node:
        raise status.forbidden(
            kind.plural, name, f'could not determine node from user "{who.user.name}"', kind.group
        )
    reason = _restriction(node, operation, kind, obj, old, subresource)
    if reason:
        raise status.forbidden(kind.plural, name, reason, kind.group)


def _restriction(
    node: str, operation: str, kind: Kind, obj: Object, old: Object | None, subresource: str
) -> str:
    name = (obj.get("metadata") or {}).get("name", "")
    if (kind.group, kind.plural) == ("", "nodes"):
        if name != node:
            return f'node "{node}" is not allowed to modify node "{name}"'
        taints = (obj.get("spec") or {}).get("taints")
        updated = operation == "UPDATE" and old is not None and not subresource
        if updated and old is not None and taints != (old.get("spec") or {}).get("taints"):
            return f'node "{node}" is not allowed to modify taints'
        return ""
    if (kind.group, kind.plural) == ("coordination.k8s.io", "leases"):
        if name != node:
            return "can only access node lease with the same name as the requesting node"
        return ""
    if (kind.group, kind.plural) == ("", "pods"):
        bound = ((old or obj).get("spec") or {}).get("nodeName")
        if operation == "UPDATE" and not subresource:
            return (
                f'unexpected operation "UPDATE", node "{node}" can only create and delete '
                "mirror pods"
            )
        if operation == "CREATE" and not subresource:
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if MIRROR_POD_ANNOTATION not in annotations:
                return (
                    f'pod does not have "{MIRROR_POD_ANNOTATION}" annotation, node "{node}" '
                    "can only create mirror pods"
                )
            if bound != node:
                return f'node "{node}" can only create pods with spec.nodeName set to itself'
            return ""
        if bound != node:
            if subresource == "status":
                return (
                    f'node "{node}" can only update pod status for pods with spec.nodeName '
                    "set to itself"
                )
            if subresource == "eviction":
                return f"node {node} can only evict pods with spec.nodeName set to itself"
            return f'node "{node}" can only delete pods with spec.nodeName set to itself'
    return ""
