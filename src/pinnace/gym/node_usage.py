"""The node agents' stats summaries, as the scheduler-only engine (`pinnace.gym.scheduler_only`)
models them for the scheduler's usage samples: what the cluster engine's node agents report
of CPU and memory (`kubelet.summary.node_summary` over `kubelet.runtime.SimulatedRuntime`'s
container stats), for the pods that engine runs.

- A pod is in its node's summary from its start until its containers exit, each container
  with the CPU its usage curve demands (`kubelet.behaviour`'s model of its annotations), at
  most its limit (the CFS quota), the node's cores shared by cpu.shares when they cannot
  satisfy every container (`kubelet.usage.share_cpu`, over the containers in the order they
  started);
- each container's memory working set is what its memory curve says; the engine refuses a
  container whose curve may pass its memory request, so nothing is OOM-killed or evicted;
- a node's CPU is its pods'; its memory working set is theirs and what its kubelet's system
  reservations hold.

A summary holds only these figures, the ones the scheduler's samples read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pinnace.api.objects import Object
from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.clock import Clock
from pinnace.kubelet.behaviour import ContainerBehaviour
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.runtime import Machine, shaped_container_resources
from pinnace.kubelet.summary import machine
from pinnace.kubelet.usage import Curve, share_cpu


@dataclass(frozen=True, slots=True)
class _Container:
    name: str
    cpu: Curve
    memory: Curve
    limit: float
    """Its CFS quota in nanocores (inf: none)."""
    shares: int


@dataclass(frozen=True, slots=True)
class _Pod:
    uid: str
    namespace: str
    name: str
    started: float
    containers: tuple[_Container, ...]


@dataclass(slots=True)
class _Node:
    machine: Machine
    memory_capacity: int
    system_memory: int
    """What its system reservations hold of its memory."""
    pods: dict[str, _Pod]
    """The running pods by key, in the order they started."""
    idle: Summary
    """Its summary while it runs no pod: only its time changes (most nodes, at each sample)."""


class NodeStatsModel:
    """The summaries of `nodes`' agents, on `clock`: pods `start` and `stop`; `summaries` gives
    every node's now."""

    def __init__(self, nodes: Sequence[NodeConfig], clock: Clock) -> None:
        self.clock = clock
        self._nodes: dict[str, _Node] = {}
        for config in nodes:
            hardware = machine(config)
            memory = hardware.memory_bytes  # as the node agent gives it the runtime
            system = round(hardware.system_memory_bytes)
            idle = Summary(0.0, NodeStats(memory_working_set_bytes=system))
            capacity = int(memory) if memory < math.inf else 1
            self._nodes[config.name] = _Node(hardware, capacity, system, {}, idle)
        self._node_of: dict[str, str] = {}

    def start(
        self, key: str, pod: Object, node_name: str, behaviours: Sequence[ContainerBehaviour]
    ) -> None:
        """`pod` (its key "namespace/name") starts on `node_name` now, its containers behaving
        as `behaviours` (in the spec's order)."""
        node = self._nodes[node_name]
        containers = []
        for spec, behaviour in zip(pod["spec"]["containers"], behaviours, strict=True):
            resources = shaped_container_resources(pod, spec["name"], node.memory_capacity)
            limit = resources.cpu_limit_nano_cores or math.inf
            containers.append(
                _Container(
                    spec["name"],
                    behaviour.usage.cpu,
                    behaviour.usage.memory,
                    limit,
                    resources.cpu_shares,
                )
            )
        meta = pod["metadata"]
        started = self.clock.now()
        node.pods[key] = _Pod(
            meta["uid"], meta["namespace"], meta["name"], started, tuple(containers)
        )
        self._node_of[key] = node_name

    def stop(self, key: str) -> None:
        """The pod's containers exit now."""
        node_name = self._node_of.pop(key, None)
        if node_name is not None:
            del self._nodes[node_name].pods[key]

    def summaries(self) -> dict[str, Summary]:
        """Every node's summary now, by name."""
        now = self.clock.now()
        return {name: self._summary(node, now) for name, node in self._nodes.items()}

    def _summary(self, node: _Node, now: float) -> Summary:
        if not node.pods:
            node.idle.time = now
            return node.idle
        running = [(pod, c) for pod in node.pods.values() for c in pod.containers]
        wants = [min(c.cpu.at(now - pod.started), c.limit) for pod, c in running]
        got = iter(share_cpu(wants, [c.shares for _, c in running], node.machine.cpu_nano_cores))
        pods = [
            PodStats(
                pod.uid,
                pod.namespace,
                pod.name,
                [
                    ContainerStats(
                        c.name,
                        cpu_usage_nano_cores=round(next(got)),
                        memory_working_set_bytes=round(c.memory.at(now - pod.started)),
                    )
                    for c in pod.containers
                ],
            )
            for pod in node.pods.values()
        ]
        cpu = sum(p.cpu_usage_nano_cores for p in pods)
        memory = node.system_memory + sum(p.memory_working_set_bytes for p in pods)
        return Summary(
            now, NodeStats(cpu_usage_nano_cores=cpu, memory_working_set_bytes=memory), pods
        )
