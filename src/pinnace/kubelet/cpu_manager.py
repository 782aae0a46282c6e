"""The kubelet's CPU manager (pkg/kubelet/cm/cpumanager), static policy.

A node has CPUs 0 … N-1 (N its whole CPU capacity; one thread per core, one NUMA node). The
static policy reserves some for the system: reservedSystemCPUs, or else the lowest-numbered
ceil(kubeReserved + systemReserved cpu) CPUs. Each container of a Guaranteed pod whose CPU
request is a whole number gets that many CPUs of its own, taken lowest-numbered first from the
CPUs neither reserved nor given to another container; every other container runs on the shared
pool, which is all the CPUs not given exclusively (the reserved ones included), and shrinks as
exclusive CPUs are handed out. A container that cannot get its CPUs fails the pod's admission
with the kubelet's UnexpectedAdmissionError.

Init containers are not given CPUs of their own here: they run before the app containers, so
the CPUs they would hold are the app containers' to reuse, as the kubelet reuses them.

The node agent shows the result (docs/nodes.md): a pod with exclusive CPUs carries the
annotation `sim.pinnace.dev/cpuset` (container name -> cpuset, as JSON), and the Node the
annotation `sim.pinnace.dev/shared-cpuset` (the shared pool).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.kubelet.admission import AdmitResult
from pinnace.kubelet.config import NodeConfig
from pinnace.resources.lists import parse_resource_list
from pinnace.resources.names import CPU
from pinnace.resources.qos import recorded_qos_class
from pinnace.resources.quantity import Quantity

POLICY_NONE = "none"
POLICY_STATIC = "static"
CPU_MANAGER_POLICIES = (POLICY_NONE, POLICY_STATIC)

CPUSET_ANNOTATION = "sim.pinnace.dev/cpuset"
SHARED_CPUSET_ANNOTATION = "sim.pinnace.dev/shared-cpuset"

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
NO_RESERVED_CPUS = (
    "[cpumanager] unable to determine reserved CPU resources for static policy: the static "
    "policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"
)


def parse_cpuset(text: str) -> frozenset[int]:
    """A Linux cpuset list ("0-3,8"); ValueError if it is not one."""
    cpus: set[int] = set()
    for part in text.split(",") if text.strip() else ():
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f'not a CPU list such as "0-3,8": {text!r}')
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"range {part.strip()!r} runs backwards")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def format_cpuset(cpus: Iterable[int]) -> str:
    """The Linux list form, as the kubelet prints a cpuset: "0-2,5"."""
    ranges: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        ranges.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(ranges)


def static_policy(config: NodeConfig) -> StaticPolicy | None:
    """The node's static policy, or None when its cpuManagerPolicy is none."""
    if config.cpu_manager_policy != POLICY_STATIC:
        return None
    all_cpus = config.capacity_list().get(CPU, Quantity(0)).milli_value() // 1000
    return StaticPolicy(all_cpus, reserved_cpus(config, all_cpus))


def reserved_cpus(config: NodeConfig, all_cpus: int) -> frozenset[int]:
    if config.reserved_system_cpus:
        return config.reserved_system_cpus
    milli = sum(
        parse_resource_list(reserved).get(CPU, Quantity(0)).milli_value()
        for reserved in (config.kube_reserved, config.system_reserved)
    )
    return frozenset(range(min(math.ceil(milli / 1000), all_cpus)))


def guaranteed_cpus(pod: Mapping[str, Any], container: Mapping[str, Any]) -> int:
    """How many exclusive CPUs the container gets: its CPU request if whole and the pod is
    Guaranteed, else 0."""
    request = ((container.get("resources") or {}).get("requests") or {}).get(CPU)
    if request is None or recorded_qos_class(pod) != "Guaranteed":
        return 0
    milli = Quantity(str(request)).milli_value()
    return milli // 1000 if milli % 1000 == 0 else 0


class StaticPolicy:
    """One node's CPU assignments."""

    def __init__(self, all_cpus: int, reserved: frozenset[int]) -> None:
        self.all = frozenset(range(all_cpus))
        self.reserved = reserved
        self.assignments: dict[str, dict[str, frozenset[int]]] = {}
        """Pod uid -> container name -> its exclusive CPUs."""

    @property
    def shared_pool(self) -> frozenset[int]:
        assigned = {
            c for containers in self.assignments.values() for cs in containers.values() for c in cs
        }
        return self.all - assigned

    def allocate(self, pod: Mapping[str, Any]) -> AdmitResult:
        """Give the pod's containers their exclusive CPUs, all or none."""
        spec = pod.get("spec") or {}
        uid = pod["metadata"]["uid"]
        wanted = [
            (c["name"], n)
            for c in (*_sidecars(spec), *(spec.get("containers") or ()))
            if (n := guaranteed_cpus(pod, c))
        ]
        if not wanted:
            return AdmitResult(True)
        free = sorted(self.shared_pool - self.reserved)
        given: dict[str, frozenset[int]] = {}
        for name, count in wanted:
            if count > len(free):
                error = (
                    "not enough cpus available to satisfy request: "
                    f"requested={count}, available={len(free)}"
                )
                return AdmitResult(
                    False,
                    UNEXPECTED_ADMISSION_ERROR,
                    f"Allocate failed due to {error}, which is unexpected",
                )
            given[name], free = frozenset(free[:count]), free[count:]
        self.assignments[uid] = given
        return AdmitResult(True)

    def release(self, uid: str) -> bool:
        """The pod's containers are gone: their CPUs return to the shared pool."""
        return self.assignments.pop(uid, None) is not None


def pod_cpusets(policy: StaticPolicy | None, uid: str) -> dict[str, str]:
    """The pod's annotation of its containers' exclusive CPUs; empty when it has none."""
    given = policy.assignments.get(uid) if policy is not None else None
    if not given:
        return {}
    cpusets = {name: format_cpuset(cpus) for name, cpus in given.items()}
    return {CPUSET_ANNOTATION: json.dumps(cpusets, separators=(",", ":"))}


def shared_pool_annotation(policy: StaticPolicy) -> dict[str, str]:
    """The node's annotation of its shared pool."""
    return {SHARED_CPUSET_ANNOTATION: format_cpuset(policy.shared_pool)}


def _sidecars(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
