"""The service storage's allocations, as kube-apiserver v1.32 makes them
(pkg/registry/core/service/storage/alloc.go, ipallocator and portallocator with their
bitmap ranges): IP families and cluster IPs from the service CIDR, node ports from the node
port range, all given back when a Service no longer needs them or is deleted.

What is allocated is derived from the stored Services when first needed (kube-apiserver keeps
a bitmap in etcd, repaired from the Services by a controller; Pinnace's only writer is this
server, so the Services themselves are the record). An allocation is made before validation
and storage, and given back if either refuses the write; a release waits until the write
that stops using the value is stored.

Dynamic allocations prefer the upper part of each range and fall back to the lower part,
which stays for values asked for by name (ServiceIPStaticSubrange and
ServiceNodePortStaticSubrange, on in v1.32): a random free value from offset to the end first.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pinnace.api import field, status
from pinnace.api.core.service import (
    CLUSTER_IP_NONE,
    LOAD_BALANCER,
    NODE_PORT,
    SERVICE,
    is_headless,
    needs_cluster_ip,
    needs_node_port,
    normalize_cluster_ips,
    patch_allocated_values,
    validate_cluster_ip_fields,
)
from pinnace.api.field import FieldError, Path
from pinnace.api.objects import Object
from pinnace.api.validation import go_slice
from pinnace.apiserver.keys import list_prefix
from pinnace.store import Store

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
"""kubeadm's --service-cluster-ip-range."""
DEFAULT_NODE_PORT_RANGE = (30000, 32767)
"""kube-apiserver's --service-node-port-range."""

DEFAULT_ADVERTISE_ADDRESS = "192.0.2.1"
"""The address the `kubernetes` Service's endpoints name: a documentation address (RFC 5737),
as no traffic reaches the API server through a Service in Pinnace."""
DEFAULT_SECURE_PORT = 6443


@dataclass(frozen=True)
class ServiceNetwork:
    """kube-apiserver's --service-cluster-ip-range, --service-node-port-range,
    --advertise-address and --secure-port."""

    cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    node_port_range: tuple[int, int] = DEFAULT_NODE_PORT_RANGE
    advertise_address: str = DEFAULT_ADVERTISE_ADDRESS
    secure_port: int = DEFAULT_SECURE_PORT


Finish = Callable[[bool], None]
"""Called once the write is stored (True) or refused (False)."""
_DUAL_STACK_ONLY = "must be 'RequireDualStack' or 'PreferDualStack' when multiple "


class AllocationError(Exception):
    pass


class _Range:
    """A bitmap allocator over `size` values from `base`, with kube-apiserver's offset
    strategy for dynamic allocations."""

    def __init__(self, size: int, offset: int, rand: random.Random) -> None:
        self.size = size
        self.offset = offset
        self.used: set[int] = set()
        self._rand = rand

    def allocate(self, index: int, what: str) -> None:
        if index in self.used:
            raise AllocationError(f"provided {what} is already allocated")
        self.used.add(index)

    def allocate_next(self) -> int:
        if len(self.used) >= self.size:
            raise AllocationError("range is full")
        for low, high in ((self.offset, self.size), (0, self.offset)):
            span = high - low
            if span <= 0:
                continue
            start = self._rand.randrange(span)
            for i in range(span):
                at = low + (start + i) % span
                if at not in self.used:
                    self.used.add(at)
                    return at
        raise AllocationError("range is full")

    def release(self, index: int) -> None:
        self.used.discard(index)


def _offset(size: int, low: int, high: int, step: int) -> int:
    """calculateRangeOffset: how much of the start of a range static requests keep."""
    if size <= low:
        return 0
    return min(max(size // step, low), high)


class ClusterIPs:
    """The IPs of one service CIDR, less its network and broadcast addresses (IPv4)."""

    def __init__(self, cidr: str, rand: random.Random) -> None:
        self.network = ipaddress.ip_network(cidr)
        self.family = "IPv6" if self.network.version == 6 else "IPv4"
        total = self.network.num_addresses
        # The bitmap of an IPv6 range is capped at 2^16; an IPv4 range loses its broadcast.
        size = total - 2 if self.network.version == 4 else min(total, 1 << 16) - 1
        self._base = int(self.network.network_address) + 1
        self._range = _Range(size, _offset(total, 16, 256, 16), rand)

    def _index(self, ip: str) -> int:
        index = int(ipaddress.ip_address(ip)) - self._base
        if not 0 <= index < self._range.size:
            raise AllocationError(
                f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is "
                f"{self.network}"
            )
        return index

    def allocate(self, ip: str) -> None:
        self._range.allocate(self._index(ip), "IP")

    def allocate_next(self) -> str:
        return str(ipaddress.ip_address(self._base + self._range.allocate_next()))

    def release(self, ip: str) -> None:
        with contextlib.suppress(AllocationError):  # never allocated from this range
            self._range.release(self._index(ip))

    def mark(self, ip: str) -> None:
        """Record a stored Service's IP, whatever the range says of it."""
        with contextlib.suppress(AllocationError, ValueError):
            self._range.used.add(self._index(ip))

    def first(self) -> str:
        return str(ipaddress.ip_address(self._base))


class NodePorts:
    def __init__(self, low: int, high: int, rand: random.Random) -> None:
        self.low, self.high = low, high
        size = high - low + 1
        self._range = _Range(size, _offset(size, 16, 128, 32), rand)

    def _index(self, port: int) -> int:
        if not self.low <= port <= self.high:
            raise AllocationError(
                "provided port is not in the valid range. The range of valid ports is "
                f"{self.low}-{self.high}"
            )
        return port - self.low

    def allocate(self, port: int) -> None:
        self._range.allocate(self._index(port), "port")

    def allocate_next(self) -> int:
        return self.low + self._range.allocate_next()

    def release(self, port: int) -> None:
        if self.low <= port <= self.high:
            self._range.release(port - self.low)

    def mark(self, port: int) -> None:
        if self.low <= port <= self.high:
            self._range.used.add(port - self.low)


@dataclass
class _Transaction:
    """What one write allocated (given back if it fails) and gave up (released once it is
    stored)."""

    ips: ClusterIPs
    ports: NodePorts
    dry_run: bool
    new_ips: list[str]
    new_ports: list[int]
    old_ips: list[str]
    old_ports: list[int]

    def finish(self, stored: bool) -> None:
        if stored and not self.dry_run:
            for ip in self.old_ips:
                self.ips.release(ip)
            for port in self.old_ports:
                self.ports.release(port)
            return
        for ip in self.new_ips:
            self.ips.release(ip)
        for port in self.new_ports:
            self.ports.release(port)


def _invalid(svc: Object, errs: list[FieldError]) -> status.StatusError:
    return status.invalid("Service", str((svc.get("metadata") or {}).get("name", "")), errs)


def _ports(svc: Object) -> list[dict[str, Any]]:
    return [p for p in (svc.get("spec") or {}).get("ports") or () if isinstance(p, dict)]


def _cluster_ips(svc: Object) -> list[str]:
    if not needs_cluster_ip(svc) or is_headless(svc):
        return []
    return [ip for ip in (svc.get("spec") or {}).get("clusterIPs") or () if ip]


def _node_ports(svc: Object) -> list[int]:
    spec = svc.get("spec") or {}
    found = [p["nodePort"] for p in _ports(svc) if p.get("nodePort")]
    if spec.get("healthCheckNodePort"):
        found.append(spec["healthCheckNodePort"])
    return found


def _default_family_policy(spec: dict[str, Any], old: Object | None) -> str:
    """What an unset ipFamilyPolicy becomes: the old one on an update, RequireDualStack for
    a headless Service without a selector, else SingleStack."""
    old_policy = ((old or {}).get("spec") or {}).get("ipFamilyPolicy")
    if old_policy is not None:
        return str(old_policy)
    if spec.get("clusterIP") == CLUSTER_IP_NONE and not spec.get("selector"):
        return "RequireDualStack"
    return "SingleStack"


def _policy_errors(spec: dict[str, Any]) -> list[FieldError]:
    """SingleStack with two IPs or two families."""
    policy = spec["ipFamilyPolicy"]
    if policy != "SingleStack":
        return []
    path = Path("spec", "ipFamilyPolicy")
    errs = []
    if len(spec.get("clusterIPs") or []) == 2:
        errs.append(field.invalid(path, policy, _DUAL_STACK_ONLY + "cluster IPs are specified"))
    if len(spec.get("ipFamilies") or []) == 2:
        errs.append(field.invalid(path, policy, _DUAL_STACK_ONLY + "IP families are specified"))
    return errs


class ServiceAllocations:
    """The cluster IP and node port allocators of one API server."""

    def __init__(self, store: Store, rand: random.Random, network: ServiceNetwork) -> None:
        self._store = store
        self.network = network
        self.ips = ClusterIPs(network.cluster_ip_range, rand)
        self.ports = NodePorts(*network.node_port_range, rand)
        self._loaded = False

    async def _load(self) -> None:
        if self._loaded:
            return
        stored = (await self._store.list(list_prefix(SERVICE, ""))).items
        if self._loaded:
            return
        for svc in stored:
            for ip in _cluster_ips(svc):
                self.ips.mark(ip)
            for port in _node_ports(svc):
                self.ports.mark(port)
        self._loaded = True

    async def begin_create(self, svc: Object, dry_run: bool) -> Finish:
        """beginCreate: families, cluster IPs and node ports for a new Service."""
        await self._load()
        normalize_cluster_ips(svc, None)
        self._init_ip_families(svc, None)
        txn = _Transaction(self.ips, self.ports, dry_run, [], [], [], [])
        try:
            self._allocate_ips(svc, [], txn)
            self._allocate_node_ports(svc, [], txn)
        except BaseException:
            txn.finish(False)
            raise
        return txn.finish

    async def begin_update(self, new: Object, old: Object, dry_run: bool) -> Finish:
        """beginUpdate: what the update newly needs is allocated, what it gives up released
        once it is stored."""
        await self._load()
        patch_allocated_values(new, old)
        normalize_cluster_ips(new, old)
        self._init_ip_families(new, old)
        old_ips, old_ports = _cluster_ips(old), _node_ports(old)
        txn = _Transaction(self.ips, self.ports, dry_run, [], [], [], [])
        try:
            self._allocate_ips(new, old_ips, txn)
            self._allocate_node_ports(new, old_ports, txn)
        except BaseException:
            txn.finish(False)
            raise
        kept_ips, kept_ports = set(_cluster_ips(new)), set(_node_ports(new))
        txn.old_ips = [ip for ip in old_ips if ip not in kept_ips]
        txn.old_ports = [port for port in old_ports if port not in kept_ports]
        return txn.finish

    def deleted(self, svc: Object) -> None:
        """afterDelete: the Service's IPs and ports are free again."""
        for ip in _cluster_ips(svc):
            self.ips.release(ip)
        for port in _node_ports(svc):
            self.ports.release(port)

    def _init_ip_families(self, svc: Object, old: Object | None) -> None:
        """initIPFamilyFields for a single-stack cluster: the policy and families defaulted,
        the requested ones checked against what the cluster has."""
        spec = svc.setdefault("spec", {})
        if not needs_cluster_ip(svc):
            return
        if spec.get("ipFamilyPolicy") is None:
            spec["ipFamilyPolicy"] = _default_family_policy(spec, old)
        errs = validate_cluster_ip_fields(svc)
        if errs:
            raise _invalid(svc, errs)
        families = list(spec.get("ipFamilies") or [])
        errs = _policy_errors(spec) + self._infer_families(spec, families)
        if errs:
            raise _invalid(svc, errs)
        if spec.get("clusterIP") == CLUSTER_IP_NONE and not spec.get("selector"):
            # Headless without a selector: any families, even on a single-stack cluster.
            families = families or [self.ips.family]
            if len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            spec["ipFamilies"] = families
            return
        errs = self._family_errors(spec["ipFamilyPolicy"], families)
        if errs:
            raise _invalid(svc, errs)
        spec["ipFamilies"] = families or [self.ips.family]

    def _infer_families(self, spec: dict[str, Any], families: list[str]) -> list[FieldError]:
        """The family of each requested IP without one given, added to `families`."""
        ips = list(spec.get("clusterIPs") or [])
        errs = []
        for i, ip in enumerate(ips):
            if ip == CLUSTER_IP_NONE:
                break
            family = "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
            if i < len(families):
                continue
            if family == self.ips.family:
                families.append(family)
            else:
                message = f"{family} is not configured on this cluster"
                path = Path("spec", "clusterIPs").index(i)
                errs.append(field.invalid(path, go_slice("string", ips), message))
        return errs

    def _family_errors(self, policy: str, families: list[str]) -> list[FieldError]:
        errs = []
        if policy == "RequireDualStack":
            message = "this cluster is not configured for dual-stack services"
            errs.append(field.invalid(Path("spec", "ipFamilyPolicy"), policy, message))
        for i, family in enumerate(families):
            if family != self.ips.family:
                path = Path("spec", "ipFamilies").index(i)
                errs.append(field.invalid(path, family, "not configured on this cluster"))
        return errs

    def _allocate_ips(self, svc: Object, held: list[str], txn: _Transaction) -> None:
        """allocClusterIPs: the requested IP, or the next free one."""
        if not needs_cluster_ip(svc) or is_headless(svc):
            return
        spec = svc["spec"]
        ips = list(spec.get("clusterIPs") or [])
        if ips and ips[0] in held:
            return  # kept from before: an update may not change it
        if ips:
            try:
                self.ips.allocate(ips[0])
            except AllocationError as e:
                message = f"failed to allocate IP {ips[0]}: {e}"
                raise _invalid(
                    svc,
                    [field.invalid(Path("spec", "clusterIPs"), go_slice("string", ips), message)],
                ) from None
            txn.new_ips.append(ips[0])
            return
        try:
            ip = self.ips.allocate_next()
        except AllocationError as e:
            raise status.internal_error(f"failed to allocate a serviceIP: {e}") from None
        txn.new_ips.append(ip)
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]

    def _allocate_node_ports(self, svc: Object, held: list[int], txn: _Transaction) -> None:
        """initNodePorts and updateNodePorts: each port's requested node port, else the one
        its port number already has for another protocol, else the next free one."""
        if not needs_node_port(svc):
            return
        spec = svc["spec"]
        allocate_new = spec.get("type") == NODE_PORT or (
            spec.get("type") == LOAD_BALANCER
            and spec.get("allocateLoadBalancerNodePorts") is not False
        )
        by_port: dict[int, int] = {}
        ports = _ports(svc)
        for i, port in enumerate(ports):
            if not port.get("nodePort") and not allocate_new:
                continue
            number = port.get("port", 0)
            wanted = (
                port.get("nodePort")
                or by_port.get(number)
                or next(
                    (p["nodePort"] for p in ports if p.get("port") == number and p.get("nodePort")),
                    0,
                )
            )
            if wanted:
                if wanted not in held and wanted not in txn.new_ports:
                    try:
                        self.ports.allocate(wanted)
                    except AllocationError as e:
                        path = Path("spec", "ports").index(i).child("nodePort")
                        raise _invalid(svc, [field.invalid(path, wanted, str(e))]) from None
                    txn.new_ports.append(wanted)
            else:
                try:
                    wanted = self.ports.allocate_next()
                except AllocationError as e:
                    raise status.internal_error(f"failed to allocate a nodePort: {e}") from None
                txn.new_ports.append(wanted)
            port["nodePort"] = wanted
            by_port.setdefault(number, wanted)
        if spec.get("type") == LOAD_BALANCER and spec.get("externalTrafficPolicy") == "Local":
            self._allocate_health_check_port(svc, held, txn)

    def _allocate_health_check_port(self, svc: Object, held: list[int], txn: _Transaction) -> None:
        """allocHealthCheckNodePort, for a LoadBalancer with the Local traffic policy."""
        spec = svc["spec"]
        wanted = spec.get("healthCheckNodePort") or 0
        if wanted in held:
            return
        try:
            if wanted:
                self.ports.allocate(wanted)
            else:
                wanted = spec["healthCheckNodePort"] = self.ports.allocate_next()
        except AllocationError as e:
            raise status.internal_error(
                f"failed to allocate requested HealthCheck NodePort {wanted}: {e}"
            ) from None
        txn.new_ports.append(wanted)
