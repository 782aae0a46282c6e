"""NodeAgentPool: thousands of simulated nodes in one process, as KWOK runs them.

The pool runs the nodes it is configured with, and adopts any Node created through the API
with the label `pinnace.dev/simulated: "true"`: its capacity (status.capacity, or the default
shape) becomes the simulated node's, and its agent takes it over as a restarted kubelet would.
Deleting a simulated Node ends its agent.

The agents share one pod informer (every pod bound to a node, routed by spec.nodeName) and one
node informer (the nodes labelled as simulated) instead of a watch stream each, and one
heartbeat wheel: the heartbeat interval (10 s by default; a period dividing every node's lease
renewal, status update and eviction monitoring periods) is cut into slots, each agent has a
slot, and every slot's tick gives its agents only a heartbeat, in which each does what is due,
so the load is even and there is a single timer however many nodes there are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Mapping

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.options import LogOptions
from pinnace.api.stats import Summary
from pinnace.api.status import StatusError
from pinnace.client import Client, Informer
from pinnace.kubelet.agent import CONFIG_MAPS, NODES, PODS, NodeAgent
from pinnace.kubelet.config import DEFAULT_CAPACITY, SIMULATED_LABEL, NodeConfig, common_period
from pinnace.kubelet.summary import NodeSummaries
from pinnace.store.codec import Codec

log = logging.getLogger(__name__)

WHEEL_SLOTS = 10
REGISTRATION_BATCH = 200


class NodeAgentPool:
    def __init__(
        self,
        client: Client,
        configs: Iterable[NodeConfig],
        *,
        slots: int = WHEEL_SLOTS,
        codec: Codec | None = None,
    ) -> None:
        """`codec` packs the pods (a new one by default): the cluster's."""
        self.client = client
        self.clock = client.clock
        self.codec = codec if codec is not None else Codec()
        self.agents = {c.name: NodeAgent(client, c, codec=self.codec) for c in configs}
        self._slots: list[list[NodeAgent]] = [[] for _ in range(max(slots, 1))]
        for i, agent in enumerate(self.agents.values()):
            self._slots[i % len(self._slots)].append(agent)
        intervals = [a.config.heartbeat_interval for a in self.agents.values()]
        self.interval = (
            common_period(*intervals) if intervals else NodeConfig("").heartbeat_interval
        )
        self._next_index = max((a.config.index for a in self.agents.values()), default=0) + 1
        self._adopting: dict[str, asyncio.Task[None]] = {}
        self._pods_started = False
        self._config_maps = Informer(client, CONFIG_MAPS)
        # Packed (the workers share the bytes), not filed by namespace (never listed so): a pool
        # of thousands of nodes runs hundreds of thousands of pods.
        self._pods = Informer(
            client, PODS, field_selector="spec.nodeName!=", codec=self.codec, namespace_index=False
        )
        self._nodes = Informer(client, NODES, label_selector=f"{SIMULATED_LABEL}=true")
        self._wheel: asyncio.Task[None] | None = None
        self.renewals = 0
        """Heartbeats done so far (one lease renewal each)."""

    async def start(self) -> None:
        """Register every node, then follow pods and nodes and start the heartbeat wheel."""
        agents = list(self.agents.values())
        for i in range(0, len(agents), REGISTRATION_BATCH):
            await asyncio.gather(*(a.register() for a in agents[i : i + REGISTRATION_BATCH]))
        self._nodes.add_event_handler(self._node, self._node_updated, self._node_deleted)
        self._pods.add_event_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self._config_maps.add_event_handler(
            self._config_map_changed, lambda _, new: self._config_map_changed(new)
        )
        for agent in self.agents.values():
            agent.config_maps = self._config_maps.get
            agent.packed_pod = self._pods.packed
        if self.agents:
            await self._follow_pods()
        self._nodes.start()
        await self._nodes.wait_for_sync()
        self._wheel = self.clock.loop.create_task(self._turn())

    async def _follow_pods(self) -> None:
        """Watch the bound pods once the pool has a node (it may never have one)."""
        if not self._pods_started:
            self._pods_started = True
            self._config_maps.start()
            await self._config_maps.wait_for_sync()
            self._pods.start()
        await self._pods.wait_for_sync()

    async def stop(self) -> None:
        await self._pods.stop()
        await self._config_maps.stop()
        await self._nodes.stop()
        for task in self._adopting.values():
            task.cancel()
        if self._wheel is not None:
            self._wheel.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._wheel

    def agent(self, name: str) -> NodeAgent | None:
        """The agent of the node `name`, if this pool runs it."""
        return self.agents.get(name)

    def summaries(self) -> Mapping[str, Summary]:
        """Every node's stats summary now, by node name, each made when it is first read."""
        return NodeSummaries(dict(self.agents))

    def read_log(self, pod: Object, container: str, options: LogOptions) -> AsyncIterator[str]:
        """The API server's pods/log source for every node of the pool."""
        agent = self.agents.get((pod.get("spec") or {}).get("nodeName", ""))
        if agent is None:
            name = pod["metadata"]["name"]
            raise status.bad_request(f'container "{container}" in pod "{name}" is not available')
        return agent.read_log(pod, container, options)

    async def _turn(self) -> None:
        step = self.interval / len(self._slots)
        start = self.clock.monotonic()
        tick = 0
        while True:
            tick += 1
            await asyncio.sleep(max(start + tick * step - self.clock.monotonic(), 0.0))
            for agent in list(self._slots[tick % len(self._slots)]):
                if self.agents.get(agent.name) is not agent:
                    continue  # its Node was deleted meanwhile
                await agent.heartbeat(self.interval)  # it logs what fails in it
                self.renewals += 1

    def _agent_of(self, pod: Object) -> NodeAgent | None:
        return self.agents.get((pod.get("spec") or {}).get("nodeName", ""))

    def _node(self, node: Object) -> None:
        name = node["metadata"]["name"]
        agent = self.agents.get(name)
        if agent is not None:
            agent.node_changed(node)
        elif name not in self._adopting and not node["metadata"].get("deletionTimestamp"):
            task = self.clock.loop.create_task(self._adopt(node))
            self._adopting[name] = task
            task.add_done_callback(lambda _: self._adopting.pop(name, None))

    async def _adopt(self, node: Object) -> None:
        """Run an agent for a labelled Node someone else created."""
        config = adopted_config(node, self._next_index)
        self._next_index += 1
        agent = NodeAgent(self.client, config, codec=self.codec)
        agent.config_maps = self._config_maps.get
        agent.packed_pod = self._pods.packed
        try:
            await agent.register()
        except StatusError as e:
            log.warning("node %s: not adopted: %s", config.name, e.message)
            return
        self.agents[config.name] = agent
        min(self._slots, key=len).append(agent)
        await self._follow_pods()
        for pod in self._pods.list():
            if (pod.get("spec") or {}).get("nodeName") == config.name:
                agent.pod_added(pod)

    def _config_map_changed(self, config_map: Object) -> None:
        for agent in self.agents.values():
            if agent.config_blocked:
                agent.config_map_changed(config_map)

    def _node_updated(self, old: Object, new: Object) -> None:
        self._node(new)

    def _node_deleted(self, node: Object) -> None:
        agent = self.agents.pop(node["metadata"]["name"], None)
        if agent is None:
            return
        for slot in self._slots:
            if agent in slot:
                slot.remove(agent)
        agent.shut_down()

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


def adopted_config(node: Object, index: int) -> NodeConfig:
    """The simulated shape of a Node created through the API: its status.capacity, or the
    default shape when it has none."""
    capacity = (node.get("status") or {}).get("capacity") or DEFAULT_CAPACITY
    return NodeConfig(name=node["metadata"]["name"], index=index, capacity=dict(capacity))
