"""Second-phase admission: may this node run a pod bound to it? As the kubelet's
predicateAdmitHandler (pkg/kubelet/lifecycle/predicate.go) decides it in v1.32.

The checks are the scheduler's that the kubelet repeats: resources (pod count, then cpu,
memory, ephemeral-storage and extended resources) against allocatable minus what the pods
already admitted request; the required node affinity and node selector; spec.nodeName; host
ports; and, of the taints, only NoExecute ones (a pod bound by nodeName may ignore NoSchedule).
The first failure decides the reason and message; a rejected pod ends Failed with
"Pod was rejected: " and that message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pinnace.api.objects import Remembered, plain_json
from pinnace.kubelet.interning import Interned
from pinnace.kubelet.shapes import ShapeMemo
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from pinnace.resources.pod import pod_requests
from pinnace.resources.quantity import Quantity
from pinnace.scheduling.hostports import HostPort, conflicts, pod_host_ports
from pinnace.scheduling.nodeaffinity import required_node_affinity
from pinnace.scheduling.taints import Taint, Toleration, first_untolerated, pod_tolerations

NO_EXECUTE = "NoExecute"
REJECTED_PREFIX = "Pod was rejected: "

# Reasons and descriptions as the kubelet and the scheduler plugins word them.
NODE_AFFINITY = ("NodeAffinity", "node(s) didn't match Node selector")
NODE_NAME = ("NodeName", "node(s) didn't match the requested node name")
NODE_PORTS = ("NodePorts", "node(s) didn't have free ports for the requested pod ports")
TAINT_TOLERATION = ("TaintToleration", "node(s) had untolerated taint")

_OUT_OF = {CPU: "OutOfcpu", MEMORY: "OutOfmemory", EPHEMERAL_STORAGE: "OutOfephemeral-storage"}
_ZERO = Quantity(0)
_FIRST = frozenset((CPU, MEMORY, EPHEMERAL_STORAGE, PODS))
"""The resources checked first, in this order (but pods, counted apart)."""


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


ADMITTED = AdmitResult(True)


@dataclass(frozen=True, slots=True)
class Hold:
    """What an admitted pod holds on the node until it finishes: kept for every pod a node
    runs, so without the pod (a PodDemand keeps its spec). Its requests are the kubelet's
    amounts (`amount`), by resource name in order."""

    requests: tuple[tuple[str, int], ...]
    host_ports: tuple[HostPort, ...]


_HOLDS: Interned[Hold] = Interned()


@dataclass(frozen=True)
class PodDemand:
    """What a pod holds on a node once admitted (its effective requests, as the kubelet's
    amounts, and host ports), and the rest of its spec that admission checks."""

    spec: Mapping[str, Any]
    requests: Mapping[str, int]
    host_ports: tuple[HostPort, ...]
    tolerations: tuple[Toleration, ...]
    held: Hold
    """What the pod holds once admitted: one object for all the pods that hold the same."""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodDemand:
        """The pod's: what it reads of the pod, worked out once for all the pods of a shape
        (`pinnace.kubelet.shapes`), but for the spec it keeps."""
        spec = pod.get("spec") or {}
        return cls(spec, *_DEMANDS.of(pod, lambda: _demand_of(pod, spec)))

    def hold(self) -> Hold:
        return self.held


_Demand = tuple[Mapping[str, int], tuple[HostPort, ...], tuple[Toleration, ...], Hold]
"""A PodDemand but for its spec."""


def amount(name: str, q: Quantity) -> int:
    """A quantity as the kubelet's admission counts it (the scheduler framework's Resource):
    cpu in millicores, everything else in units, each rounded up."""
    return q.milli_value() if name == CPU else q.value()


def _demand_of(pod: Mapping[str, Any], spec: Mapping[str, Any]) -> _Demand:
    # Shared by the pods of the shape.
    requests = MappingProxyType({name: amount(name, q) for name, q in pod_requests(pod).items()})
    ports = pod_host_ports(spec)
    held = _HOLDS(Hold(tuple(sorted(requests.items())), ports))
    return requests, ports, pod_tolerations(spec), held


_DEMANDS: ShapeMemo[_Demand] = ShapeMemo(1024)


class NodeUsage:
    """The running sum of what the pods admitted to a node, and not yet finished, hold: ints,
    as the kubelet's NodeInfo sums them."""

    def __init__(self) -> None:
        self.pods = 0
        self.requested: dict[str, int] = {}
        self.host_ports: dict[HostPort, int] = {}

    def add(self, hold: Hold) -> None:
        self._change(hold, 1)

    def remove(self, hold: Hold) -> None:
        self._change(hold, -1)

    def _change(self, hold: Hold, sign: int) -> None:
        self.pods += sign
        requested = self.requested
        for name, n in hold.requests:
            requested[name] = requested.get(name, 0) + sign * n
        for port in hold.host_ports:
            count = self.host_ports.get(port, 0) + sign
            if count:
                self.host_ports[port] = count
            else:
                del self.host_ports[port]


def admit(demand: PodDemand, node: Mapping[str, Any], usage: NodeUsage) -> AdmitResult:
    """Whether `node` can run the pod of `demand` next to the pods of `usage`."""
    failure = _insufficient_resource(demand, node, usage) or _predicate_failure(demand, node, usage)
    if failure is None:
        return ADMITTED
    return AdmitResult(False, *failure)


def _insufficient_resource(
    demand: PodDemand, node: Mapping[str, Any], usage: NodeUsage
) -> tuple[str, str] | None:
    allocatable = _allocatable(node)
    amounts, allowed_pods = allocatable.amounts, allocatable.pods
    if usage.pods + 1 > allowed_pods:
        return "OutOfpods", _insufficient(PODS, 1, usage.pods, allowed_pods)
    requests = demand.requests
    for name in (CPU, MEMORY, EPHEMERAL_STORAGE, *sorted(requests.keys() - _FIRST)):
        wanted = requests.get(name, 0)
        if not wanted:
            continue
        if name not in _OUT_OF and name not in amounts:
            continue  # a cluster-level extended resource the node does not know
        used = usage.requested.get(name, 0)
        capacity = amounts.get(name, 0)
        if wanted > capacity - used:
            message = _insufficient(name, wanted, used, capacity)
            return _OUT_OF.get(name, f"OutOf{name}"), message
    return None


def _insufficient(name: str, requested: int, used: int, capacity: int) -> str:
    return (
        f"Node didn't have enough resource: {name}, requested: {requested}, used: {used}, "
        f"capacity: {capacity}"
    )


def _predicate_failure(
    demand: PodDemand, node: Mapping[str, Any], usage: NodeUsage
) -> tuple[str, str] | None:
    m = node.get("metadata") or {}
    node_name = m.get("name", "")
    if not required_node_affinity(demand.spec).matches(m.get("labels") or {}, node_name):
        return _failure(NODE_AFFINITY)
    wanted_node = demand.spec.get("nodeName") or ""
    if wanted_node and wanted_node != node_name:
        return _failure(NODE_NAME)
    if any(conflicts(port, usage.host_ports) for port in demand.host_ports):
        return _failure(NODE_PORTS)
    taints = [
        Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
        for t in (node.get("spec") or {}).get("taints") or ()
        if t.get("effect") == NO_EXECUTE
    ]
    if first_untolerated(taints, demand.tolerations) is not None:
        return _failure(TAINT_TOLERATION)
    return None


def _failure(predicate: tuple[str, str]) -> tuple[str, str]:
    name, description = predicate
    return name, f"Predicate {name} failed: {description}"


def node_allocatable(node: Mapping[str, Any]) -> Mapping[str, Quantity]:
    """The node's status.allocatable, parsed."""
    return _allocatable(node).quantities


@dataclass(frozen=True)
class _Allocatable:
    """A node's status.allocatable: parsed, as the kubelet's amounts, and the pods it allows."""

    quantities: Mapping[str, Quantity]
    amounts: Mapping[str, int]
    pods: int


def _allocatable(node: Mapping[str, Any]) -> _Allocatable:
    """The node's status.allocatable, once for all the nodes, and versions of a node, that
    report the same (every pod admitted reads it)."""
    text = (node.get("status") or {}).get("allocatable") or {}
    key = plain_json(text)
    parsed = _allocatables.get(key) if key is not None else None
    if parsed is None:
        quantities = MappingProxyType({name: Quantity(q) for name, q in text.items()})
        amounts = MappingProxyType({name: amount(name, q) for name, q in quantities.items()})
        parsed = _Allocatable(quantities, amounts, quantities.get(PODS, _ZERO).value())
        if key is not None:
            _allocatables.put(key, parsed)
    return parsed


_allocatables: Remembered[_Allocatable] = Remembered(256)
"""By the plain JSON text of a node's status.allocatable, what it parses to."""
