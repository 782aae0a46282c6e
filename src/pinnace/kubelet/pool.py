"""NodeAgentPool: thousands of simulated nodes in one process, as KWOK runs them.

The pool runs the nodes it is configured with, and adopts any Node created through the API
with the label `pinnace.dev/simulated: "true"`: its capacity (status.capacity, or the default
shape) becomes the simulated node's, and its agent takes it over as a restarted kubelet would.
Deleting a simulated Node ends its agent.

A pool of a `pinnace agent` process (`process`, its name prefix) adopts only the simulated Nodes
labelled `pinnace.dev/agent: <agent>`, and `pinnace up`'s only those without the label, so
each Node has one agent however many processes run them. There each agent talks to the API
server as its node (`node_client`: the kubelet's identity, for the Node authorizer and
NodeRestriction), the pool's shared informers as the process.

The agents share one pod informer (every pod bound to a node, routed by spec.nodeName) and one
node informer (the nodes labelled as simulated) instead of a watch stream each, and one
heartbeat wheel: the heartbeat interval (10 s by default; a period dividing every node's lease
renewal, status update and eviction monitoring periods) is cut into slots, each agent has a
slot, and every slot's tick gives its agents only a heartbeat, in which each does what is due,
so the load is even and there is a single timer however many nodes there are.

In the simulated mode (`simulated`) the pool keeps the lease renewals of its healthy agents in
an account instead of having each written (`last_renewal`, `renewal_interval`, `stopped`: what
the node lifecycle controller reads as its `NodeHeartbeats`; a Lease read through the API
server is written first with the last of them, `before_read`), and the wheel leaves out the
agents whose heartbeat would do nothing more (quiet) until a pod or their Node changes, or they
fail, are partitioned or slowed: a tick of a slot with no agent awake is skipped, and when no
slot has one the wheel sleeps until an agent wakes; the token refreshes of pods nobody reads
are accounted for until read (`TokenManager.defer`), while the agent reaches the API server
(docs/simulation.md, "What the simulated mode skips").

Faults and changes while it runs, as the simulation's timeline and `pinnace node` inject them:
- `fail_node`: the node's kubelet stops (it died, or the node went down): no lease renewal, no
  node or pod status, no reaction to its pods' changes. The node lifecycle controller sees what
  it would see of such a node.
- `partition`: the agent runs on (its containers restart, probes and evictions go on) but
  nothing it sends reaches the API server and it hears of no change (`pinnace.kubelet.link`).
- `slow`: its heartbeats (lease renewal, node status, eviction monitoring) come `factor` times
  less often.
- `recover_node` ends them all: a stopped kubelet starts again on the same node as a restarted
  kubelet does (it updates its Node and Lease, takes back the pods still bound to it where
  their status left them and stops those deleted meanwhile); a partitioned one hears again of
  its pods as they are now, and its writes land.
- `add_nodes` registers new nodes; `remove_node` stops a node's agent and deletes its Node, as
  a cloud provider's node going away (the pod garbage collector then deletes its pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from pinnace.api import status
from pinnace.api.features import FeatureGates
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import LogOptions
from pinnace.api.stats import NodeMetricsPoint, Summary
from pinnace.api.status import StatusError
from pinnace.api.streams import Forward, Session, StreamError, StreamOptions, Unreachable
from pinnace.client import Client, Informer
from pinnace.clock import micro_instant
from pinnace.clock.periodic import Alarm
from pinnace.kubelet import endpoints
from pinnace.kubelet.agent import NODES, PODS, SERVICES, NodeAgent
from pinnace.kubelet.config import (
    AGENT_LABEL,
    DEFAULT_CAPACITY,
    HOUSEKEEPING_INTERVAL,
    NODE_LEASE_NAMESPACE,
    SIMULATED_LABEL,
    NodeConfig,
    common_period,
)
from pinnace.kubelet.link import Link
from pinnace.kubelet.listeners import refused
from pinnace.kubelet.node_lease import LEASES
from pinnace.kubelet.node_status import KUBELET_PORT
from pinnace.kubelet.sources import SourceInformers, SourceKey, SourceKind, source_key
from pinnace.kubelet.summary import NodeReadings
from pinnace.store.codec import Codec

log = logging.getLogger(__name__)

WHEEL_SLOTS = 10
REGISTRATION_BATCH = 200
NODE_NAME = "nodeName"
"""The pod informer's index of pods by node."""


class NodeAgentPool:
    def __init__(
        self,
        client: Client,
        configs: Iterable[NodeConfig],
        *,
        slots: int = WHEEL_SLOTS,
        codec: Codec | None = None,
        simulated: bool = False,
        features: FeatureGates | None = None,
        process: str = "",
        node_client: Callable[[str], Client] | None = None,
        housekeeping_interval: float = HOUSEKEEPING_INTERVAL,
        bound_pods: Informer | None = None,
    ) -> None:
        """`codec` packs the pods (a new one by default): the cluster's. `features`: the
        kubelets' feature gates. `simulated`: the
        leases of healthy nodes are renewed in the pool's account (`last_renewal`), not written
        each time, and an unchanged node status is not posted again (the simulated mode).
        `process`: the `pinnace agent` process whose nodes these are ("" for `pinnace up`'s);
        `node_client`: the client each node's agent uses, by node name (`client` when None).
        `housekeeping_interval`: how often, at most, the nodes' metrics endpoints read their
        container stats (the kubelet's --housekeeping-interval). `bound_pods`: an informer on
        the pods bound to a node (`spec.nodeName!=`), filed by node in the index NODE_NAME,
        that the pool shares with the controllers of its process (the simulated mode's node
        lifecycle and taint eviction controllers: `pods_on_nodes`), so that each change of a
        bound pod is watched and cached once for all; the pool's own, packed, when None."""
        self.client = client
        self.process = process
        """The `pinnace agent` process whose nodes these are ("": `pinnace up`'s)."""
        self._node_client = node_client or (lambda name: client)
        self.simulated = simulated
        self.housekeeping_interval = housekeeping_interval
        self.features = features or FeatureGates()
        self.clock = client.clock
        self.codec = codec if codec is not None else Codec()
        self._sources = SourceInformers(client, self._source_changed)
        self._services = Informer(client, SERVICES)
        # Packed (the workers share the bytes), not filed by namespace (never listed so): a pool
        # of thousands of nodes runs hundreds of thousands of pods. Filed by node, for what an
        # agent that (re)starts or reconnects is handed.
        if bound_pods is None:
            bound_pods = Informer(
                client,
                PODS,
                field_selector="spec.nodeName!=",
                codec=self.codec,
                namespace_index=False,
            )
            bound_pods.add_indexer(NODE_NAME, _node_name)
        self._pods = bound_pods
        hosted = f"{AGENT_LABEL}={process}" if process else f"!{AGENT_LABEL}"
        self._nodes = Informer(client, NODES, label_selector=f"{SIMULATED_LABEL}=true,{hosted}")
        configs = list(configs)
        self.agents = {c.name: self._new_agent(c) for c in configs}
        """The agents running, by node name (stopped ones are not here)."""
        self._slots: list[dict[int, NodeAgent]] = [{} for _ in range(max(slots, 1))]
        """Each slot's agents, by the order they joined it in (the order the wheel calls
        them in)."""
        self._awake: list[dict[int, NodeAgent]] = [{} for _ in self._slots]
        """Of those, the ones the wheel calls (not quiet)."""
        self._awake_since = [-math.inf] * len(self._slots)
        """When each slot last went from no agent awake to one: its ticks before were
        skipped, those after are run, late (the loop was busy) or not."""
        self._slot_of: dict[str, tuple[int, int]] = {}
        """Each agent's slot, and its place in it."""
        self._joined = 0
        self._alarm = Alarm(self.clock)
        """Wakes the wheel when an agent of a slot it would skip wakes."""
        for i, agent in enumerate(self.agents.values()):
            self._join_slot(agent, i % len(self._slots))
        self._start = 0.0
        """When the wheel's tick 0 was (clock seconds): tick k comes `step` × k later."""
        self._step = 0.0
        self._tick = 0
        """The last tick the wheel ran; those after it and before now it skipped (no agent of
        their slot was awake), which were beats all the same for the quiet agents."""
        self._quiet: dict[str, float] = {}
        """The agents the wheel leaves out (the simulated mode), by name: `idle` since the
        beat (its time) after which they went quiet, until a pod or their Node changes."""
        self._stops: list[str] = []
        """The nodes whose agents stopped renewing in the account, in order (`stopped`)."""
        self._stop_listeners: list[Callable[[], None]] = []
        self.interval = (
            common_period(*(c.heartbeat_interval for c in configs))
            if configs
            else NodeConfig("").heartbeat_interval
        )
        self.next_index = max((c.index for c in configs), default=0) + 1
        """The index (`NodeConfig.index`: IP, pod CIDR) no node of the pool has yet, nor any
        above it: where the configs of nodes to add start."""
        self._adopting: dict[str, asyncio.Task[None]] = {}
        self._stopped: dict[str, NodeAgent] = {}
        """The agents stopped (`fail_node`), by node name: their last renewals stay in the
        account."""
        self._removing: set[str] = set()
        """Nodes whose Node this pool deleted, until the deletion is heard of: not adopted."""
        self._slowness: dict[str, float] = {}
        self._endpoints: dict[str, endpoints.NodeEndpoints] = {}
        """What each node's kubelet serves to monitoring: its cumulative CPU counters and its
        latest stats reading."""
        self._next_heartbeat: dict[str, float] = {}
        """For a slowed agent, when its next heartbeat is due."""
        self._pods_started = False
        self._wheel: asyncio.Task[None] | None = None
        self.renewals = 0
        """Heartbeats done so far (one lease renewal each)."""
        self._followed: dict[SourceKey, dict[str, None]] = {}
        """The nodes whose pods follow each ConfigMap, Secret and claim (`_source_changed`), in
        the order they began to (a set's would vary from run to run)."""

    def _new_agent(self, config: NodeConfig) -> NodeAgent:
        client = self._node_client(config.name)
        agent = NodeAgent(
            Link(client, config.name), config, codec=self.codec, features=self.features
        )
        agent.sources = self._sources.lookup
        agent.services = self._services.list
        agent.pods = self._pods.list
        agent.packed_pod = self._pods.packed
        agent.sources_followed = functools.partial(self._followed_by, config.name)
        agent.node_lease.write_renewals = agent.post_unchanged_status = not self.simulated
        agent.token_manager.defer = self.simulated
        # Its client is in process: the live mode's first tokens are granted, signed when read.
        agent.token_manager.sign_when_read = not self.process and not self.simulated
        return agent

    async def start(self) -> None:
        """Register every node (each tried again until the API server takes it, as a
        starting kubelet does), then follow pods and nodes and start the heartbeat wheel."""
        agents = list(self.agents.values())
        for i in range(0, len(agents), REGISTRATION_BATCH):
            batch = agents[i : i + REGISTRATION_BATCH]
            await asyncio.gather(*(a.register(retry=True) for a in batch))
        self._nodes.add_event_handler(self._node, self._node_updated, self._node_deleted)
        self._pods.add_event_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        if self.agents:
            await self._follow_pods()
        self._nodes.start()
        await self._nodes.wait_for_sync()
        self._wheel = self.clock.loop.create_task(self._turn())

    async def _follow_pods(self) -> None:
        """Watch the bound pods once the pool has a node (it may never have one)."""
        if not self._pods_started:
            self._pods_started = True
            await self._sources.start()
            self._services.start()
            await self._services.wait_for_sync()
            self._pods.start()
        await self._pods.wait_for_sync()

    async def stop(self) -> None:
        await self._pods.stop()
        await self._sources.stop()
        await self._services.stop()
        await self._nodes.stop()
        for agent in self.agents.values():
            # Writes under way are given up with the kubelet, not left to land in (or fail
            # against) a store that closes after the plane stops.
            _link(agent).connected = False
            agent.shut_down()
        for task in self._adopting.values():
            task.cancel()
        if self._wheel is not None:
            self._wheel.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._wheel

    def agent(self, name: str) -> NodeAgent | None:
        """The agent of the node `name`, if this pool runs it."""
        return self.agents.get(name)

    def configs(self) -> list[NodeConfig]:
        """Every node of the pool, its agent running or stopped."""
        return [a.config for a in (*self.agents.values(), *self._stopped.values())]

    def has(self, name: str) -> bool:
        """Whether `name` is a node of the pool, its agent running or stopped."""
        return name in self.agents or name in self._stopped

    @property
    def failed(self) -> frozenset[str]:
        """The nodes whose agent stopped (`fail_node`) and has not started again."""
        return frozenset(self._stopped)

    @property
    def partitioned(self) -> frozenset[str]:
        """The nodes whose agent runs cut off from the API server (`partition`)."""
        return frozenset(n for n, a in self.agents.items() if not _link(a).connected)

    def last_renewal(self, node: str) -> float | None:
        """When the kubelet of `node` last renewed its Lease before now (seconds, as the
        Lease's MicroTime holds them), written or kept in the account (where a failed node's
        last renewal stays); None for a node with no agent here, or none that renewed. The
        node lifecycle controller of the simulated mode reads this beside the Leases."""
        agent = self.agents.get(node) or self._stopped.get(node)
        if agent is None:
            return None
        now = self.clock.now()
        renewed = max(
            [agent.node_lease.renewed_before(now), *(b for b in self._missed(agent) if b < now)]
        )
        return micro_instant(renewed) if renewed > -math.inf else None

    def renewal_interval(self, node: str) -> float | None:
        """How often the kubelet of `node` renews while its renewals are kept in the account
        (it runs, reaches the API server, is not slowed): `last_renewal` moves on by itself
        until `stopped` names the node. None otherwise."""
        agent = self.agents.get(node)
        if agent is None or agent.node_lease.write_renewals or not self._accounted(agent):
            return None
        return agent.config.lease_renew_interval

    def stopped(self, since: int) -> tuple[list[str], int]:
        """The nodes whose kubelets stopped renewing in the account (failed, partitioned,
        slowed, gone) after the first `since` such stops, and how many there were."""
        return self._stops[since:], len(self._stops)

    async def before_read(self, kind: Kind, namespace: str, name: str) -> None:
        """Before a read of Leases in kube-node-lease (`DeferredWrites`): the last renewal
        in the account of each healthy node read is written, so its Lease shows it."""
        leases = kind.plural == LEASES.plural and kind.group == LEASES.group
        if not leases or namespace not in ("", NODE_LEASE_NAMESPACE):
            return
        agents = [self.agents.get(name)] if name else list(self.agents.values())
        for agent in agents:
            if agent is None or agent.node_lease.write_renewals or not self._accounted(agent):
                continue
            renewed = self.last_renewal(agent.name)
            if renewed is not None:
                with contextlib.suppress(StatusError):  # the Lease shows what it shows
                    await agent.node_lease.show_renewal(renewed, agent.node)

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever a kubelet stops renewing in the account (`stopped`)."""
        self._stop_listeners.append(callback)

    def _stopped_renewing(self, name: str) -> None:
        self._stops.append(name)
        for callback in self._stop_listeners:
            callback()

    def slowness(self, name: str) -> float:
        """How many times less often than its own the node's heartbeats come (1: as usual)."""
        return self._slowness.get(name, 1.0)

    def summaries(self) -> Mapping[str, Summary]:
        """The stats summary now of every node the API server can reach, by node name, each
        made when it is first read."""
        return NodeReadings(self._connected(), lambda agent: agent.summary())

    def resource_metrics(self) -> Mapping[str, NodeMetricsPoint]:
        """`summaries`' CPU and memory figures alone, for less (`NodeAgent.resource_metrics`)."""
        return NodeReadings(self._connected(), lambda agent: agent.resource_metrics())

    def _connected(self) -> dict[str, NodeAgent]:
        """The agents the API server can reach, by node name."""
        return {n: a for n, a in self.agents.items() if _link(a).connected}

    def proxy(self, node: str, path: str) -> tuple[bytes, str]:
        """What the node's kubelet serves to monitoring at `path` (`kubelet.endpoints`), as the
        API server's node proxy reaches it; 404 for an unknown node or path, 503 for a node
        the API server cannot reach."""
        agent, served_by = self._monitored(node)
        served = served_by.serve(node, path, self.clock.now(), agent.summary, agent.runtime)
        if served is None:
            raise StatusError(404, "NotFound", "the server could not find the requested resource")
        return served

    def served_summary(self, node: str) -> Summary:
        """The stats summary the node's /stats/summary serves now (`proxy`), unrendered; 404
        for an unknown node, 503 for a node the API server cannot reach."""
        agent, served_by = self._monitored(node)
        return served_by.summary(self.clock.now(), agent.summary, agent.runtime)

    def _monitored(self, node: str) -> tuple[NodeAgent, endpoints.NodeEndpoints]:
        agent = self.agents.get(node)
        if agent is None:
            raise StatusError(404, "NotFound", f'nodes "{node}" not found',
                              {"name": node, "kind": "nodes"})  # fmt: skip
        if not _link(agent).connected:
            raise StatusError(503, "ServiceUnavailable", f'no route to node "{node}"')
        served_by = self._endpoints.get(node)
        if served_by is None:
            served_by = self._endpoints[node] = endpoints.NodeEndpoints(self.housekeeping_interval)
        return agent, served_by

    def oom_kills(self) -> int:
        """Containers the OOM killer has ended on every node so far."""
        return sum(agent.runtime.oom_kills for agent in self.agents.values())

    def usage(self) -> dict[str, tuple[int, int]]:
        """What the pods of every node the API server can reach use now, by node name: CPU
        (nano-cores) and memory working set (bytes), as their summaries have it; a node with no
        pod is left out (its pods use nothing)."""
        return {
            name: agent.pods_usage()
            for name, agent in self.agents.items()
            if agent.workers and _link(agent).connected  # a node without pods uses nothing
        }

    def pod(self, namespace: str, name: str) -> Object | None:
        """The bound pod `namespace/name`, if one of the pool's nodes runs it."""
        pod = self._pods.get(namespace, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName") not in self.agents:
            return None
        return pod

    def read_log(self, pod: Object, container: str, options: LogOptions) -> AsyncIterator[str]:
        """The API server's pods/log source for every node of the pool."""
        try:
            agent = self._reachable(pod)
        except Unreachable as e:
            url = f"https://{e.address}/containerLogs/{_pod_path(pod)}/{container}"
            raise StatusError(500, "", f'Get "{url}": {e}') from None
        if agent is None:
            name = pod["metadata"]["name"]
            raise status.bad_request(f'container "{container}" in pod "{name}" is not available')
        return agent.read_log(pod, container, options)

    def exec(self, pod: Object, options: StreamOptions) -> Session:
        """The API server's pods/exec source for every node of the pool."""
        agent = self._reachable(pod)
        if agent is None:
            raise StreamError(f'container not found ("{options.container}")')
        return agent.exec(pod, options)

    def attach(self, pod: Object, options: StreamOptions) -> Session:
        """The API server's pods/attach source for every node of the pool."""
        agent = self._reachable(pod)
        if agent is None:
            m = pod["metadata"]
            full_name = f"{m['name']}_{m['namespace']}"
            raise StreamError(f"container {options.container} not found in pod {full_name}")
        return agent.attach(pod, options)

    def port_forward(self, pod: Object, port: int) -> Forward:
        """The API server's pods/portforward source for every node of the pool."""
        agent = self._reachable(pod)
        if agent is None:
            raise StreamError(refused(pod["metadata"].get("uid", ""), port))
        return agent.port_forward(pod, port)

    def _reachable(self, pod: Object) -> NodeAgent | None:
        """The agent of the pod's node; None when the pool has no such node. Raises
        Unreachable when the API server cannot reach its kubelet."""
        node = (pod.get("spec") or {}).get("nodeName", "")
        agent = self.agents.get(node)
        if node in self._stopped or (agent is not None and not _link(agent).connected):
            config = (self._stopped.get(node) or self.agents[node]).config
            why = "connect: connection refused" if node in self._stopped else "i/o timeout"
            raise Unreachable(f"{config.internal_ip}:{KUBELET_PORT}", why)
        return agent

    # --- faults and changes ------------------------------------------------------------------

    async def fail_node(self, name: str) -> None:
        """The node's kubelet stops: nothing more of it reaches the API server, and it hears
        of nothing. Its pods stay as the API has them; `recover_node` starts it again."""
        if name in self._stopped:
            return
        agent = self._running(name)
        self._wake(agent)
        await agent.node_lease.write_last_renewal(agent.node)
        self._end(agent)
        self._stopped[name] = agent

    async def recover_node(self, name: str) -> None:
        """End the node's faults: a stopped kubelet starts again, as a kubelet restarted on
        the node (it updates its Node and Lease, takes back its pods where their status left
        them, stops those deleted meanwhile); a partitioned one is reconnected and reconciles
        its pods with the API's; a slowed one beats at its own pace again."""
        stopped = self._stopped.pop(name, None)
        self._unslow(name)
        if stopped is not None:
            try:
                await self._start_agent(stopped.config)
            except BaseException:
                self._stopped[name] = stopped
                raise
            return
        agent = self._running(name)
        link = _link(agent)
        if not link.connected:
            link.connected = True
            agent.token_manager.defer = self.simulated
            self._reconcile(agent)

    async def partition(self, name: str) -> None:
        """Cut the node's agent off from the API server: it runs on, but its writes fail
        (and are tried again as the kubelet tries them) and it hears of no change."""
        agent = self._running(name)
        await self._write_renewals(agent)
        agent.token_manager.settle()  # the refreshes it accounted for, while it can ask
        agent.token_manager.defer = False
        _link(agent).connected = False

    async def slow(self, name: str, factor: float) -> None:
        """The node's heartbeats (lease renewal, node status, eviction monitoring) come
        `factor` (>= 1) times less often, to the nearest beat of the heartbeat wheel."""
        if not factor >= 1:
            raise ValueError(f"a slowness factor is at least 1, not {factor:g}")
        agent = self._running(name)
        if factor == 1:
            self._unslow(name)
            return
        await self._write_renewals(agent)
        self._slowness[name] = factor
        self._next_heartbeat[name] = self.clock.monotonic() + self.interval * factor

    async def add_nodes(self, configs: Iterable[NodeConfig]) -> None:
        """Register new nodes and run their agents (names and indexes no node has yet)."""
        configs = list(configs)
        taken = [c.name for c in configs if c.name in self.agents or c.name in self._stopped]
        if taken or len({c.name for c in configs}) < len(configs):
            raise ValueError(f"nodes already in the pool: {', '.join(taken) or 'repeated'}")
        self.next_index = max([self.next_index, *(c.index + 1 for c in configs)])
        self.interval = common_period(self.interval, *(c.heartbeat_interval for c in configs))
        for i in range(0, len(configs), REGISTRATION_BATCH):
            batch = configs[i : i + REGISTRATION_BATCH]
            await asyncio.gather(*(self._start_agent(c) for c in batch))

    async def remove_node(self, name: str) -> None:
        """The node goes away, as a cloud provider's node deleted: its agent stops and its
        Node is deleted."""
        if self._stopped.pop(name, None) is None:
            self._end(self._running(name))
        self._unslow(name)
        self._removing.add(name)
        try:
            await self.client.delete(NODES, "", name)
        except StatusError as e:
            if e.code != 404:
                raise
            self._removing.discard(name)

    def _running(self, name: str) -> NodeAgent:
        agent = self.agents.get(name)
        if agent is None:
            state = "stopped" if name in self._stopped else "not a simulated node of this pool"
            raise NotRunning(f"node {name!r} is {state}")
        return agent

    def _end(self, agent: NodeAgent) -> None:
        """The agent's kubelet ends: it gets no more heartbeats or events, and a write it has
        under way does not land."""
        self.agents.pop(agent.name, None)
        self._quiet.pop(agent.name, None)
        if not agent.node_lease.write_renewals:
            self._stopped_renewing(agent.name)
        place = self._slot_of.pop(agent.name, None)
        if place is not None:
            slot, order = place
            del self._slots[slot][order]
            self._awake[slot].pop(order, None)
        _link(agent).connected = False
        agent.shut_down()

    async def _write_renewals(self, agent: NodeAgent) -> None:
        """The agent's lease renewals are written from now on, the last one first: it is no
        longer healthy, and its Lease shows where its renewals stopped or slowed."""
        self._wake(agent)
        await agent.node_lease.write_last_renewal(agent.node)
        if not agent.node_lease.write_renewals:
            agent.node_lease.write_renewals = True
            self._stopped_renewing(agent.name)

    def _accounted(self, agent: NodeAgent) -> bool:
        """Whether the agent's renewals are kept in the account only: in the simulated mode,
        while it renews on time and reaches the API server."""
        return self.simulated and _link(agent).connected and agent.name not in self._slowness

    def _unslow(self, name: str) -> None:
        self._slowness.pop(name, None)
        self._next_heartbeat.pop(name, None)

    async def _start_agent(self, config: NodeConfig) -> NodeAgent:
        """Run an agent for the node of `config`: register it, start its heartbeat and hand it
        the pods bound to it."""
        agent = self._new_agent(config)
        self.agents[config.name] = agent  # from now on its Node is not adopted
        try:
            await agent.register()
        except BaseException:
            self.agents.pop(config.name, None)
            raise
        self._join_slot(agent, min(range(len(self._slots)), key=lambda i: len(self._slots[i])))
        await self._follow_pods()
        for pod in self._bound_to(config.name):
            agent.pod_added(pod)
        return agent

    def _bound_to(self, name: str) -> list[Object]:
        """The pods bound to the node `name`, as the pod informer has them."""
        return self._pods.by_index(NODE_NAME, name)

    def _reconcile(self, agent: NodeAgent) -> None:
        """What a reconnected agent's informers tell it once they list again: its Node, and
        its pods as they are now (those gone meanwhile, as deleted)."""
        node = self._nodes.get("", agent.name)
        if node is not None:
            agent.node_changed(node)
        pods = self._bound_to(agent.name)
        present = {p["metadata"]["uid"] for p in pods}
        for worker in list(agent.workers.values()):
            if worker.uid not in present:
                agent.pod_deleted(worker.read_pod())
        for pod in pods:
            agent.pod_updated(pod, pod)

    # --- the wheel and the informers' events -------------------------------------------------

    def _join_slot(self, agent: NodeAgent, slot: int) -> None:
        self._joined += 1
        self._slots[slot][self._joined] = agent
        self._slot_of[agent.name] = (slot, self._joined)
        self._awaken(slot, self._joined, agent)

    def _awaken(self, slot: int, order: int, agent: NodeAgent) -> None:
        """The wheel calls the agent from the slot's next tick on."""
        if not self._awake[slot]:
            self._awake_since[slot] = self.clock.now()
            self._alarm.ring()
        self._awake[slot][order] = agent

    async def _turn(self) -> None:
        """Tick by tick, each slot's awake agents' heartbeats; a tick of a slot with none
        awake is skipped, and when no slot has one the wheel sleeps until an agent wakes."""
        self._start, self._step = self.clock.now(), self.interval / len(self._slots)
        while True:
            if self._step != self.interval / len(self._slots):  # nodes added that beat more often
                for name in list(self._quiet):
                    self._wake(self.agents[name])
                passed = self._passed()
                self._start, self._step = self._tick_time(passed), self.interval / len(self._slots)
                self._tick = 0
            tick = self._next_tick()
            if tick is None or tick > self._tick + 1:
                # skipping ticks: until the next tick of an awake slot, or a wake before
                rung = await self._alarm.sleep_until(self._tick_time(tick))
                if rung or tick is None:
                    continue
            else:
                await self.clock.sleep_until(self._tick_time(tick))
            self._tick = tick
            await self._beat(tick % len(self._slots))

    async def _beat(self, slot: int) -> None:
        now = self.clock.now()
        awake = self._awake[slot]
        for agent in [awake[order] for order in sorted(awake)]:
            if agent.name in self._quiet or self.agents.get(agent.name) is not agent:
                continue  # gone quiet, or its Node was deleted, meanwhile
            if agent.name in self._slowness and not self._slow_beat(agent.name):
                continue
            # it logs what fails in it
            await agent.heartbeat(self.interval * self._slowness.get(agent.name, 1.0))
            self.renewals += 1
            if agent.node_lease.write_renewals and self._accounted(agent):
                agent.node_lease.write_renewals = False  # healthy again, its last written
            elif agent.beats_every(self.interval) and agent.idle():
                self._quiet[agent.name] = now
                del awake[self._slot_of[agent.name][1]]

    def _tick_time(self, tick: int | None) -> float:
        return math.inf if tick is None else self._start + tick * self._step

    def _passed(self) -> int:
        """The last tick passed by now: run, or skipped before now."""
        behind = math.ceil((self.clock.now() - self._start) / self._step) - 1
        while self._tick_time(behind + 1) < self.clock.now():
            behind += 1
        while behind > 0 and self._tick_time(behind) >= self.clock.now():
            behind -= 1
        return max(self._tick, behind)

    def _next_tick(self) -> int | None:
        """The next tick to run: the first after the last run whose slot has had an agent
        awake since before it; None when no slot has one."""
        n, following = len(self._slots), None
        for slot, awake in enumerate(self._awake):
            if not awake:
                continue
            tick = self._tick + 1 + (slot - self._tick - 1) % n
            since = self._awake_since[slot]
            if self._tick_time(tick) < since:
                behind = math.ceil((since - self._tick_time(tick)) / (n * self._step))
                tick += n * behind
                while tick - n > self._tick and self._tick_time(tick - n) >= since:
                    tick -= n  # rounding
                while self._tick_time(tick) < since:
                    tick += n
            if following is None or tick < following:
                following = tick
        return following

    def _missed(self, agent: NodeAgent) -> list[float]:
        """The beats of its slot a quiet agent was left out of (the last two at most, all it
        needs to know)."""
        since = self._quiet.get(agent.name)
        if since is None:
            return []
        n, slot = len(self._slots), self._slot_of[agent.name][0]
        passed = self._passed()
        last = passed - (passed - slot) % n
        ticks = [t for t in (last - n, last) if t >= 1]
        return [b for b in map(self._tick_time, ticks) if b > since]

    def _wake(self, agent: NodeAgent) -> None:
        """The wheel calls the agent again, told of the beats it was left out of: something
        reached it, or it is no longer healthy."""
        if agent.name in self._quiet:
            agent.beats_missed(self._missed(agent))
            del self._quiet[agent.name]
            slot, order = self._slot_of[agent.name]
            self._awaken(slot, order, agent)

    def _slow_beat(self, name: str) -> bool:
        """Whether a slowed agent's heartbeat is due at this beat of its slot."""
        now = self.clock.monotonic()
        if now < self._next_heartbeat[name] - self.interval / 2:
            return False
        self._next_heartbeat[name] = now + self.interval * self._slowness[name]
        return True

    def _agent_of(self, pod: Object) -> NodeAgent | None:
        """The agent that hears of the pod's changes: its node's (awake), unless it is cut
        off."""
        agent = self.agents.get((pod.get("spec") or {}).get("nodeName", ""))
        if agent is None or not _link(agent).connected:
            return None
        self._wake(agent)
        return agent

    def _node(self, node: Object) -> None:
        name = node["metadata"]["name"]
        agent = self.agents.get(name)
        if agent is not None:
            if _link(agent).connected:
                self._wake(agent)
                agent.node_changed(node)
        elif (
            name not in self._adopting
            and name not in self._stopped
            and name not in self._removing
            and not node["metadata"].get("deletionTimestamp")
        ):
            task = self.clock.loop.create_task(self._adopt(node))
            self._adopting[name] = task
            task.add_done_callback(lambda _: self._adopting.pop(name, None))

    async def _adopt(self, node: Object) -> None:
        """Run an agent for a labelled Node someone else created."""
        config = adopted_config(node, self.next_index, self.process)
        self.next_index += 1
        try:
            await self._start_agent(config)
        except StatusError as e:
            log.warning("node %s: not adopted: %s", config.name, e.message)

    def _source_changed(self, kind: SourceKind, source: Mapping[str, Any]) -> None:
        """Tell the nodes whose pods follow the source, and no other."""
        for name in list(self._followed.get(source_key(kind, source), ())):
            agent = self.agents.get(name)
            if agent is not None and _link(agent).connected:
                agent.source_changed(kind, source)

    def _followed_by(self, node: str, key: SourceKey, followed: bool) -> None:
        nodes = self._followed.setdefault(key, {})
        if followed:
            nodes[node] = None
            return
        nodes.pop(node, None)
        if not nodes:
            del self._followed[key]

    def _node_updated(self, old: Object, new: Object) -> None:
        self._node(new)

    def _node_deleted(self, node: Object) -> None:
        name = node["metadata"]["name"]
        self._removing.discard(name)
        agent = self.agents.get(name)
        if agent is not None:
            self._end(agent)

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


class NotRunning(LookupError):
    """A fault asked of a node whose agent the pool does not run: not one of its nodes, or
    stopped."""


def _link(agent: NodeAgent) -> Link:
    link = agent.client
    assert isinstance(link, Link), "the pool's agents talk through a Link"
    return link


def _node_name(pod: Object) -> list[str]:
    return [(pod.get("spec") or {}).get("nodeName") or ""]


def _pod_path(pod: Object) -> str:
    m = pod["metadata"]
    return f"{m['namespace']}/{m['name']}"


def adopted_config(node: Object, index: int, agent: str = "") -> NodeConfig:
    """The simulated shape of a Node created through the API: its status.capacity, or the
    default shape when it has none; run by the `pinnace agent` process `agent`, if given."""
    capacity = (node.get("status") or {}).get("capacity") or DEFAULT_CAPACITY
    labels = {AGENT_LABEL: agent} if agent else {}
    return NodeConfig(
        name=node["metadata"]["name"], index=index, capacity=dict(capacity), labels=labels
    )
