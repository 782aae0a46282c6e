"""The Node a kubelet registers, its status and its Lease, as the v1.32 kubelet writes them.

The kubelet splits its heartbeat in two: the Lease in kube-node-lease is renewed every 10 s
(a quarter of its 40 s duration), while the node status is computed every 10 s but posted only
when it changed or when 5 minutes (nodeStatusReportFrequency) have passed since the last post.
A condition's lastHeartbeatTime moves with every post; its lastTransitionTime only when its
status changes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pinnace.kubelet.config import (
    KUBELET_VERSION,
    NODE_LEASE_NAMESPACE,
    SIMULATED_LABEL,
    NodeConfig,
)
from pinnace.kubelet.image_service import image_size
from pinnace.kubelet.runtime import image_id, image_reference
from pinnace.resources.lists import ResourceList
from pinnace.resources.names import is_extended_resource_name
from pinnace.resources.quantity import canonical_quantity

KUBELET_PORT = 10250
CONTAINER_RUNTIME_VERSION = "pinnace-sim://0.1.0"
"""Where a real node names containerd or CRI-O: this node's containers are simulated."""
OS_IMAGE = "Pinnace simulated node"
NODE_STATUS_MAX_IMAGES = 50
"""The kubelet reports the 50 largest images (nodeStatusMaxImages)..."""
MAX_NAMES_PER_IMAGE = 5
"""...each with at most 5 of its names."""


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    event: str
    """The reason of the Event the kubelet records when the condition turns to `status`."""


def healthy_conditions() -> list[Condition]:
    """A node with no pressure whose kubelet is ready, in the kubelet's order."""
    return [
        Condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            "NodeHasSufficientMemory",
        ),
        Condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
            "NodeHasNoDiskPressure",
        ),
        Condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
            "NodeHasSufficientPID",
        ),
        Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", "NodeReady"),
    ]


PRESSURE_CONDITIONS: Mapping[str, Condition] = {
    c.type: c
    for c in (
        Condition(
            "MemoryPressure",
            "True",
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
            "NodeHasInsufficientMemory",
        ),
        Condition(
            "DiskPressure",
            "True",
            "KubeletHasDiskPressure",
            "kubelet has disk pressure",
            "NodeHasDiskPressure",
        ),
        Condition(
            "PIDPressure",
            "True",
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
            "NodeHasInsufficientPID",
        ),
    )
}
"""The conditions the eviction manager raises, by type."""


def node_conditions(pressure: Collection[str] = ()) -> list[Condition]:
    """The conditions of a ready node under the `pressure` conditions the eviction manager
    reports (MemoryPressure, DiskPressure, PIDPressure)."""
    return [PRESSURE_CONDITIONS[c.type] if c.type in pressure else c for c in healthy_conditions()]


def condition_events(conditions: list[Condition], previous: list[Mapping[str, Any]]) -> list[str]:
    """The events of the conditions that are new or changed status since `previous`."""
    before = {c.get("type"): c.get("status") for c in previous}
    return [c.event for c in conditions if before.get(c.type) != c.status]


def condition_entries(
    conditions: list[Condition], previous: list[Mapping[str, Any]], now: str
) -> list[dict[str, Any]]:
    """The conditions as status.conditions holds them, heartbeat `now`, each transition time
    kept from `previous` unless its status changed."""
    before = {c.get("type"): c for c in previous}
    entries = []
    for c in conditions:
        old = before.get(c.type)
        transition = now
        if old is not None and old.get("status") == c.status:
            transition = old.get("lastTransitionTime", now)
        entries.append(
            {
                "type": c.type,
                "status": c.status,
                "lastHeartbeatTime": now,
                "lastTransitionTime": transition,
                "reason": c.reason,
                "message": c.message,
            }
        )
    return entries


def _quantities(resources: ResourceList) -> dict[str, str]:
    """In the form the API server stores (and compares) them."""
    return {name: canonical_quantity(str(q)) for name, q in sorted(resources.items())}


def _stable_id(config: NodeConfig, what: str) -> str:
    return hashlib.sha256(f"{what}/{config.name}".encode()).hexdigest()[:32]


def node_object(config: NodeConfig, now: str) -> dict[str, Any]:
    """The Node the kubelet registers, status included."""
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": config.name,
        "kubernetes.io/os": "linux",
        SIMULATED_LABEL: "true",
        **config.labels,
    }
    spec: dict[str, Any] = {"podCIDR": config.pod_cidr, "podCIDRs": [config.pod_cidr]}
    if config.taints:
        spec["taints"] = [dict(t) for t in config.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": config.name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
        "status": node_status(static_status(config), {}, now),
    }


def node_status(
    static: Mapping[str, Any],
    current: Mapping[str, Any],
    now: str,
    pressure: Collection[str] = (),
) -> dict[str, Any]:
    """The status to post over `current` (the node's status as read; empty for a new node):
    `static_status` with the extended resources others advertised, and the conditions as of
    `now`, under the `pressure` conditions. Images all gone (collected) are images: null,
    which a merge patch removes."""
    previous = current.get("conditions") or []
    conditions = condition_entries(node_conditions(pressure), previous, now)
    gone = {"images": None} if current.get("images") and "images" not in static else {}
    return {
        **static,
        **gone,
        **advertised_resources(static, current),
        "conditions": [network_condition(previous, now), *conditions],
    }


def advertised_resources(static: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """capacity and allocatable as the kubelet's MachineInfo sets them on the node it read: an
    extended resource someone else put in its capacity (a PATCH of status.capacity, the
    documented way to advertise one) stays there unless the node has it of its own, and is
    allocatable whole (nothing is reserved of it). An extended resource gone from capacity
    leaves allocatable: null, which a merge patch removes."""
    capacity = dict(static["capacity"])
    allocatable: dict[str, str | None] = dict(static["allocatable"])
    for name, quantity in (current.get("capacity") or {}).items():
        if name not in capacity and is_extended_resource_name(name):
            capacity[name] = allocatable[name] = quantity
    for name in current.get("allocatable") or {}:
        if name not in capacity and is_extended_resource_name(name):
            allocatable[name] = None
    return {"capacity": capacity, "allocatable": allocatable}


def network_condition(previous: list[Mapping[str, Any]], now: str) -> dict[str, Any]:
    """NetworkUnavailable as the simulated pod network sets it: False once it has set the node
    up, as a network plugin (Calico's CalicoIsUp) or a cloud's route controller (RouteCreated)
    does. The kubelet does not own it, so it keeps what the node holds, heartbeat included."""
    for c in previous:
        if c.get("type") == "NetworkUnavailable":
            return dict(c)
    return {
        "type": "NetworkUnavailable",
        "status": "False",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
        "reason": "SimulatedNetworkIsUp",
        "message": "Pinnace's simulated pod network is running on this node",
    }


def static_status(config: NodeConfig, pulled: Iterable[str] = ()) -> dict[str, Any]:
    """What changes only when the node pulls an image: resources, addresses, nodeInfo, and
    the images (`config.images` and those `pulled` for containers)."""
    machine = _stable_id(config, "machine")
    images = node_images(config.images, pulled, config.image_sizes)
    host, port = config.kubelet_endpoint or (config.name, KUBELET_PORT)
    return {
        **({"images": images} if images else {}),
        "capacity": _quantities(config.capacity_list()),
        "allocatable": _quantities(config.allocatable_list()),
        "addresses": [
            {"type": "InternalIP", "address": config.internal_ip},
            {"type": "Hostname", "address": host},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": {
            "machineID": machine,
            "systemUUID": f"{machine[:8]}-{machine[8:12]}-{machine[12:16]}-{machine[16:20]}-"
            f"{machine[20:32]}",
            "bootID": _stable_id(config, "boot"),
            "kernelVersion": "6.1.0-pinnace",
            "osImage": OS_IMAGE,
            "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def node_images(
    configured: Iterable[Mapping[str, Any]],
    pulled: Iterable[str],
    sizes: Mapping[str, int] = MappingProxyType({}),
) -> list[dict[str, Any]]:
    """status.images: the node's images, largest first, as many as the kubelet reports. A
    pulled image is named by its digest and its tag, as containerd lists it."""
    images = [
        {"names": list(i["names"])[:MAX_NAMES_PER_IMAGE], "sizeBytes": i["sizeBytes"]}
        for i in configured
    ]
    known = {image_reference(name) for i in images for name in i["names"]}
    for image in pulled:
        if image_reference(image) not in known:
            known.add(image_reference(image))
            names = [image_id(image), image_reference(image)]
            images.append({"names": names, "sizeBytes": image_size(image, sizes)})
    images.sort(key=lambda i: -i["sizeBytes"])
    return images[:NODE_STATUS_MAX_IMAGES]


def lease_object(config: NodeConfig, node_uid: str, now_micro: str) -> dict[str, Any]:
    """The node's Lease, owned by its Node so it goes when the Node goes."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": config.name,
            "namespace": NODE_LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": config.name, "uid": node_uid}
            ],
        },
        "spec": {
            "holderIdentity": config.name,
            "leaseDurationSeconds": config.lease_duration_seconds,
            "renewTime": now_micro,
        },
    }
