"""Resource names and what kind of resource each one is.

Follows the classification helpers of Kubernetes v1.32 (pkg/apis/core/helper, its v1 twin
pkg/apis/core/v1/helper, and the scheduler's scalar resources): the standard names the API
accepts without a domain, those a container or a quota may use, and those counted in whole
units. A name without a `/`, or one inside `kubernetes.io/`, is native;
a fully qualified name anywhere else (`nvidia.com/gpu`) is an extended resource.
"""

from __future__ import annotations

import re

from pinnace.resources.quantity import Quantity

__all__ = [
    "ATTACHABLE_VOLUMES_PREFIX",
    "CPU",
    "DEFAULT_NAMESPACE_PREFIX",
    "EPHEMERAL_STORAGE",
    "HUGEPAGES_PREFIX",
    "LIMITS_PREFIX",
    "MEMORY",
    "PIDS",
    "PODS",
    "REQUESTS_PREFIX",
    "STANDARD_CONTAINER_RESOURCES",
    "STANDARD_QUOTA_RESOURCES",
    "STANDARD_RESOURCES",
    "STORAGE",
    "hugepage_resource_name",
    "hugepage_size_from_resource_name",
    "is_attachable_volume_resource_name",
    "is_compressible",
    "is_extended_resource_name",
    "is_hugepage_resource_name",
    "is_integer_resource_name",
    "is_native_resource",
    "is_overcommit_allowed",
    "is_prefixed_native_resource",
    "is_quota_hugepage_resource_name",
    "is_scalar_resource",
    "is_standard_container_resource_name",
    "is_standard_quota_resource_name",
    "is_standard_resource_name",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
STORAGE = "storage"
PIDS = "pid"  # the kubelet's name for process IDs in kube-reserved / system-reserved

HUGEPAGES_PREFIX = "hugepages-"
REQUESTS_PREFIX = "requests."
LIMITS_PREFIX = "limits."
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"

STANDARD_CONTAINER_RESOURCES = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})
# Object counts a quota may limit under their plain names, counted in whole units.
_QUOTA_COUNTS = frozenset(
    {
        PODS,
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
STANDARD_QUOTA_RESOURCES = frozenset(
    {
        *STANDARD_CONTAINER_RESOURCES,
        *(REQUESTS_PREFIX + name for name in STANDARD_CONTAINER_RESOURCES),
        *(LIMITS_PREFIX + name for name in STANDARD_CONTAINER_RESOURCES),
        REQUESTS_PREFIX + STORAGE,
        *_QUOTA_COUNTS,
    }
)
STANDARD_RESOURCES = STANDARD_QUOTA_RESOURCES | {STORAGE}
"""The names without a domain the API accepts anywhere a resource is named."""

# IsQualifiedName: an optional DNS-1123 subdomain prefix, then a name of at most 63 characters.
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_prefixed_native_resource(name: str) -> bool:
    """A name in the `kubernetes.io/` domain."""
    return DEFAULT_NAMESPACE_PREFIX in name


def is_native_resource(name: str) -> bool:
    """Unqualified names (`cpu`, `hugepages-2Mi`, `requests.memory`) and `kubernetes.io/` ones."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_quota_hugepage_resource_name(name: str) -> bool:
    """`hugepages-<size>` or, as a quota names its requests, `requests.hugepages-<size>`."""
    return name.startswith((HUGEPAGES_PREFIX, REQUESTS_PREFIX + HUGEPAGES_PREFIX))


def is_standard_resource_name(name: str) -> bool:
    return name in STANDARD_RESOURCES or is_quota_hugepage_resource_name(name)


def is_standard_container_resource_name(name: str) -> bool:
    return name in STANDARD_CONTAINER_RESOURCES or is_hugepage_resource_name(name)


def is_standard_quota_resource_name(name: str) -> bool:
    return name in STANDARD_QUOTA_RESOURCES or is_quota_hugepage_resource_name(name)


def is_integer_resource_name(name: str) -> bool:
    """Resources that only come in whole units: object counts and extended resources."""
    return name in _QUOTA_COUNTS or is_extended_resource_name(name)


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith(ATTACHABLE_VOLUMES_PREFIX)


def is_extended_resource_name(name: str) -> bool:
    """A fully qualified name outside `kubernetes.io/` that ResourceQuota could also count as
    `requests.<name>` (so `requests.example.com/foo` itself is not one)."""
    if is_native_resource(name) or name.startswith(REQUESTS_PREFIX):
        return False
    return _is_qualified_name(REQUESTS_PREFIX + name)


def is_scalar_resource(name: str) -> bool:
    """Resources the scheduler keeps in Resource.ScalarResources, in whole units."""
    return (
        is_extended_resource_name(name)
        or is_hugepage_resource_name(name)
        or is_prefixed_native_resource(name)
        or is_attachable_volume_resource_name(name)
    )


def is_overcommit_allowed(name: str) -> bool:
    """Whether a container may request less than its limit. Extended resources and hugepages
    may not: their requests must equal their limits (and extended ones are whole numbers)."""
    return is_native_resource(name) and not is_hugepage_resource_name(name)


def is_compressible(name: str) -> bool:
    """CPU can be throttled back to its share; memory, storage, pids and hugepages cannot,
    so exceeding them ends in an OOM kill or an eviction."""
    return name == CPU


def hugepage_resource_name(page_size: Quantity) -> str:
    """`hugepages-2Mi` for a page size of 2Mi."""
    return f"{HUGEPAGES_PREFIX}{page_size}"


def hugepage_size_from_resource_name(name: str) -> Quantity:
    """The page size of a `hugepages-<size>` name; ValueError (a QuantityError for a bad size)
    otherwise."""
    if not is_hugepage_resource_name(name):
        raise ValueError(f"resource name: {name} is an invalid hugepage name")
    return Quantity(name.removeprefix(HUGEPAGES_PREFIX))


def _is_qualified_name(value: str) -> bool:
    prefix, slash, name = value.rpartition("/")
    if slash:
        if "/" in prefix or not prefix:
            return False
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None
