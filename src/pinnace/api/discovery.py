"""The discovery documents kube-apiserver v1.32 serves, built from the catalog of kinds.

kubectl 1.32 asks /api and /apis first for the aggregated form
(`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, then v2beta1,
then plain JSON) and falls back to the legacy documents: /api (APIVersions), /apis
(APIGroupList), /apis/<group> (APIGroup), and /api/v1 or /apis/<group>/<version>
(APIResourceList). `/version` is here too.

Field layouts, ordering (groups by kube-apiserver's priority, resources and verbs sorted) and
the quirks are v1.32's: a main resource's responseKind has an empty group and version, which
only a subresource served as another group's kind (pods/eviction, deployments/scale) fills.
"""

from __future__ import annotations

import base64
import hashlib
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pinnace.api import catalog
from pinnace.api.kind import Kind

AGGREGATED_GROUP = "apidiscovery.k8s.io"
AGGREGATED_KIND = "APIGroupDiscoveryList"
AGGREGATED_VERSIONS = ("v2", "v2beta1")

KUBERNETES_VERSION = (1, 32, 0)
GIT_VERSION = "v1.32.0+pinnace"
"""What /version reports. Build metadata (`+pinnace`) marks the server as Pinnace without
changing its semantic version: a pre-release suffix (`-pinnace`) would sort below v1.32.0 for
clients that compare versions, while kubectl's skew check reads only major and minor."""

# kube-apiserver's group priority (pkg/controlplane/apiserver/aggregator.go), first first.
GROUP_ORDER = (
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "resource.k8s.io",
    "storagemigration.k8s.io",
)


@dataclass(frozen=True)
class Subresource:
    """What a subresource accepts and returns, and its verbs. An empty kind means the parent's
    kind; an empty group means the parent's group and version."""

    verbs: tuple[str, ...]
    kind: str = ""
    group: str = ""
    version: str = ""


_PROXY_VERBS = ("create", "delete", "get", "patch", "update")
SUBRESOURCES: dict[str, Subresource] = {
    "status": Subresource(("get", "patch", "update")),
    "approval": Subresource(("get", "patch", "update")),
    "scale": Subresource(("get", "patch", "update"), "Scale", "autoscaling", "v1"),
    "binding": Subresource(("create",), "Binding"),
    "eviction": Subresource(("create",), "Eviction", "policy", "v1"),
    "log": Subresource(("get",)),
    "ephemeralcontainers": Subresource(("get", "patch", "update")),
    "resize": Subresource(("get", "patch", "update")),
    "exec": Subresource(("create", "get"), "PodExecOptions"),
    "attach": Subresource(("create", "get"), "PodAttachOptions"),
    "portforward": Subresource(("create", "get"), "PodPortForwardOptions"),
    "proxy": Subresource(_PROXY_VERBS, "{Kind}ProxyOptions"),
    "finalize": Subresource(("update",)),
    "token": Subresource(("create",), "TokenRequest", "authentication.k8s.io", "v1"),
}
"""Every subresource kube-apiserver v1.32 serves for the kinds Pinnace has."""


def subresource(kind: Kind, name: str) -> Subresource:
    """The subresource `name` of `kind`, with its kind and group filled in."""
    known = SUBRESOURCES[name]
    return Subresource(
        tuple(sorted(known.verbs)),
        known.kind.replace("{Kind}", kind.kind) or kind.kind,
        known.group if known.group and known.group != kind.group else "",
        known.version if known.group and known.group != kind.group else "",
    )


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """discovery.StorageVersionHash: 8 bytes of sha256("group/version/kind"), base64."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def is_stored(kind: Kind) -> bool:
    """Whether objects of `kind` are kept in storage: not one only ever created (Binding, the
    reviews), nor one never created (ComponentStatus, checked at each read), nor an adapter's
    metrics."""
    return set(kind.verbs) > {"create"} and not _from_adapter(kind)


def _from_adapter(kind: Kind) -> bool:
    """A resource a metrics adapter lists (`pods/http_requests_per_second`): it has no schema
    of its own, and custom-metrics-apiserver gives it no singular name."""
    return not kind.model


def _kinds(kinds: Iterable[Kind] | None) -> list[Kind]:
    return list(catalog.kinds() if kinds is None else kinds)


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version order: GA before beta before alpha, higher numbers first."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0)
    stability = {"": 0, "beta": 1, "alpha": 2}[match.group(2) or ""]
    return (stability, -int(match.group(1)), -int(match.group(3) or 0))


def _group_priority(group: str) -> tuple[int, str]:
    return (GROUP_ORDER.index(group), "") if group in GROUP_ORDER else (len(GROUP_ORDER), group)


def served_groups(kinds: Iterable[Kind] | None = None) -> list[tuple[str, list[str]]]:
    """[(group, [versions, preferred first])] in kube-apiserver's order; "" is the core group."""
    versions: dict[str, set[str]] = {}
    for kind in _kinds(kinds):
        versions.setdefault(kind.group, set()).add(kind.version)
    return [
        (group, sorted(versions[group], key=version_priority))
        for group in sorted(versions, key=_group_priority)
    ]


def _kinds_at(kinds: Iterable[Kind] | None, group: str, version: str) -> list[Kind]:
    found = [k for k in _kinds(kinds) if (k.group, k.version) == (group, version)]
    return sorted(found, key=lambda k: k.plural)


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


# --- legacy discovery -----------------------------------------------------------------------


def api_resources(kind: Kind) -> list[dict[str, Any]]:
    """The APIResource entries of `kind`: the resource, then its subresources by name."""
    main: dict[str, Any] = {
        "name": kind.plural,
        "singularName": "" if _from_adapter(kind) else kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": sorted(kind.verbs),
    }
    if kind.short_names:
        main["shortNames"] = list(kind.short_names)
    if kind.categories:
        main["categories"] = list(kind.categories)
    if is_stored(kind):
        main["storageVersionHash"] = storage_version_hash(kind.group, kind.version, kind.kind)
    entries = [main]
    for name in sorted(kind.subresources):
        sub = subresource(kind, name)
        entry: dict[str, Any] = {
            "name": f"{kind.plural}/{name}",
            "singularName": "",
            "namespaced": kind.namespaced,
        }
        if sub.group:
            entry |= {"group": sub.group, "version": sub.version}
        entries.append(entry | {"kind": sub.kind, "verbs": list(sub.verbs)})
    return entries


def api_versions(server_address: str) -> dict[str, Any]:
    """/api: the core group's versions and the address clients in any network reach."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _api_group(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(kinds: Iterable[Kind] | None = None) -> dict[str, Any]:
    """/apis: every named group with its versions."""
    groups = [_api_group(g, versions) for g, versions in served_groups(kinds) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, kinds: Iterable[Kind] | None = None) -> dict[str, Any] | None:
    """/apis/<group>, or None for a group Pinnace does not serve."""
    for name, versions in served_groups(kinds):
        if name == group and group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_api_group(group, versions)}
    return None


def api_resource_list(
    group: str, version: str, kinds: Iterable[Kind] | None = None
) -> dict[str, Any] | None:
    """/api/v1 or /apis/<group>/<version>, or None for a group version not served."""
    served = _kinds_at(kinds, group, version)
    if not served:
        return None
    resources = [entry for kind in served for entry in api_resources(kind)]
    head: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        head["apiVersion"] = "v1"  # /api/v1 leaves it out
    return head | {"groupVersion": _group_version(group, version), "resources": resources}


# --- aggregated discovery -------------------------------------------------------------------


def _response_kind(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def resource_discovery(kind: Kind) -> dict[str, Any]:
    """The APIResourceDiscovery entry of `kind`, its subresources inside."""
    entry: dict[str, Any] = {
        "resource": kind.plural,
        "responseKind": _response_kind("", "", kind.kind),
        "scope": "Namespaced" if kind.namespaced else "Cluster",
        "singularResource": "" if _from_adapter(kind) else kind.singular,
        "verbs": sorted(kind.verbs),
    }
    if kind.short_names:
        entry["shortNames"] = list(kind.short_names)
    if kind.categories:
        entry["categories"] = list(kind.categories)
    subresources = []
    for name in sorted(kind.subresources):
        sub = subresource(kind, name)
        subresources.append(
            {
                "subresource": name,
                "responseKind": _response_kind(sub.group, sub.version, sub.kind),
                "verbs": list(sub.verbs),
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry


def _group_discovery(group: str, versions: list[str], kinds: list[Kind]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": group} if group else {}
    return {
        "metadata": metadata | {"creationTimestamp": None},
        "versions": [
            {
                "version": version,
                "resources": [resource_discovery(k) for k in _kinds_at(kinds, group, version)],
                "freshness": "Current",
            }
            for version in versions
        ],
    }


def aggregated_discovery(
    core: bool, kinds: Iterable[Kind] | None = None, *, version: str = "v2"
) -> dict[str, Any]:
    """The APIGroupDiscoveryList of /api (`core`) or /apis, as apidiscovery.k8s.io/`version`
    ("v2" or "v2beta1", which share one layout)."""
    if version not in AGGREGATED_VERSIONS:
        raise ValueError(f"unknown aggregated discovery version {version!r}")
    every = _kinds(kinds)
    items = [
        _group_discovery(group, versions, every)
        for group, versions in served_groups(every)
        if (group == "") == core
    ]
    return {
        "kind": AGGREGATED_KIND,
        "apiVersion": f"{AGGREGATED_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


# --- /version ---------------------------------------------------------------------------------


def version_info(*, git_commit: str = "", build_date: str = "") -> dict[str, str]:
    """/version: version.Info with Kubernetes' version numbers and Pinnace's build."""
    major, minor, _ = KUBERNETES_VERSION
    return {
        "major": str(major),
        "minor": str(minor),
        "gitVersion": GIT_VERSION,
        "gitCommit": git_commit,
        "gitTreeState": "clean" if git_commit else "",
        "buildDate": build_date,
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{_machine()}",
    }


def _machine() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
