"""The node lifecycle controller, as v1.32's kube-controller-manager runs it
(pkg/controller/nodelifecycle), with taint-based eviction, the only mode left.

Every node_monitor_period (5 s) it looks at every node's heartbeats: the Ready condition's
lastHeartbeatTime and the renewTime of its Lease in kube-node-lease. A node heard from by
neither for node_monitor_grace_period (50 s; node_startup_grace_period, 60 s, while it has
never posted a Ready condition) gets Ready, MemoryPressure, DiskPressure and PIDPressure set to
Unknown ("Kubelet stopped posting node status."), its pods marked not ready, and a NodeNotReady
event. On the next pass a node whose Ready is False or Unknown is queued to get the not-ready
or unreachable NoExecute taint; a Ready node loses both at once.

Queued nodes are tainted per zone (topology.kubernetes.io/region and zone) at a rate that
follows the zone's health: evictionLimiterQPS (0.1 nodes/s) normally and when the zone is
fully down; when at least unhealthyZoneThreshold (55 %) and more than two of its nodes are
not ready, secondaryEvictionLimiterQPS (0.01) if the zone has more than
largeClusterSizeThreshold (50) nodes, else none; when every zone is fully down ("master
disruption mode") no node is tainted and the NoExecute taints are taken off, since the fault is
more likely the control plane's than every node's. Pods leave tainted nodes through the taint
eviction controller (`pinnace.controllers.taint_eviction`).

On every node change it also keeps the NoSchedule taints in step with the conditions and
spec.unschedulable (TaintNodesByCondition): not-ready, unreachable, memory-pressure,
disk-pressure, pid-pressure, network-unavailable and unschedulable.

In the simulated mode the kubelets of healthy nodes renew their Leases in their node pool's
account rather than through the API server, so the controller reads each node's last renewal
from that account (`NodeHeartbeats`) beside its Lease, and reacts to the later of the two. Its
passes then leave out the healthy nodes (`pinnace.controllers.parked_nodes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, PatchType, object_key
from pinnace.clock import Clock, parse_time
from pinnace.clock.periodic import Periodic
from pinnace.controllers.controller_utils import POD_NODE_INDEX, TokenBucket, pods_on_nodes
from pinnace.controllers.parked_nodes import ParkedNodes

log = logging.getLogger(__name__)

COMPONENT = "node-controller"
NODE_LEASE_NAMESPACE = "kube-node-lease"
NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"
UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
"""The conditions set to Unknown when the kubelet stops posting."""
CONDITION_TAINTS: Mapping[str, Mapping[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
CONDITION_TAINT_KEYS = frozenset(
    key for by_status in CONDITION_TAINTS.values() for key in by_status.values()
) | {UNSCHEDULABLE}
EVICTION_BURST = 1
NODES_PER_TURN = 500
"""A pass over thousands of nodes lets the event loop run between batches of this many
(about 15 ms each), so watches and requests are not held up."""

NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
LEASES = catalog.kind("coordination.k8s.io", "leases")


class NodeHeartbeats(Protocol):
    """Where the simulated mode keeps the lease renewals it does not write (a node pool)."""

    def last_renewal(self, node: str) -> float | None:
        """When the node's kubelet last renewed its Lease before now (clock seconds, as the
        Lease's renewTime holds them); None when the account holds no renewal of it."""

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call `callback` whenever a node's kubelet stops renewing on time (`stopped` then
        names it)."""

    def renewal_interval(self, node: str) -> float | None:
        """How often the node's kubelet renews while it renews on time, in the account (so
        `last_renewal` moves on by itself, until `stopped` names the node); else None."""

    def stopped(self, since: int) -> tuple[list[str], int]:
        """The nodes whose kubelets stopped renewing on time (they failed, were cut off,
        slowed or went) after the first `since` such stops, and how many stops there were."""


@dataclass(frozen=True)
class NodeLifecycleConfig:
    """kube-controller-manager's flags of the same names (seconds, nodes per second)."""

    node_monitor_period: float = 5.0
    node_monitor_grace_period: float = 50.0
    node_startup_grace_period: float = 60.0
    node_eviction_period: float = 0.1
    """How often queued nodes are tainted (as the controller's NodeEvictionPeriod)."""
    node_eviction_rate: float = 0.1
    secondary_node_eviction_rate: float = 0.01
    large_cluster_size_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55


class ZoneState(StrEnum):
    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


def zone_key(node: Mapping[str, Any]) -> str:
    """GetZoneKey: region and zone joined, "" for a node that has neither."""
    labels = node["metadata"].get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def condition(node: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions = (node.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == kind), None)


def has_taint(node: Mapping[str, Any], key: str, effect: str) -> bool:
    taints = (node.get("spec") or {}).get("taints") or ()
    return any(t.get("key") == key and t.get("effect") == effect for t in taints)


def condition_taints(node: Mapping[str, Any]) -> set[str]:
    """The NoSchedule taint keys the node's conditions and spec.unschedulable call for."""
    keys = {
        by_status[c.get("status", "")]
        for c in (node.get("status") or {}).get("conditions") or ()
        if (by_status := CONDITION_TAINTS.get(c.get("type", ""))) and c.get("status") in by_status
    }
    if (node.get("spec") or {}).get("unschedulable"):
        keys.add(UNSCHEDULABLE)
    return keys


@dataclass
class _Queued:
    name: str
    uid: str
    process_at: float
    order: int


class RateLimitedQueue:
    """RateLimitedTimedQueue: node names to process no faster than the limiter allows. A
    processed name stays a member (so it is not queued again) until `remove`."""

    def __init__(self, clock: Clock, qps: float) -> None:
        self._clock = clock
        self.limiter = TokenBucket(clock, qps, EVICTION_BURST)
        self._queue: list[_Queued] = []
        self._members: set[str] = set()
        self._order = 0

    @property
    def pending(self) -> bool:
        """Whether a name waits to be processed."""
        return bool(self._queue)

    def add(self, name: str, uid: str) -> bool:
        if name in self._members:
            return False
        self._members.add(name)
        self._order += 1
        self._queue.append(_Queued(name, uid, self._clock.now(), self._order))
        return True

    def remove(self, name: str) -> bool:
        if name not in self._members:
            return False
        self._members.discard(name)
        self._queue = [q for q in self._queue if q.name != name]
        return True

    def swap_limiter(self, qps: float) -> None:
        if self.limiter.qps == qps:
            return
        limiter = TokenBucket(self._clock, qps, EVICTION_BURST)
        if qps > 0 and not self.limiter.try_accept():
            limiter.try_accept()  # the old one was exhausted: so is the new one
        self.limiter = limiter

    def process(self, handle: Callable[[str], bool]) -> None:
        """Hand queued names, earliest first, to `handle` while the limiter lets through;
        one it returns False for is tried again later."""
        while self._queue:
            self._queue.sort(key=lambda q: (q.process_at, q.order))
            head = self._queue[0]
            if not self.limiter.try_accept() or self._clock.now() < head.process_at:
                return
            if handle(head.name):
                self._queue.pop(0)
            else:
                head.process_at = self._clock.now() + 1e-9


@dataclass
class _Health:
    probe_timestamp: float
    ready: Mapping[str, Any] | None
    lease_renew: float | None = None


@dataclass
class _Zones:
    tainters: dict[str, RateLimitedQueue] = field(default_factory=dict)
    states: dict[str, ZoneState] = field(default_factory=dict)


class NodeLifecycleController:
    def __init__(
        self,
        client: Client,
        config: NodeLifecycleConfig | None = None,
        *,
        heartbeats: NodeHeartbeats | None = None,
        pods: Informer | None = None,
    ) -> None:
        """`heartbeats`: the account of lease renewals not written (the simulated mode);
        `pods`: the informer on pods bound to nodes it shares (`pods_on_nodes`; its own when
        None)."""
        self.config = config or NodeLifecycleConfig()
        self._heartbeats = heartbeats
        self._client = client
        self._clock = client.clock
        self._recorder = EventRecorder(client, COMPONENT)
        self._nodes = Informer(client, NODES)
        self._leases = Informer(client, LEASES, NODE_LEASE_NAMESPACE)
        self._pods = pods if pods is not None else pods_on_nodes(client)
        self._known: dict[str, Object] = {}
        self._health: dict[str, _Health] = {}
        self._monitor = Periodic(self._clock, self.config.node_monitor_period, self._monitor_pass)
        """The monitor passes; in the simulated mode those that would only count the parked
        nodes ready are skipped."""
        self._parked = ParkedNodes()
        """The healthy nodes the passes leave out (the simulated mode)."""
        self._stops_seen = 0
        self._membership_changed = False
        """A node was added or deleted since the last pass looked at every node."""
        self._zones = _Zones()
        self._no_schedule_pending: dict[str, None] = {}
        """nodeUpdateQueue: the nodes to check, first changed first, each once (a dict as an
        ordered set: a set's order would follow the process's string hashing)."""
        self._no_schedule_wake = asyncio.Event()
        self._queued = asyncio.Event()
        """A node was queued for a NoExecute taint."""
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def zone_states(self) -> dict[str, ZoneState]:
        return dict(self._zones.states)

    async def start(self) -> None:
        self._nodes.add_event_handler(
            self._node_changed, lambda _, new: self._node_changed(new), None
        )
        if self._heartbeats is not None:
            self._leases.add_event_handler(self._stir, lambda _, new: self._stir(new))
            self._nodes.add_event_handler(self._membership, None, self._membership)
            self._heartbeats.on_stop(self._monitor.wake)
        for informer in (self._nodes, self._leases, self._pods):
            informer.start()
        for informer in (self._nodes, self._leases, self._pods):
            await informer.wait_for_sync()
        loop = self._clock.loop
        self._tasks = [
            loop.create_task(self._monitor.run()),
            loop.create_task(self._tainting()),
            loop.create_task(self._no_schedule_worker()),
        ]

    async def stop(self) -> None:
        for informer in (self._nodes, self._leases, self._pods):
            await informer.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _monitor_pass(self) -> float | None:
        """A monitor pass; when the next could change something (`Periodic`)."""
        outcome: float | None = await self._attempt(self.monitor_node_health)
        return outcome

    async def _attempt(self, work: Callable[[], Any]) -> Any:
        """`work`'s result; None when it failed."""
        try:
            return await work()
        except Exception:  # one failed pass must not end the controller
            log.exception("node lifecycle controller: pass failed")
            return None

    async def _tainting(self) -> None:
        """A NoExecute tainting pass every node_eviction_period. While no zone has a node
        queued a pass does nothing, so none is made: the loop waits for a node to be queued,
        then goes on at the times its passes would have come at."""
        period = self.config.node_eviction_period
        while True:
            await self._attempt(self._taint_pass)
            self._queued.clear()
            if any(t.pending for t in self._zones.tainters.values()):
                await self._clock.sleep(period)
                continue
            at = self._clock.now() + period
            await self._queued.wait()
            while at < self._clock.now():
                at += period
            await self._clock.sleep_until(at)

    # --- health ------------------------------------------------------------------------------

    async def monitor_node_health(self) -> float | None:
        """monitorNodeHealth; when the next pass could change something (None: the next
        period, as in v1.32; only the simulated mode's passes tell)."""
        if self._heartbeats is not None:
            await self._monitor_parked(self._heartbeats)
            return self._parked.next_outcome()
        nodes = self._nodes.list()
        await self._follow_membership(nodes)
        zone_conditions: dict[str, list[str]] = {}
        for i, node in enumerate(nodes, start=1):
            if i % NODES_PER_TURN == 0:
                await asyncio.sleep(0)
            await self._look_at(node, zone_conditions)
        await self._handle_disruption(nodes, zone_conditions)
        return None

    async def _follow_membership(self, nodes: list[Object]) -> None:
        """Register the nodes new to the controller, remove those gone."""
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            if node["metadata"]["name"] not in self._known:
                await self._node_added(node)
        for name, node in list(self._known.items()):
            if name not in names:
                self._node_removed(node)

    async def _look_at(self, node: Object, zone_conditions: dict[str, list[str]]) -> None:
        """One node's part of a pass: its health, its zone's count, its NoExecute taints."""
        observed, current = await self._update_node_health(node)
        labels = node["metadata"].get("labels") or {}
        if EXCLUDE_DISRUPTION_LABEL not in labels:
            zone_conditions.setdefault(zone_key(node), []).append(current or "")
        if current is None:
            return
        await self._taint_based_eviction(node, observed)
        if current != "True" and observed == "True":
            name = node["metadata"]["name"]
            self._recorder.event(
                node,
                EVENT_TYPE_NORMAL,
                "NodeNotReady",
                f"Node {name} status is now: NodeNotReady",
            )
            await self._mark_pods_not_ready(name)
        if self._heartbeats is not None:
            self._park(node, observed, current)

    async def _monitor_parked(self, heartbeats: NodeHeartbeats) -> None:
        """The pass of the simulated mode: it looks only at the nodes not parked, in the order
        of a pass over every node and with its yields to the loop, and counts the parked ones
        ready in their zones."""
        self._revisit(heartbeats)
        if self._membership_changed:
            self._membership_changed = False
            await self._follow_membership(self._nodes.list())
        names = self._parked.to_look_at()
        order, place_of = self._nodes.places()
        places = sorted(place_of[n] for n in names if n in place_of)
        zone_conditions: dict[str, list[str]] = {}
        yielded = 0
        for place in places:
            while yielded < (place + 1) // NODES_PER_TURN:
                await asyncio.sleep(0)
                yielded += 1
            node = self._nodes.get("", order[place])
            if node is not None:
                self._catch_up(order[place])
                await self._look_at(node, zone_conditions)
        for _ in range(yielded, len(order) // NODES_PER_TURN):
            await asyncio.sleep(0)
        for zone, statuses in self._parked.zone_statuses().items():
            zone_conditions.setdefault(zone, []).extend(statuses)
        await self._handle_disruption(None, zone_conditions)

    def _park(self, node: Object, observed: str, current: str) -> None:
        """Leave the node out of the passes (`ParkedNodes`) while nothing they would do to it
        can be seen: it is Ready (was at the start of this pass too) and has no NoExecute taint
        of this controller (so none to take off, and it is queued for none). Until it could go
        stale, or for as long as its kubelet renews on time when it does so more often than
        the grace period, each pass would only count it ready and note its renewals. Or it is
        Unknown (was at the start of this pass too) with the unreachable NoExecute taint and
        not the not-ready one: until its Node or Lease changes, a pass would only count it not
        ready."""
        not_ready = has_taint(node, NOT_READY, NO_EXECUTE)
        unreachable = has_taint(node, UNREACHABLE, NO_EXECUTE)
        name = node["metadata"]["name"]
        excluded = EXCLUDE_DISRUPTION_LABEL in (node["metadata"].get("labels") or {})
        zone = None if excluded else zone_key(node)
        if observed == current == "True" and not not_ready and not unreachable:
            self._parked.park(name, self._due(name), zone)
        elif observed == current == "Unknown" and unreachable and not not_ready:
            self._parked.park(name, math.inf, zone, "Unknown")

    def _due(self, name: str) -> float:
        """When a parked node is looked at again: once it could go stale, unless its kubelet
        renews on time often enough that it cannot."""
        assert self._heartbeats is not None
        grace = self.config.node_monitor_grace_period
        interval = self._heartbeats.renewal_interval(name)
        if interval is not None and interval <= grace:
            return math.inf  # until `stopped` names it
        return self._health[name].probe_timestamp + grace

    def _revisit(self, heartbeats: NodeHeartbeats) -> None:
        """Catch up with the parked nodes that could be stale by now, and those whose kubelets
        stopped renewing on time: park again those still fresh, unpark the others."""
        now = self._clock.now()
        stopped, self._stops_seen = heartbeats.stopped(self._stops_seen)
        grace = self.config.node_monitor_grace_period
        for name in self._parked.due(now, stopped):
            self._catch_up(name)
            if now > self._health[name].probe_timestamp + grace:
                self._parked.unpark(name)  # looked at by this pass
            else:
                self._parked.repark(name, self._due(name))

    def _catch_up(self, name: str) -> None:
        """Note the node's latest renewal as the passes that left it out would have: at the
        first of them after it."""
        health = self._health.get(name)
        renewed = self._last_renewal(name)
        if health is None or renewed is None:
            return
        if health.lease_renew is not None and renewed <= health.lease_renew:
            return
        health.lease_renew = renewed
        seen = self._monitor.pass_after(renewed)
        health.probe_timestamp = max(health.probe_timestamp, seen)

    def _stir(self, obj: Object) -> None:
        """A parked node's Node or Lease changed: the next pass looks at it."""
        if self._parked.stir(obj["metadata"]["name"]):
            self._monitor.wake()

    def _membership(self, node: Object) -> None:
        self._membership_changed = True
        self._monitor.wake()

    async def _node_added(self, node: Object) -> None:
        name = node["metadata"]["name"]
        self._recorder.event(
            node, EVENT_TYPE_NORMAL, "RegisteredNode", f"Registered Node {name} in Controller"
        )
        self._known[name] = node
        self._parked.follow(name)
        self._tainter(zone_key(node))
        await self._mark_reachable(node)

    def _tainter(self, zone: str) -> RateLimitedQueue:
        """The zone's queue of nodes to taint, made (at the normal rate) on first sight."""
        tainter = self._zones.tainters.get(zone)
        if tainter is None:
            tainter = RateLimitedQueue(self._clock, self.config.node_eviction_rate)
            self._zones.tainters[zone] = tainter
        self._zones.states.setdefault(zone, ZoneState.INITIAL)
        return tainter

    def _node_removed(self, node: Object) -> None:
        name = node["metadata"]["name"]
        self._recorder.event(
            node, EVENT_TYPE_NORMAL, "RemovingNode", f"Removing Node {name} from Controller"
        )
        del self._known[name]
        self._health.pop(name, None)
        self._parked.forget(name)
        tainter = self._zones.tainters.get(zone_key(node))
        if tainter is not None:
            tainter.remove(name)

    async def _update_node_health(self, node: Object) -> tuple[str, str | None]:
        """tryUpdateNodeHealth: the Ready status seen at the start of the pass and after it
        (None when the node has no Ready condition and needed none written)."""
        name = node["metadata"]["name"]
        now = self._clock.now()
        ready = condition(node, "Ready")
        health = self._health.get(name)
        if ready is None:
            grace = self.config.node_startup_grace_period
            if health is None:
                created = parse_time(node["metadata"]["creationTimestamp"])
                health = _Health(created, None)
        else:
            grace = self.config.node_monitor_grace_period
            saved = health.ready if health else None
            if health is None:
                health = _Health(now, ready)
            elif saved is None or saved.get("lastHeartbeatTime") != ready.get("lastHeartbeatTime"):
                health.probe_timestamp, health.ready = now, ready
        renewed = self._last_renewal(name)
        if renewed is not None and (health.lease_renew is None or health.lease_renew < renewed):
            health.lease_renew = renewed
            health.probe_timestamp = now
        self._health[name] = health
        observed = ready.get("status", "") if ready else "Unknown"
        if now <= health.probe_timestamp + grace or (ready and ready.get("status") == "Unknown"):
            return observed, ready.get("status") if ready else None
        try:
            written = await self._client.modify(
                NODES, "", name, lambda n: _mark_unknown(n, self._clock), subresource="status"
            )
        except StatusError as e:
            log.warning("node %s: could not mark it Unknown: %s", name, e.message)
            return observed, ready.get("status") if ready else None
        health.ready = condition(written, "Ready")
        return observed, "Unknown"

    def _last_renewal(self, name: str) -> float | None:
        """The renewTime of the node's Lease, or the account's later renewal."""
        lease = self._leases.get(NODE_LEASE_NAMESPACE, name)
        text = ((lease or {}).get("spec") or {}).get("renewTime")
        written = parse_time(text) if text else None
        accounted = self._heartbeats.last_renewal(name) if self._heartbeats else None
        if accounted is None or (written is not None and written >= accounted):
            return written
        return accounted

    async def _mark_pods_not_ready(self, node_name: str) -> None:
        """MarkPodsNotReady: Ready False on every pod of the node that says Ready True."""
        for pod in self._pods.by_index(POD_NODE_INDEX, node_name):
            ready = next(
                (
                    c
                    for c in (pod.get("status") or {}).get("conditions") or ()
                    if c.get("type") == "Ready"
                ),
                None,
            )
            if ready is None or ready.get("status") == "False":
                continue
            m = pod["metadata"]
            patch = {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "False",
                            "lastTransitionTime": self._clock.now_rfc3339(),
                        }
                    ]
                }
            }
            try:
                await self._client.patch(
                    PODS,
                    m["namespace"],
                    m["name"],
                    patch,
                    PatchType.STRATEGIC_MERGE,
                    subresource="status",
                )
            except StatusError as e:
                if e.code != 404:
                    log.warning(
                        "pod %s: could not mark it not ready: %s", object_key(pod), e.message
                    )
                continue
            self._recorder.event(pod, EVENT_TYPE_WARNING, "NodeNotReady", "Node is not ready")

    # --- NoExecute taints --------------------------------------------------------------------

    async def _taint_based_eviction(self, node: Object, observed: str) -> None:
        """processTaintBaseEviction, on the Ready status seen at the start of the pass."""
        if observed == "False":
            if has_taint(node, UNREACHABLE, NO_EXECUTE):
                await self._swap_taints(
                    node, [(NOT_READY, NO_EXECUTE)], [(UNREACHABLE, NO_EXECUTE)]
                )
            else:
                self._queue_for_tainting(node, NOT_READY)
        elif observed == "Unknown":
            if has_taint(node, NOT_READY, NO_EXECUTE):
                await self._swap_taints(
                    node, [(UNREACHABLE, NO_EXECUTE)], [(NOT_READY, NO_EXECUTE)]
                )
            else:
                self._queue_for_tainting(node, UNREACHABLE)
        elif observed == "True":
            await self._mark_reachable(node)

    def _queue_for_tainting(self, node: Object, key: str) -> None:
        tainter = self._tainter(zone_key(node))
        name = node["metadata"]["name"]
        if not has_taint(node, key, NO_EXECUTE):
            tainter.remove(name)
        if tainter.add(name, node["metadata"].get("uid", "")):
            self._queued.set()

    async def _mark_reachable(self, node: Object) -> None:
        await self._swap_taints(node, [], [(UNREACHABLE, NO_EXECUTE), (NOT_READY, NO_EXECUTE)])
        tainter = self._zones.tainters.get(zone_key(node))
        if tainter is not None:
            tainter.remove(node["metadata"]["name"])

    async def _taint_pass(self) -> None:
        """doNoExecuteTaintingPass: taint the queued nodes the zones' limiters let through."""
        done: list[tuple[str, str]] = []  # (name, taint to add)

        def take(name: str) -> bool:
            node = self._nodes.get("", name)
            ready = condition(node, "Ready") if node else None
            wanted = CONDITION_TAINTS["Ready"].get(ready.get("status", "")) if ready else None
            if wanted is not None:
                done.append((name, wanted))
            return True

        for tainter in list(self._zones.tainters.values()):
            tainter.process(take)
        for name, key in done:
            node = self._nodes.get("", name)
            if node is None:
                continue
            opposite = UNREACHABLE if key == NOT_READY else NOT_READY
            await self._swap_taints(node, [(key, NO_EXECUTE)], [(opposite, NO_EXECUTE)])

    # --- zones -------------------------------------------------------------------------------

    def _zone_state(self, statuses: list[str]) -> ZoneState:
        ready = statuses.count("True")
        not_ready = len(statuses) - ready
        if ready == 0 and not_ready > 0:
            return ZoneState.FULL_DISRUPTION
        if not_ready > 2 and not_ready / len(statuses) >= self.config.unhealthy_zone_threshold:
            return ZoneState.PARTIAL_DISRUPTION
        return ZoneState.NORMAL

    def _zone_rate(self, zone_size: int, state: ZoneState) -> float:
        if state == ZoneState.PARTIAL_DISRUPTION:
            if zone_size > self.config.large_cluster_size_threshold:
                return self.config.secondary_node_eviction_rate
            return 0.0
        return self.config.node_eviction_rate

    async def _handle_disruption(
        self, nodes: list[Object] | None, zone_conditions: dict[str, list[str]]
    ) -> None:
        """handleDisruption, on the zones' Ready statuses; `nodes`: the nodes of the pass
        (None: those cached now)."""
        states = self._zones.states
        new = {zone: self._zone_state(statuses) for zone, statuses in zone_conditions.items()}
        for zone in new:
            self._tainter(zone)
        all_are_down = all(s == ZoneState.FULL_DISRUPTION for s in new.values())
        for zone in [z for z in states if z not in zone_conditions]:
            del states[zone]
        all_were_down = all(s == ZoneState.FULL_DISRUPTION for s in states.values())
        if all_are_down and all_were_down:
            return
        if all_are_down:
            log.warning("every node is not ready: entering master disruption mode")
            for node in nodes if nodes is not None else self._nodes.list():
                await self._mark_reachable(node)
            for zone in states:
                self._zones.tainters[zone].swap_limiter(0.0)
                states[zone] = ZoneState.FULL_DISRUPTION
            return
        if all_were_down:
            log.warning("some nodes are ready: leaving master disruption mode")
            now = self._clock.now()
            for health in self._health.values():
                health.probe_timestamp = now
        for zone, state in list(states.items()):
            if state != new[zone] or all_were_down:
                rate = self._zone_rate(len(zone_conditions[zone]), new[zone])
                self._zones.tainters[zone].swap_limiter(rate)
                states[zone] = new[zone]

    # --- NoSchedule taints -------------------------------------------------------------------

    def _node_changed(self, node: Object) -> None:
        self._stir(node)
        self._no_schedule_pending[node["metadata"]["name"]] = None
        self._no_schedule_wake.set()

    async def _no_schedule_worker(self) -> None:
        while True:
            await self._no_schedule_wake.wait()
            self._no_schedule_wake.clear()
            while self._no_schedule_pending:
                name = next(iter(self._no_schedule_pending))
                del self._no_schedule_pending[name]
                node = self._nodes.get("", name)
                if node is not None and not node["metadata"].get("deletionTimestamp"):
                    await self._no_schedule_pass(node)

    async def _no_schedule_pass(self, node: Object) -> None:
        """doNoScheduleTaintingPass."""
        wanted = condition_taints(node)
        taints = (node.get("spec") or {}).get("taints") or ()
        have = {
            t["key"]
            for t in taints
            if t.get("effect") == NO_SCHEDULE and t.get("key") in CONDITION_TAINT_KEYS
        }
        if wanted != have:
            await self._swap_taints(
                node,
                [(key, NO_SCHEDULE) for key in sorted(wanted - have)],
                [(key, NO_SCHEDULE) for key in sorted(have - wanted)],
            )

    async def _swap_taints(
        self,
        node: Object,
        add: Iterable[tuple[str, str]],
        remove: Iterable[tuple[str, str]],
    ) -> None:
        """SwapNodeControllerTaint: add and remove (key, effect) taints, if the cached node
        says there is anything to do."""
        add = [t for t in add if not has_taint(node, *t)]
        remove = [t for t in remove if has_taint(node, *t)]
        if not add and not remove:
            return
        stamp = self._clock.now_rfc3339()

        def swap(latest: Object) -> Object:
            spec = latest.setdefault("spec", {})
            taints = [
                t for t in spec.get("taints") or () if (t.get("key"), t.get("effect")) not in remove
            ]
            for key, effect in add:
                if not has_taint({"spec": {"taints": taints}}, key, effect):
                    taints.append({"key": key, "effect": effect, "timeAdded": stamp})
            if taints:
                spec["taints"] = taints
            else:
                spec.pop("taints", None)
            return latest

        try:
            await self._client.modify(NODES, "", node["metadata"]["name"], swap)
        except StatusError as e:
            if e.code != 404:
                log.warning(
                    "node %s: could not update taints: %s", node["metadata"]["name"], e.message
                )


def _mark_unknown(node: Object, clock: Clock) -> Object:
    """The kubelet stopped posting: every monitored condition turns Unknown."""
    status = node.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    now = clock.now_rfc3339()
    for kind in UNKNOWN_CONDITIONS:
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None:
            conditions.append(
                {
                    "type": kind,
                    "status": "Unknown",
                    "lastHeartbeatTime": node["metadata"]["creationTimestamp"],
                    "lastTransitionTime": now,
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                }
            )
        elif current.get("status") != "Unknown":
            current.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
                lastTransitionTime=now,
            )
    return node
