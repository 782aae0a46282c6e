"""A simulated node's shape and kubelet settings: what `pinnace up --nodes N` and node pools
configure, with the kubelet's v1.32 defaults."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from pinnace.kubelet.image_service import DEFAULT_PULL_BANDWIDTH
from pinnace.kubelet.runtime import CONTAINER_LOG_MAX_FILES, CONTAINER_LOG_MAX_SIZE
from pinnace.resources.lists import ResourceList, parse_resource_list
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from pinnace.resources.node import node_allocatable

SIMULATED_LABEL = "pinnace.dev/simulated"
"""Every Node a Pinnace node agent runs carries this label with the value "true"."""

AGENT_LABEL = "pinnace.dev/agent"
"""The `pinnace agent` process (its --name-prefix) that runs a node; absent on the nodes
`pinnace up` runs. Each pool adopts only the simulated Nodes labelled as its own."""

NODE_POOL_LABEL = "pinnace.dev/node-pool"
"""The node pool of the cluster file (`pinnace up --config`) a node belongs to."""

KUBELET_VERSION = "v1.32.0"
NODE_NAME_PREFIX = "pinnace-node-"

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
"""The kubelet's nodeLeaseDurationSeconds; it renews at a quarter of it (10 s)."""
NODE_STATUS_UPDATE_FREQUENCY = 10.0
"""How often the kubelet computes its node status (nodeStatusUpdateFrequency)..."""
NODE_STATUS_REPORT_FREQUENCY = 300.0
"""...and how long it goes without posting an unchanged one (nodeStatusReportFrequency)."""
NODE_STATUS_UPDATE_RETRY = 5
"""How many times in a row the kubelet tries to post its node status (nodeStatusUpdateRetry),
each try after the first on the node read again."""
LEASE_UPDATE_RETRIES = 5
"""How many times in a row the lease controller tries to renew (maxUpdateRetries), reading the
lease again after a conflict."""
STATUS_SYNC_PERIOD = 10.0
"""The status manager's syncPeriod: a pod's status (or its final deletion) that could not be
written is tried again at its next sync, this long after."""
EVICTION_MONITORING_PERIOD = 10.0
"""How often the kubelet's eviction manager looks at the node (its housekeeping period)."""
EVICTION_PRESSURE_TRANSITION_PERIOD = 300.0
"""The kubelet's default evictionPressureTransitionPeriod (5 minutes)."""
HOUSEKEEPING_INTERVAL = 10.0
"""How often cAdvisor reads the node's containers: the kubelet's --housekeeping-interval
(pkg/kubelet/cadvisor sets cAdvisor's default to 10 s)."""

DEFAULT_CAPACITY: Mapping[str, str] = MappingProxyType(
    {CPU: "4", MEMORY: "16Gi", PODS: "110", EPHEMERAL_STORAGE: "100Gi"}
)

MACHINE_HUGEPAGE_SIZES = ("hugepages-1Gi", "hugepages-2Mi")
"""The huge page sizes of an x86-64 machine: cAdvisor lists each the kernel offers
(/sys/kernel/mm/hugepages), and the kubelet's MachineInfo setter puts each in capacity and
allocatable, 0 unless pages of that size are pre-allocated (a pool's capacity says how much)."""

_NODE_NETWORK = ipaddress.ip_network("10.0.0.0/8")
_POD_NETWORK = ipaddress.ip_network("10.128.0.0/9")


@dataclass(frozen=True)
class NodeConfig:
    """One node: its name, capacity (quantity strings, extended resources welcome), labels,
    taints and the kubelet configuration that shapes allocatable and timings.

    `index` (1-based) places the node's InternalIP and pod CIDR: node i has the i-th address
    of 10.0.0.0/8 and the i-th /24 of 10.128.0.0/9 for its pods.
    """

    name: str
    index: int = 1
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] | None = None
    """None: the kubelet's default evictionHard."""
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    """Signal -> threshold ("500Mi" or "10%"), as KubeletConfiguration.evictionSoft."""
    eviction_soft_grace_period: Mapping[str, float] = field(default_factory=dict)
    """Signal -> seconds a soft threshold must be crossed before pods are evicted."""
    eviction_max_pod_grace_period: float = 0.0
    """The most termination grace a soft eviction gives a pod (0: the pod's own)."""
    eviction_minimum_reclaim: Mapping[str, str] = field(default_factory=dict)
    """Signal -> how much beyond its threshold an eviction must reclaim."""
    eviction_pressure_transition_period: float = EVICTION_PRESSURE_TRANSITION_PERIOD
    """How long a pressure condition stays after its signal is no longer crossed."""
    pod_pids_limit: int = -1
    """The most PIDs one pod may use (-1: unlimited, as the kubelet's default)."""
    cpu_manager_policy: str = "none"
    """"none" or "static" (Guaranteed pods with integer CPU get exclusive CPUs)."""
    reserved_system_cpus: frozenset[int] = frozenset()
    """The CPUs the static CPU manager keeps out of exclusive use (reservedSystemCPUs); empty:
    the lowest-numbered ceil(kubeReserved + systemReserved cpu) CPUs."""
    images: tuple[Mapping[str, Any], ...] = ()
    """node.status.images entries ({"names": [...], "sizeBytes": N}) the node starts with."""
    image_pull_bandwidth: float = DEFAULT_PULL_BANDWIDTH
    """Bytes a second the node pulls images at (the pool's imagePullBandwidth; inf: no time)."""
    serialize_image_pulls: bool = True
    max_parallel_image_pulls: int | None = None
    """With serializeImagePulls false, the most pulls at once (None: unlimited)."""
    missing_images: tuple[str, ...] = ()
    """Images the simulated registry does not have (the cluster file's registry.missing)."""
    image_sizes: Mapping[str, int] = field(default_factory=dict)
    """Image sizes by `images.size_key` (the cluster file's registry.sizes)."""
    image_gc_high_threshold_percent: int = 85
    """Image filesystem usage at which image GC starts (imageGCHighThresholdPercent)."""
    image_gc_low_threshold_percent: int = 80
    """...and which it frees down to (imageGCLowThresholdPercent)."""
    kubelet_endpoint: tuple[str, int] | None = None
    """Where the API server reaches the node's kubelet, published as the Node's Hostname
    address and daemonEndpoints port: a `pinnace agent` process's endpoint (None: the node's
    name and port 10250, for the nodes the API server's own process runs)."""
    image_minimum_gc_age: float = 120.0
    """Seconds an image must have been on the node before GC deletes it (imageMinimumGCAge)."""
    image_maximum_gc_age: float = 0.0
    """Seconds unused after which GC deletes an image (imageMaximumGCAge; 0: never)."""
    imagefs_capacity: int | None = None
    """The bytes of a filesystem of its own for images and writable layers (the pool's
    imagefs.capacity); None: they share the node's ephemeral storage (nodefs)."""
    container_log_max_size: int = CONTAINER_LOG_MAX_SIZE
    """Bytes a container's log file grows to before it is rotated (containerLogMaxSize)."""
    container_log_max_files: int = CONTAINER_LOG_MAX_FILES
    """The most log files a container keeps, the current one included
    (containerLogMaxFiles)."""
    unknown_command_seconds: float | None = None
    """How long a program the model does not know runs in a container that is to finish (the
    cluster file's unknownCommands.runSeconds; None: `UNKNOWN_COMMAND_SECONDS`)."""
    unknown_command_exit_code: int | None = None
    """The code it then exits with (unknownCommands.exitCode; None: 0)."""
    lease_duration_seconds: int = LEASE_DURATION_SECONDS
    node_status_update_frequency: float = NODE_STATUS_UPDATE_FREQUENCY
    node_status_report_frequency: float = NODE_STATUS_REPORT_FREQUENCY

    @cached_property
    def machine_capacity(self) -> Mapping[str, Any]:
        """`capacity` with every page size of the machine, 0 where it gives none."""
        return {**dict.fromkeys(MACHINE_HUGEPAGE_SIZES, "0"), **self.capacity}

    def capacity_list(self) -> ResourceList:
        return _parsed(_capacity_list, self.machine_capacity)

    @cached_property
    def ephemeral_storage_bytes(self) -> int:
        """Its ephemeral-storage capacity (0 without one): parsed once, as the filesystem
        stats ask for it at every pass of the image garbage collector."""
        storage = self.capacity_list().get(EPHEMERAL_STORAGE)
        return storage.value() if storage is not None else 0

    def allocatable_list(self) -> ResourceList:
        return _parsed(
            node_allocatable,
            self.machine_capacity,
            self.kube_reserved,
            self.system_reserved,
            self.eviction_hard,
        )

    @property
    def lease_renew_interval(self) -> float:
        """The kubelet renews its lease every quarter of its duration (10 s by default)."""
        return self.lease_duration_seconds / 4

    @property
    def heartbeat_interval(self) -> float:
        """How often the node agent wakes: a period that divides its lease renewal, status
        update and eviction monitoring periods, so that each falls on a wake-up."""
        return common_period(
            self.lease_renew_interval,
            self.node_status_update_frequency,
            EVICTION_MONITORING_PERIOD,
        )

    @property
    def internal_ip(self) -> str:
        return str(_NODE_NETWORK[self.index])

    @cached_property
    def pod_cidr(self) -> str:
        start = int(_POD_NETWORK.network_address) + 256 * self.index
        return f"{ipaddress.IPv4Address(start)}/24"


_PARSED: dict[tuple[Any, ...], ResourceList] = {}
_PARSED_LIMIT = 256


def _parsed(parse: Callable[..., ResourceList], *amounts: Mapping[str, Any] | None) -> ResourceList:
    """A copy of `parse(*amounts)`, parsed once for equal amounts: the nodes of a pool share
    their shape, and were parsing it for each node and each of its statuses and summaries
    (0.3 ms a node at a cluster's start)."""
    try:
        key = (parse, *(None if a is None else tuple(a.items()) for a in amounts))
        parsed = _PARSED.get(key)
    except (AttributeError, TypeError):  # not maps of plain values: `parse` says what is wrong
        return parse(*amounts)
    if parsed is None:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        parsed = _PARSED[key] = parse(*amounts)
    return dict(parsed)


def _capacity_list(capacity: Mapping[str, Any]) -> ResourceList:
    return parse_resource_list(capacity, "capacity")


def common_period(*periods: float) -> float:
    """The longest period (to the millisecond) that divides each of `periods`."""
    return math.gcd(*(max(round(p * 1000), 1) for p in periods)) / 1000


def node_configs(count: int, capacity: Mapping[str, str] = DEFAULT_CAPACITY) -> list[NodeConfig]:
    """`count` nodes of one shape, named pinnace-node-1 … pinnace-node-N."""
    return [
        NodeConfig(name=f"{NODE_NAME_PREFIX}{i}", index=i, capacity=capacity)
        for i in range(1, count + 1)
    ]
