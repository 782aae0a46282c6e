"""Every kind Pinnace serves, and the lookups the API server and kubectl-style clients need:
by apiVersion and kind, by group and resource (`kind()` where the caller knows it is served),
and by any name kubectl accepts for a resource.

Kinds are loaded on first use, so importing the catalog costs nothing and no kind module has to
import it back.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache

from pinnace.api.kind import Kind

# (module, constant), in the order discovery lists them: core first, then the named groups.
_SERVED = (
    ("pinnace.api.core.binding", "BINDING"),
    ("pinnace.api.core.componentstatus", "COMPONENT_STATUS"),
    ("pinnace.api.core.configmap", "CONFIG_MAP"),
    ("pinnace.api.core.endpoints", "ENDPOINTS"),
    ("pinnace.api.core.event", "EVENT"),
    ("pinnace.api.core.limitrange", "LIMIT_RANGE"),
    ("pinnace.api.core.namespace", "NAMESPACE"),
    ("pinnace.api.core.node", "NODE"),
    ("pinnace.api.core.persistentvolume", "PERSISTENT_VOLUME_CLAIM"),
    ("pinnace.api.core.persistentvolume", "PERSISTENT_VOLUME"),
    ("pinnace.api.core.pod", "POD"),
    ("pinnace.api.core.podtemplate", "POD_TEMPLATE"),
    ("pinnace.api.core.replicationcontroller", "REPLICATION_CONTROLLER"),
    ("pinnace.api.core.resourcequota", "RESOURCE_QUOTA"),
    ("pinnace.api.core.secret", "SECRET"),
    ("pinnace.api.core.service", "SERVICE"),
    ("pinnace.api.core.serviceaccount", "SERVICE_ACCOUNT"),
    ("pinnace.api.apiextensions.crd", "CUSTOM_RESOURCE_DEFINITION"),
    ("pinnace.api.apps.controllerrevision", "CONTROLLER_REVISION"),
    ("pinnace.api.apps.daemonset", "DAEMON_SET"),
    ("pinnace.api.apps.deployment", "DEPLOYMENT"),
    ("pinnace.api.apps.replicaset", "REPLICA_SET"),
    ("pinnace.api.apps.statefulset", "STATEFUL_SET"),
    ("pinnace.api.authorization.reviews", "SELF_SUBJECT_REVIEW"),
    ("pinnace.api.authorization.reviews", "TOKEN_REVIEW"),
    ("pinnace.api.authorization.reviews", "LOCAL_SUBJECT_ACCESS_REVIEW"),
    ("pinnace.api.authorization.reviews", "SELF_SUBJECT_ACCESS_REVIEW"),
    ("pinnace.api.authorization.reviews", "SELF_SUBJECT_RULES_REVIEW"),
    ("pinnace.api.authorization.reviews", "SUBJECT_ACCESS_REVIEW"),
    ("pinnace.api.autoscaling.hpa", "HORIZONTAL_POD_AUTOSCALER"),
    ("pinnace.api.autoscaling.vpa", "VERTICAL_POD_AUTOSCALER"),
    ("pinnace.api.batch.cronjob", "CRON_JOB"),
    ("pinnace.api.certificates.csr", "CERTIFICATE_SIGNING_REQUEST"),
    ("pinnace.api.batch.job", "JOB"),
    ("pinnace.api.coordination.lease", "LEASE"),
    ("pinnace.api.discoveryk8s.endpointslice", "ENDPOINT_SLICE"),
    ("pinnace.api.networking.ingressclass", "INGRESS_CLASS"),
    ("pinnace.api.networking.ingress", "INGRESS"),
    ("pinnace.api.networking.networkpolicy", "NETWORK_POLICY"),
    ("pinnace.api.node.runtimeclass", "RUNTIME_CLASS"),
    ("pinnace.api.policy.pdb", "POD_DISRUPTION_BUDGET"),
    ("pinnace.api.rbac.kinds", "CLUSTER_ROLE_BINDING"),
    ("pinnace.api.rbac.kinds", "CLUSTER_ROLE"),
    ("pinnace.api.rbac.kinds", "ROLE_BINDING"),
    ("pinnace.api.rbac.kinds", "ROLE"),
    ("pinnace.api.scheduling.priorityclass", "PRIORITY_CLASS"),
    ("pinnace.api.storage.csi", "CSI_DRIVER"),
    ("pinnace.api.storage.csi", "CSI_NODE"),
    ("pinnace.api.storage.storageclass", "STORAGE_CLASS"),
)


@dataclass(frozen=True)
class _Index:
    kinds: tuple[Kind, ...]
    by_kind: dict[tuple[str, str], Kind]
    by_resource: dict[tuple[str, str], Kind]
    by_name: dict[str, tuple[Kind, ...]]


@cache
def _index() -> _Index:
    kinds = tuple(getattr(importlib.import_module(m), const) for m, const in _SERVED)
    by_name: dict[str, list[Kind]] = {}
    for kind in kinds:
        for name in {kind.plural, kind.singular, kind.kind.lower(), *kind.short_names}:
            by_name.setdefault(name, []).append(kind)
    return _Index(
        kinds=kinds,
        by_kind={(k.api_version, k.kind): k for k in kinds},
        by_resource={(k.group, k.plural): k for k in kinds},
        by_name={name: tuple(found) for name, found in by_name.items()},
    )


def kinds() -> tuple[Kind, ...]:
    return _index().kinds


def by_kind(api_version: str, kind: str) -> Kind | None:
    """The kind served as `kind` at `api_version` ("v1", "apps/v1")."""
    return _index().by_kind.get((api_version, kind))


def by_resource(group: str, plural: str) -> Kind | None:
    """The kind behind a URL's group and resource ("" for core, "pods")."""
    return _index().by_resource.get((group, plural))


def kind(group: str, plural: str) -> Kind:
    """The kind served at `group` and `plural`, for code that names a kind Pinnace always
    serves; a name it does not serve is a programming error, raised as LookupError."""
    found = by_resource(group, plural)
    if found is None:
        raise LookupError(f"no kind is served as {plural!r} in group {group!r}")
    return found


def resolve(name: str) -> Kind | None:
    """The kind a kubectl resource argument names: `pods`, `pod`, `po`, `Pod`,
    `deployments.apps`, `deploy.apps`, `deployments.v1.apps`. A name several groups use
    resolves to the core group's kind if it has one, else to None (ambiguous)."""
    index = _index()
    text = name.strip()
    found = index.by_name.get(text.lower(), ())
    if not found and "." in text:
        resource, _, group = text.partition(".")
        version, dot, rest = group.partition(".")
        candidates = index.by_name.get(resource.lower(), ())
        found = tuple(k for k in candidates if k.group == group)
        if not found and dot:
            found = tuple(k for k in candidates if k.group == rest and k.version == version)
    if len(found) == 1:
        return found[0]
    core = [k for k in found if not k.group]
    return core[0] if len(core) == 1 else None
