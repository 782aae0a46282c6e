"""What the scheduler reads from a pod, parsed once when the pod enters the scheduler
(kube-scheduler's PodInfo): effective requests as the scheduler's integers, tolerations, host
ports, images, priority, scheduling gates and the claims of its volumes. Plugins read these
instead of the pod's JSON.

Requests come from `pinnace.resources` (PodRequests with sidecars and overhead, and the
resources a pod being resized in place runs with); the
resources kept are the ones kube-scheduler's `framework.Resource` holds: cpu (millicores),
memory, ephemeral-storage and the scalar resources (extended, hugepages, `kubernetes.io/`
prefixed, attachable volumes), in whole units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pinnace.api.objects import Shared
from pinnace.resources.lists import scheduler_value
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from pinnace.resources.pod import (
    pod_non_zero_requests,
    pod_requests,
    spec_resources_key,
    value_key,
)
from pinnace.resources.quantity import Quantity
from pinnace.scheduling.hostports import HostPort, pod_host_ports
from pinnace.scheduling.taints import Toleration, pod_tolerations
from pinnace.scheduling.volumes import pod_claims

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(slots=True)
class PodInfo:
    """A pod as the scheduler sees it. `pod` is the decoded JSON object itself."""

    pod: Mapping[str, Any]
    key: str  # namespace/name
    namespace: str
    name: str
    uid: str
    node_name: str
    scheduler_name: str
    priority: int
    requests: Mapping[str, int]  # non-zero effective requests the scheduler tracks (shared)
    non_zero_cpu: int  # millicores, a missing request counting as 100m per container
    non_zero_memory: int  # bytes, a missing request counting as 200Mi per container
    tolerations: tuple[Toleration, ...]
    host_ports: tuple[HostPort, ...]
    images: tuple[str, ...]  # init then app containers, normalised with ":latest"
    scheduling_gates: tuple[str, ...]
    labels: Mapping[str, str]
    claims: tuple[tuple[str, bool], ...]
    """The claims its volumes use, each with whether an ephemeral volume's (`pod_claims`)."""
    deleting: bool  # metadata.deletionTimestamp is set
    pod_affinity: bool  # it has podAffinity or podAntiAffinity (`pod_affinity_terms`)

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> PodInfo:
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        namespace = meta.get("namespace") or "default"
        name = meta.get("name") or ""
        requests, non_zero_cpu, non_zero_memory = _requests(pod)
        return cls(
            pod=pod,
            key=f"{namespace}/{name}",
            namespace=namespace,
            name=name,
            uid=meta.get("uid") or "",
            node_name=spec.get("nodeName") or "",
            scheduler_name=spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME,
            priority=int(spec.get("priority") or 0),
            requests=requests,
            non_zero_cpu=non_zero_cpu,
            non_zero_memory=non_zero_memory,
            tolerations=pod_tolerations(spec),
            host_ports=pod_host_ports(spec),
            images=_images(spec),
            scheduling_gates=tuple([g.get("name", "") for g in spec.get("schedulingGates") or ()]),
            labels=meta.get("labels") or {},
            claims=tuple(pod_claims(pod)) if spec.get("volumes") else (),
            deleting=bool(meta.get("deletionTimestamp")),
            pod_affinity=_has_pod_affinity(spec),
        )

    def updated(self, pod: Mapping[str, Any]) -> PodInfo:
        """`from_pod` of a newer version of this pod: what was read from this one is kept
        when what it was read from is unchanged, as a binding leaves it (spec.nodeName and a
        status condition are all it sets)."""
        if not _read_alike(self.pod, pod):
            return PodInfo.from_pod(pod)
        return PodInfo(
            pod=pod,
            key=self.key,
            namespace=self.namespace,
            name=self.name,
            uid=self.uid,
            node_name=(pod.get("spec") or {}).get("nodeName") or "",
            scheduler_name=self.scheduler_name,
            priority=self.priority,
            requests=self.requests,
            non_zero_cpu=self.non_zero_cpu,
            non_zero_memory=self.non_zero_memory,
            tolerations=self.tolerations,
            host_ports=self.host_ports,
            images=self.images,
            scheduling_gates=self.scheduling_gates,
            labels=self.labels,
            claims=self.claims,
            deleting=self.deleting,
            pod_affinity=self.pod_affinity,
        )

    @property
    def claim_names(self) -> list[str]:
        """The claims its persistentVolumeClaim volumes name (`pod_claim_names`)."""
        return [name for name, ephemeral in self.claims if not ephemeral]

    @property
    def all_claim_names(self) -> list[str]:
        """Every claim its volumes use (`pod_all_claim_names`)."""
        return [name for name, _ in self.claims]


def pod_key(pod: Mapping[str, Any]) -> str:
    """The `key` of the pod's PodInfo."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


_READ_METADATA = ("namespace", "name", "uid", "labels", "deletionTimestamp")
_READ_SPEC = (
    "affinity",
    "containers",
    "initContainers",
    "overhead",
    "tolerations",
    "schedulerName",
    "priority",
    "schedulingGates",
    "volumes",
)
"""What `from_pod` reads of a pod's metadata and spec; of its status, `_running` and the
resize it reads only with them."""


def _read_alike(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether `from_pod` reads the same of both pods, but for spec.nodeName: a status
    change reaches it only through what the containers run with (the kubelet's updates of
    their state, the pod's phase and conditions leave it alone)."""
    if not (
        _alike(old.get("metadata"), new.get("metadata"), _READ_METADATA)
        and _alike(old.get("spec"), new.get("spec"), _READ_SPEC)
    ):
        return False
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    running = _running(old_status)
    return running == _running(new_status) and (
        not running or old_status.get("resize") == new_status.get("resize")
    )


def _alike(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, keys: tuple[str, ...]
) -> bool:
    old, new = old or {}, new or {}
    # A loop, not a generator: every update of a pod comes here. A write shares what it
    # leaves unchanged: the same object needs no walk.
    for k in keys:
        a, b = old.get(k), new.get(k)
        if a is not b and a != b:
            return False
    return True


def _has_pod_affinity(spec: Mapping[str, Any]) -> bool:
    affinity = spec.get("affinity") or {}
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


def normalized_image_name(name: str) -> str:
    """An image without a tag means `:latest` (ImageLocality's normalizedImageName)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _images(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The images of the init then app containers, normalised (a pod's few images are the
    same few across its workload's pods: each is normalised once)."""
    return tuple(
        [
            _NORMALIZED_IMAGES[container.get("image") or ""]
            for group in _CONTAINER_GROUPS
            for container in spec.get(group) or ()
        ]
    )


_CONTAINER_GROUPS = ("initContainers", "containers")
_NORMALIZED_IMAGES: Shared[str, str] = Shared(normalized_image_name, 4096)


# Pods stamped from one template share their resources; parsing quantities is the costly part
# of reading a pod, so each distinct resources section is parsed once.
_REQUESTS_CACHE: dict[bytes, tuple[Mapping[str, int], int, int]] = {}
_REQUESTS_CACHE_LIMIT = 4096


def _running(status: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(name, resources) of the containers the status shows the resources of."""
    if not status.get("containerStatuses"):
        return []  # a pending pod's, as every pod the scheduler binds
    return [
        (s.get("name"), s.get("resources"))
        for s in status.get("containerStatuses") or ()
        if s.get("resources") is not None
    ]


def _requests(pod: Mapping[str, Any]) -> tuple[Mapping[str, int], int, int]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    # A pod being resized in place counts what its status shows its containers run with too
    # (v1.32's PodRequests with UseStatusResources, set while InPlacePodVerticalScaling is
    # on): the API server keeps those fields out of pods while the gate is off.
    running = _running(status)
    shape = spec_resources_key(pod)
    if running:
        names = [c.get("name") for c in spec.get("containers") or ()]
        shape += value_key((names, running, status.get("resize")))
    cached = _REQUESTS_CACHE.get(shape)
    if cached is None:
        # Read-only and shared by every pod of the shape: a node agent keeps one per pod.
        requests = MappingProxyType(
            {
                name: value
                for name, q in pod_requests(pod, use_status_resources=True).items()
                if (name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name))
                and (value := scheduler_value(name, q)) != 0
            }
        )
        non_zero = pod_non_zero_requests(pod, use_status_resources=True)
        cached = (
            requests,
            scheduler_value(CPU, non_zero.get(CPU, Quantity(0))),
            scheduler_value(MEMORY, non_zero.get(MEMORY, Quantity(0))),
        )
        if len(_REQUESTS_CACHE) >= _REQUESTS_CACHE_LIMIT:
            _REQUESTS_CACHE.clear()
        _REQUESTS_CACHE[shape] = cached
    return cached
