"""NodeAgentPool: thousands of simulated nodes in one process, as KWOK runs them.

The agents share one pod informer (every pod bound to a node, routed by spec.nodeName) and one
node informer (the nodes labelled as simulated) instead of a watch stream each, and one
heartbeat wheel: the renew interval (10 s) is cut into slots, each agent has a slot, and every
slot's tick renews the leases (and checks the status) of its agents only, so the load is even
and there is a single timer however many nodes there are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable

from pinnace.api import status
from pinnace.apiserver.logs import LogOptions
from pinnace.apiserver.objects import Object
from pinnace.client import Client, Informer
from pinnace.kubelet.agent import NODES, PODS, NodeAgent
from pinnace.kubelet.config import SIMULATED_LABEL, NodeConfig

log = logging.getLogger(__name__)

WHEEL_SLOTS = 10
REGISTRATION_BATCH = 200


class NodeAgentPool:
    def __init__(
        self, client: Client, configs: Iterable[NodeConfig], *, slots: int = WHEEL_SLOTS
    ) -> None:
        self.client = client
        self.clock = client.clock
        self.agents: dict[str, NodeAgent] = {c.name: NodeAgent(client, c) for c in configs}
        self._slots: list[list[NodeAgent]] = [[] for _ in range(max(slots, 1))]
        for i, agent in enumerate(self.agents.values()):
            self._slots[i % len(self._slots)].append(agent)
        intervals = [a.config.lease_renew_interval for a in self.agents.values()]
        self.interval = min(intervals, default=10.0)
        self._pods = Informer(client, PODS, field_selector="spec.nodeName!=")
        self._nodes = Informer(client, NODES, label_selector=f"{SIMULATED_LABEL}=true")
        self._wheel: asyncio.Task[None] | None = None
        self.renewals = 0
        """Heartbeats done so far (one lease renewal each)."""

    async def start(self) -> None:
        """Register every node, then follow pods and nodes and start the heartbeat wheel."""
        agents = list(self.agents.values())
        if not agents:
            return
        for i in range(0, len(agents), REGISTRATION_BATCH):
            await asyncio.gather(*(a.register() for a in agents[i : i + REGISTRATION_BATCH]))
        self._nodes.add_event_handler(self._node, lambda _, new: self._node(new))
        self._pods.add_event_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self._nodes.start()
        self._pods.start()
        await self._nodes.wait_for_sync()
        await self._pods.wait_for_sync()
        self._wheel = self.clock.loop.create_task(self._turn())

    async def stop(self) -> None:
        self._pods.stop()
        self._nodes.stop()
        if self._wheel is not None:
            self._wheel.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._wheel

    async def read_log(self, pod: Object, container: str, options: LogOptions) -> str:
        """The API server's pods/log source for every node of the pool."""
        agent = self.agents.get((pod.get("spec") or {}).get("nodeName", ""))
        if agent is None:
            name = pod["metadata"]["name"]
            raise status.bad_request(f'container "{container}" in pod "{name}" is not available')
        return await agent.read_log(pod, container, options)

    async def _turn(self) -> None:
        step = self.interval / len(self._slots)
        start = self.clock.monotonic()
        tick = 0
        while True:
            tick += 1
            await asyncio.sleep(max(start + tick * step - self.clock.monotonic(), 0.0))
            for agent in self._slots[tick % len(self._slots)]:
                await agent.heartbeat()
                self.renewals += 1

    def _agent_of(self, pod: Object) -> NodeAgent | None:
        return self.agents.get((pod.get("spec") or {}).get("nodeName", ""))

    def _node(self, node: Object) -> None:
        agent = self.agents.get(node["metadata"]["name"])
        if agent is not None:
            agent.node_changed(node)

    def _pod_added(self, pod: Object) -> None:
        agent = self._agent_of(pod)
        if agent is not None:
            agent.pod_added(pod)

    def _pod_updated(self, old: Object, new: Object) -> None:
        agent = self._agent_of(new)
        if agent is not None:
            agent.pod_updated(old, new)

    def _pod_deleted(self, pod: Object) -> None:
        agent = self._agent_of(pod)
        if agent is not None:
            agent.pod_deleted(pod)
