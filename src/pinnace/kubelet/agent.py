"""NodeAgent: the kubelet of one simulated node.

It registers its Node, renews its Lease and posts its status (`heartbeat`), admits the pods
bound to it (second-phase admission), runs each admitted pod through a `PodWorker` on its
container runtime, writes their status, finishes their graceful deletion, and serves their
logs. Standalone (`run`) it keeps its own informers and timers; in a `NodeAgentPool` the pool
feeds it pod and node events and calls its heartbeat. An agent started again over the pods an
earlier run of it started (`pinnace up` restarted on its data) takes them back where their
status left them, their IPs kept from the new pods (`PodWorker.resume`).

It composes the kubelet's parts, each in a module of its own: the node lease controller
(`node_lease`), the status manager that writes its pods' status (`status_manager`), the pod IPs
its network plugin's IPAM gives out (`ipam`), the images it pulled (`images`), the eviction
manager (`eviction`) and the static CPU manager (`cpu_manager`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from pinnace.api import catalog, status
from pinnace.api.core.pod_resize import same_resources
from pinnace.api.core.pod_shape import container_named
from pinnace.api.features import FeatureGates
from pinnace.api.objects import Object
from pinnace.api.options import LogOptions
from pinnace.api.stats import NodeMetricsPoint, PodMetricsPoint, Summary
from pinnace.api.status import StatusError
from pinnace.api.streams import Forward, Session, StreamError, StreamOptions
from pinnace.client import Client, EventRecorder, Informer, PatchType
from pinnace.kubelet.admission import (
    REJECTED_PREFIX,
    NodeUsage,
    PodDemand,
    admit,
    node_allocatable,
)
from pinnace.kubelet.behaviour import node_unknown_outcome
from pinnace.kubelet.config import (
    EVICTION_MONITORING_PERIOD,
    NODE_STATUS_UPDATE_RETRY,
    NodeConfig,
)
from pinnace.kubelet.cpu_manager import pod_cpusets, shared_pool_annotation, static_policy
from pinnace.kubelet.environment import NodeInfo, container_environment
from pinnace.kubelet.eviction import (
    POD_CLEANUP_POLL,
    POD_CLEANUP_TIMEOUT,
    ActivePod,
    Eviction,
    EvictionManager,
    UsageCeiling,
)
from pinnace.kubelet.eviction import REASON as EVICTED
from pinnace.kubelet.exec import run_attach, run_exec
from pinnace.kubelet.failures import LoopFailures
from pinnace.kubelet.gc import NodeGC
from pinnace.kubelet.image_gc import (
    IMAGE_GC_FAILED,
    IMAGE_GC_PERIOD,
    ImageGCError,
    ImageGCManager,
    ImageGCPolicy,
)
from pinnace.kubelet.images import NodeImages
from pinnace.kubelet.interning import Interned
from pinnace.kubelet.ipam import PodIPs
from pinnace.kubelet.listeners import refused, serve_http
from pinnace.kubelet.logs import container_log, waiting_to_start
from pinnace.kubelet.node_lease import NodeLease
from pinnace.kubelet.node_status import (
    condition_events,
    healthy_conditions,
    node_conditions,
    node_object,
    node_status,
)
from pinnace.kubelet.pod_status import CONTAINER_CREATING, TERMINAL_PHASES
from pinnace.kubelet.resize import (
    DEFERRED,
    IN_PROGRESS,
    INFEASIBLE,
    PodAllocation,
    allocated_pod,
    infeasible,
    restart_needed,
    spec_resources,
)
from pinnace.kubelet.runtime import (
    ContainerRuntime,
    ContainerStatus,
    LinuxContainerResources,
    LogRotation,
    OnExit,
    SimulatedRuntime,
    shaped_container_resources,
)
from pinnace.kubelet.service_links import ServiceLookup, no_services
from pinnace.kubelet.shell import ShellContext, WebGet
from pinnace.kubelet.sources import (
    FollowedChanged,
    SourceInformers,
    SourceKey,
    SourceKind,
    SourceLookup,
    no_sources,
    source_key,
)
from pinnace.kubelet.status_manager import PODS, StatusManager
from pinnace.kubelet.summary import filesystems, machine, node_summary
from pinnace.kubelet.tokens import TokenManager
from pinnace.kubelet.volumes import TokenSource
from pinnace.kubelet.web import PodLookup, no_pods, service_web
from pinnace.kubelet.worker import PackedLookup, PodWorker, started_on_node
from pinnace.resources.lists import ResourceList
from pinnace.resources.qos import GUARANTEED
from pinnace.store.codec import Codec

log = logging.getLogger(__name__)

COMPONENT = "kubelet"
LEASE_RENEWAL = "lease renewal"
EVICTION_MANAGER = "eviction manager"
NODE_STATUS_UPDATE = "node status update"
IMAGE_GC = "image garbage collection"
NODE_REGISTRATION = "node registration"
"""The agent's loops, as its log names them (and `status_manager.POD_STATUS_WRITE`)."""
REGISTRATION_FIRST_WAIT = 0.1
REGISTRATION_MAX_WAIT = 7.0
"""registerWithAPIServer's waits between attempts: 100 ms, doubling up to 7 s."""
FAILED_SYNC = "FailedSync"
"""The reason of the event on a pod whose sync failed, as the kubelet's."""


SERVICES = catalog.kind("", "services")
NODES = catalog.kind("", "nodes")


class NodeAgent:
    def __init__(
        self,
        client: Client,
        config: NodeConfig,
        *,
        runtime: ContainerRuntime | None = None,
        recorder: EventRecorder | None = None,
        codec: Codec | None = None,
        features: FeatureGates | None = None,
    ) -> None:
        self.client = client
        self.features = features or FeatureGates()
        """The kubelet's feature gates (in-place resize)."""
        self.codec = codec if codec is not None else Codec()
        """What packs its pods (`PodWorker.pod`, its pod informer's cache): the cluster's."""
        self.clock = client.clock
        self.booted = self.clock.now()
        """When the node started (its containers' `uptime`)."""
        self.config = config
        self.name = config.name
        self.machine = machine(config)
        self.runtime = runtime or SimulatedRuntime(
            self.clock,
            config.name,
            self.machine,
            LogRotation(config.container_log_max_size, config.container_log_max_files),
        )
        self.recorder = recorder or EventRecorder(client, COMPONENT, config.name)
        self.failures = LoopFailures(config.name)
        self.host_ip = config.internal_ip
        self.node: Object | None = None
        self.node_lease = NodeLease(client, config)
        self.workers: dict[str, PodWorker] = {}
        """Admitted pods by uid, until they are gone from the API."""
        self.status_manager = StatusManager(client, config.name, self.workers, self.failures)
        self.usage = NodeUsage()
        """What the admitted pods hold until they stop (each worker keeps its own
        `hold`, with the rest of what the agent keeps for one pod)."""
        self.sources: SourceLookup = no_sources
        """Where ConfigMaps and Secrets are looked up (informers' caches), set by whoever runs
        this."""
        self.token_manager = TokenManager(
            client, self._token_due, self._syncs_volumes, self._only_files_change
        )
        self.tokens: TokenSource = self.token_manager.token
        """The service account tokens of its pods' projected volumes."""
        self.services: ServiceLookup = no_services
        """The Services the node's informer has, for containers' environment."""
        self.pods: PodLookup = no_pods
        """The pods bound to nodes, by namespace: a Service's endpoints, for `wget`."""
        self.unknown_command = node_unknown_outcome(config)
        """What a program the shell model does not know does in a container that is to
        finish."""
        self.packed_pod: PackedLookup = _not_packed
        """The compact form a pod informer's cache holds of a version of a pod
        (`Informer.packed`), set by whoever runs this: workers keep those bytes."""
        self._followers: dict[SourceKey, dict[str, PodWorker]] = {}
        """The workers that hear of a ConfigMap's, Secret's or claim's changes (a container
        waits for one, or a volume holds one's files), by the source and pod uid."""
        self.sources_followed: FollowedChanged = _unheard
        """Told when a source gets its first follower here, or loses its last (a pool
        routes source changes by it)."""
        self._rejected: set[str] = set()
        self._deferred: dict[str, PodWorker] = {}
        """Pods whose resize waits for room on the node (Deferred), by uid."""
        self.pod_ips = PodIPs(config.pod_cidr)
        self._last_status_post = 0.0
        self._last_unschedulable = False
        """spec.unschedulable as the last node status update saw it (the kubelet's
        lastNodeUnschedulable, false at its start)."""
        self._renewed = self._monitored = self._status_synced = -math.inf
        self.post_unchanged_status = True
        """Post the node status every nodeStatusReportFrequency even when it has not changed;
        without (the simulated mode), only a changed one is posted."""
        self._status_basis: tuple[Object | None, Mapping[str, Any], set[str]] | None = None
        """What the node status was last computed from (the Node as heard of, the static
        status, the pressure conditions), when it had nothing new to post."""
        self.images = NodeImages(config, self.clock)
        self.image_service = self.images.service
        self.cpu_manager = static_policy(config)
        """The static CPU manager, when cpuManagerPolicy is static."""
        policy = ImageGCPolicy(
            config.image_gc_high_threshold_percent,
            config.image_gc_low_threshold_percent,
            config.image_minimum_gc_age,
            config.image_maximum_gc_age,
        )
        self.gc = NodeGC(
            self.runtime,
            self.workers,
            self.images,
            ImageGCManager(policy, self.clock.now()),
            self.clock.now,
        )
        self._image_gc_at = self.clock.now()
        """When image GC last ran: it starts with the agent, and runs every IMAGE_GC_PERIOD."""
        self._image_gc_failed = False
        self._image_gc_pending = False
        """Its next pass may free something (images past imageMaximumGCAge, or the image
        filesystem above imageGCHighThresholdPercent at the last pass): the agent must wake
        for it."""
        self.eviction = EvictionManager(config, self, self.gc)
        self._evicting: asyncio.Task[None] | None = None
        """While an evicted pod is being cleaned up, the eviction manager's wait for it."""
        self._ceiling = UsageCeiling()
        """The sum of the workers' usage ceilings."""
        self._eviction_basis: Mapping[str, Any] | None = None
        """The static status (its images) as of the eviction manager's last full pass."""
        self._container_exited: OnExit = self._exited
        """Bound once: the runtime keeps it for every container."""

    # --- registration and heartbeat ---------------------------------------------------------

    async def register(self, *, retry: bool = False) -> None:
        """Create the Node (or take over an existing one of this name) and its Lease, with
        the events a starting kubelet records. With `retry`, as a starting kubelet registers
        (registerWithAPIServer): a refused attempt (the API server unreachable, or refusing
        the node) is logged and tried again, 100 ms later and then twice as long each time
        up to 7 s, until one works."""
        self._node_event("Starting", "Starting kubelet.")
        if not retry:
            await self._try_register()
            return
        wait = REGISTRATION_FIRST_WAIT
        while True:
            with self.failures.guard(NODE_REGISTRATION):
                await self._try_register()
                return
            await self.clock.sleep(wait)
            wait = min(2 * wait, REGISTRATION_MAX_WAIT)

    async def _try_register(self) -> None:
        """tryRegisterWithAPIServer, and the Lease."""
        now = self.clock.now_rfc3339()
        wanted = node_object(self.config, now)
        try:
            self.node = await self.client.create(NODES, "", wanted)
        except StatusError as e:
            if e.reason != "AlreadyExists":
                raise
            existing = await self.client.get(NODES, "", self.name)
            labels = {**(existing["metadata"].get("labels") or {}), **wanted["metadata"]["labels"]}
            await self.client.patch(NODES, "", self.name, {"metadata": {"labels": labels}})
            current = existing.get("status") or {}
            self.node = await self.client.patch(
                NODES,
                "",
                self.name,
                {"status": node_status(self.images.static_status, current, now)},
                PatchType.MERGE,
                subresource="status",
            )
        self._last_status_post = self.clock.now()
        # Judged against no conditions, as the kubelet sets them on the node it builds at
        # start: a restarted kubelet records them again.
        changed = condition_events(healthy_conditions(), [])
        for reason in changed:
            if reason != "NodeReady":
                self._node_event(reason, f"Node {self.name} status is now: {reason}")
        self._node_event("NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
        if "NodeReady" in changed:
            self._node_event("NodeReady", f"Node {self.name} status is now: NodeReady")
        await self.node_lease.renew(self.node)
        self._publish_shared_cpus()

    def _node_event(self, reason: str, message: str) -> None:
        self.node_event("Normal", reason, message)

    def beats_every(self, interval: float) -> bool:
        """Whether its lease renewal, eviction monitoring and node status update all fall due
        at every heartbeat `interval` seconds apart."""
        config = self.config
        periods = {config.lease_renew_interval, config.node_status_update_frequency}
        return periods | {EVICTION_MONITORING_PERIOD} == {interval}

    def idle(self) -> bool:
        """Whether its next heartbeat, and every one after it until a pod or its Node changes,
        would do no more than renew the lease in the account (`NodeLease.write_renewals` off): its
        eviction manager could change nothing (`may_skip`, nothing evicted under way) and its
        node status has nothing new to post (the simulated mode posts only changes). Only
        right after a heartbeat at which each of its loops ran."""
        return (
            not self.node_lease.write_renewals
            and not self.post_unchanged_status
            and self._renewed == self._monitored == self._status_synced
            and self._status_unchanged()
            and self._evicting is None
            and self.images.static_status is self._eviction_basis
            and self.eviction.may_skip(self._ceiling)
            and not self._image_gc_pending
        )

    def _status_unchanged(self) -> bool:
        """Whether the node status would come out as it last did when it had nothing new to
        post: the Node as heard of, the static status and the pressure conditions are those
        it was computed from then (the rest differs only in heartbeat times)."""
        basis = self._status_basis
        return (
            basis is not None
            and basis[0] is self.node
            and basis[1] is self.images.static_status
            and basis[2] == self.eviction.node_conditions
        )

    def beats_missed(self, beats: Iterable[float]) -> None:
        """The heartbeats at `beats` (times, in order) were left out while the agent was
        `idle`: each renewed the lease in the account and found nothing else to do."""
        for beat in beats:
            self._renewed = self._monitored = self._status_synced = beat
            self.node_lease.renewed_in_account(beat)

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        # The kubelet's reference to its node carries the node's name as its uid.
        node = {"kind": "Node", "metadata": {"name": self.name, "uid": self.name}}
        self.recorder.event(node, event_type, reason, message)

    async def heartbeat(self, tick: float = 0.0) -> None:
        """What the kubelet does on its clocks: renew the lease every quarter of its duration;
        run the eviction manager every 10 s; every nodeStatusUpdateFrequency, post the node
        status if it changed or has not been posted for nodeStatusReportFrequency. Called
        every `tick` seconds (a period dividing each of those; the node's own heartbeat
        interval when 0), so whatever falls due within half a tick is done now. A failed pass
        of one of them goes no further than itself (`LoopFailures`): it is tried again when
        next due, and the others carry on."""
        now = self.clock.now()
        slack = (tick or self.config.heartbeat_interval) / 2
        # Each on its own, as the kubelet runs them: a lease that cannot be renewed does not
        # keep the node status from being posted.
        if now - self._renewed >= self.config.lease_renew_interval - slack:
            with self.failures.guard(LEASE_RENEWAL):
                await self.node_lease.renew(self.node)
                self._renewed = now
        if now - self._monitored >= EVICTION_MONITORING_PERIOD - slack:
            self._monitored = now
            with self.failures.guard(EVICTION_MANAGER):
                self.synchronize_eviction()
        if now - self._status_synced >= self.config.node_status_update_frequency - slack:
            self._status_synced = now
            with self.failures.guard(NODE_STATUS_UPDATE):
                await self.sync_node_status()
        if now - self._image_gc_at >= IMAGE_GC_PERIOD - slack:
            self._image_gc_at = now
            with self.failures.guard(IMAGE_GC):
                self.collect_images()

    def collect_images(self) -> None:
        """A pass of the image garbage collector; an ImageGCFailed event when it fails twice
        in a row (the kubelet's StartGarbageCollection)."""
        high = False

        def filesystem() -> tuple[int, int]:
            nonlocal high
            capacity, available = self._image_filesystem()
            high = capacity > 0 and 100 - available * 100 // capacity >= (
                self.config.image_gc_high_threshold_percent
            )
            return capacity, available

        try:
            self.gc.garbage_collect_images(filesystem)
        except ImageGCError as e:
            self.node_event("Warning", e.reason, str(e))
            if self._image_gc_failed:
                self.node_event("Warning", IMAGE_GC_FAILED, str(e))
            self._image_gc_failed = True
        else:
            self._image_gc_failed = False
        self._image_gc_pending = high or (
            self.config.image_maximum_gc_age > 0 and self.gc.images_to_collect()
        )

    async def sync_node_status(self) -> None:
        """updateNodeStatus: up to NODE_STATUS_UPDATE_RETRY tries in a row, the first on the
        Node as last heard of, each later one on the Node read again; then the next period."""
        if self.node is None:
            return
        for attempt in range(NODE_STATUS_UPDATE_RETRY):
            try:
                if attempt:
                    self.node = await self.client.get(NODES, "", self.name)
                await self._update_node_status()
                return
            except StatusError as e:
                log.warning("node %s: node status not updated: %s", self.name, e.message)

    async def _update_node_status(self) -> None:
        assert self.node is not None
        self._record_schedulable_change(self.node)
        pressure = self.eviction.node_conditions
        static = self.images.static_status
        due = (
            self.post_unchanged_status
            and self.clock.now() - self._last_status_post
            >= self.config.node_status_report_frequency
        )
        if not due and self._status_unchanged():
            return
        current = self.node.get("status") or {}
        previous = current.get("conditions") or []
        wanted = node_status(static, current, self.clock.now_rfc3339(), pressure)
        if not due and _same_status(current, wanted):
            self._status_basis = (self.node, static, pressure)
            return
        self.node = await self.client.patch(
            NODES, "", self.name, {"status": wanted}, PatchType.MERGE, subresource="status"
        )
        self._last_status_post = self.clock.now()
        for reason in condition_events(node_conditions(pressure), previous):
            self._node_event(reason, f"Node {self.name} status is now: {reason}")

    def _record_schedulable_change(self, node: Object) -> None:
        """recordNodeSchedulableEvent, one of the kubelet's node status setters: an event
        when a cordon or uncordon is first seen."""
        unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
        if unschedulable != self._last_unschedulable:
            reason = "NodeNotSchedulable" if unschedulable else "NodeSchedulable"
            self._node_event(reason, f"Node {self.name} status is now: {reason}")
            self._last_unschedulable = unschedulable

    def node_changed(self, node: Object) -> None:
        """The Node as the API has it now (labels and taints set by others)."""
        if node["metadata"].get("name") == self.name:
            self.node = node

    # --- pods --------------------------------------------------------------------------------

    def pod_added(self, pod: Object) -> None:
        try:
            self._sync_pod(pod)
        except Exception as e:
            self._sync_failed(pod, bool(pod["metadata"].get("deletionTimestamp")), e)

    def pod_failed(self, worker: PodWorker, error: Exception) -> None:
        """Work on the worker's pod (a timer, a container's exit) failed: as its sync."""
        self._sync_failed(worker.reference(), worker.deleting, error)

    def _sync_failed(self, pod: Mapping[str, Any], deleting: bool, error: Exception) -> None:
        """A failure on one pod (`pod` names it: its metadata has namespace, name and uid) is
        that pod's, as an error of the kubelet's syncPod: reported on the pod and kept from the
        node's other pods; the pod is tried afresh at its next change, and one being deleted
        goes all the same, whatever it holds."""
        m = pod["metadata"]
        message = f"error syncing pod: {type(error).__name__}: {error}"
        log.warning("node %s: pod %s/%s: %s", self.name, m["namespace"], m["name"], message)
        self.recorder.event(pod, "Warning", FAILED_SYNC, message)
        self.pod_deleted(pod)  # what its worker held is given back
        if deleting:
            self.status_manager.delete_pod(m)

    def _sync_pod(self, pod: Object) -> None:
        uid = pod["metadata"]["uid"]
        worker = self.workers.get(uid)
        if worker is not None:
            self._set_ceiling(worker, pod)
            if not worker.begun:
                worker.set_pod(pod)  # it starts as the pod is then
                return
            worker.update(pod)
            if worker.allocation is not None:
                self._resize(worker, pod)
            if self.status_manager.overwritten(pod, worker):
                self.status_changed(worker)
            return
        if uid in self._rejected or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            return
        if self.node is None:
            return
        resumed = started_on_node(pod)
        demand = PodDemand.of(pod)
        if pod["metadata"].get("deletionTimestamp"):
            if not resumed:
                self.status_manager.delete_pod(pod["metadata"])  # never started: nothing to stop
                return
            # Started before the agent restarted: its containers are stopped, not admitted.
        else:
            result = self.eviction.admit(pod, demand.tolerations)
            if result.admit and self.cpu_manager is not None:
                result = self.cpu_manager.allocate(pod)
            if result.admit:
                result = admit(demand, self.node, self.usage)
            if not result.admit:
                self._release_cpus(uid)
                self._reject(pod, result.reason, result.message)
                return
        worker = PodWorker(self, pod)
        self.workers[uid] = worker
        self._set_ceiling(worker, pod)
        if self.features.in_place_pod_vertical_scaling:
            worker.allocation = PodAllocation.of(pod, self.features.allocated_status)
            demand = PodDemand.of(allocated_pod(pod, worker.allocation))
        worker.hold = demand.hold()
        self.usage.add(worker.hold)
        self._publish_cpus(pod)
        if resumed:
            self.images.pull(pod)
            worker.resume(pod)
        else:
            # After the pods handed over with this one (a restarted agent's first list): the
            # ones it takes back hold their IPs by then.
            self.clock.loop.call_soon(self._start, worker)

    def _start(self, worker: PodWorker) -> None:
        if self.workers.get(worker.uid) is not worker or worker.finished:
            return
        if worker.deleting:
            self.status_manager.delete_pod(worker.metadata())  # never started: nothing to stop
            return
        try:
            worker.start()
        except Exception as e:
            self.pod_failed(worker, e)

    def pod_updated(self, old: Object, new: Object) -> None:
        """A change of a pod: taken whole (`_sync_pod`), or only its status when it is a
        reconcile (`PodWorker.reconciles`: mostly the echo of the agent's own status write),
        as v1.32's HandlePodReconcile takes it; the status manager then checks whether someone
        else overwrote the worker's status."""
        worker = self.workers.get(new["metadata"]["uid"])
        if worker is None or not worker.reconciles(old, new):
            self.pod_added(new)
            return
        try:
            worker.reconcile(new)
            if self.status_manager.overwritten(new, worker):
                self.status_changed(worker)
        except Exception as e:
            self._sync_failed(new, False, e)

    def pod_deleted(self, pod: Mapping[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        self._rejected.discard(uid)
        worker = self.workers.pop(uid, None)
        if worker is not None:
            self._release(worker)
            self._drop_ceiling(worker)
            self._follow(worker, False)
            self.status_manager.pod_deleted(worker)
            worker.forget()
        self.token_manager.forget(uid)

    def shut_down(self) -> None:
        """The kubelet ends (its Node is gone, or it stopped): every pod's containers are
        dropped, and what it was writing or would try again is given up."""
        for worker in self.workers.values():
            if worker.writer is not None:
                worker.writer.cancel()
            worker.forget()
        self.token_manager.stop()
        self.status_manager.shut_down()
        if self._evicting is not None:
            self._evicting.cancel()
        self.workers.clear()
        for key in self._followers:
            self.sources_followed(key, False)
        self._followers.clear()
        self.usage = NodeUsage()
        self._ceiling = UsageCeiling()

    def _release(self, worker: PodWorker) -> None:
        """The pod no longer holds node resources (finished, or gone)."""
        self._deferred.pop(worker.uid, None)
        if worker.hold is not None:
            self.usage.remove(worker.hold)
            worker.hold = None
            self._retry_deferred()
        self._release_cpus(worker.uid)

    # --- in-place resize ---------------------------------------------------------------------

    def _resize(self, worker: PodWorker, pod: Mapping[str, Any]) -> None:
        """handlePodResourcesResize: allocate what the spec asks for if the node has room,
        then have the runtime apply it."""
        allocation = worker.allocation
        if allocation is None or worker.terminating or worker.finished or worker.hold is None:
            return
        previous = allocation.resize
        if allocation.wants_change(pod):
            allocation.resize = self._allocate(worker, pod)
        else:
            self._deferred.pop(worker.uid, None)
            allocation.resize = IN_PROGRESS if allocation.applying() else ""
        if allocation.resize != previous:
            self.status_changed(worker)  # (a Proposed the API server wrote: `overwritten`)
        if allocation.resize == IN_PROGRESS:
            # After the status writer takes the status that shows it InProgress, as SyncPod
            # posts the status before the runtime resizes.
            self.clock.loop.call_soon(self._apply_resize, worker)

    def _allocate(self, worker: PodWorker, pod: Mapping[str, Any]) -> str:
        """canResizePod, and the new allocation when it fits: the resize status."""
        assert worker.allocation is not None and worker.hold is not None and self.node
        uid, old = worker.uid, worker.hold
        if (self.cpu_manager is not None and worker.qos_class == GUARANTEED) or infeasible(
            pod, node_allocatable(self.node)
        ):
            self._deferred.pop(uid, None)
            return INFEASIBLE
        demand = PodDemand.of(pod)
        self.usage.remove(old)
        fits = admit(demand, self.node, self.usage).admit
        worker.hold = demand.hold() if fits else old
        self.usage.add(worker.hold)
        if not fits:
            self._deferred[uid] = worker
            return DEFERRED
        self._deferred.pop(uid, None)
        worker.allocation.allocated = spec_resources(pod)
        if any(q < dict(worker.hold.requests).get(name, q) for name, q in old.requests):
            self._retry_deferred()  # the pod shrank: room for another's resize
        return IN_PROGRESS

    def _retry_deferred(self) -> None:
        """Resources came free: the deferred resizes are tried again."""
        for worker in list(self._deferred.values()):
            self.clock.loop.call_soon(self._retry_resize, worker)

    def _retry_resize(self, worker: PodWorker) -> None:
        if self._deferred.get(worker.uid) is worker:
            try:
                self._resize(worker, worker.read_pod())
            except Exception as e:
                self.pod_failed(worker, e)

    def _apply_resize(self, worker: PodWorker) -> None:
        """The runtime applies the allocation: a container whose resizePolicy asks for it is
        restarted, the others' cgroup settings change in place."""
        allocation = worker.allocation
        if self.workers.get(worker.uid) is not worker or allocation is None:
            return
        if worker.terminating or worker.finished:
            return
        pod = worker.read_pod()
        specs = {c["name"]: c for c in (pod.get("spec") or {}).get("containers") or ()}
        running = allocated_pod(pod, allocation)
        for c in worker.apps:
            new, old = allocation.allocated.get(c.name), allocation.applied.get(c.name)
            if new is None or old is None or same_resources(old, new):
                continue
            if not c.running or c.current is None:
                allocation.applied[c.name] = new  # it starts with them
            elif restart_needed(specs.get(c.name) or {}, old, new):
                worker.restart_to_resize(c)
            else:
                resources = self.container_resources(running, c.name)
                current = self.runtime.resources_of(c.current)
                if current is not None:  # set at creation only, as the kubelet does
                    resources = dataclasses.replace(resources, oom_score_adj=current.oom_score_adj)
                self.runtime.update_container_resources(c.current.id, resources)
                allocation.applied[c.name] = new
        self.status_changed(worker)

    def _publish_cpus(self, pod: Mapping[str, Any]) -> None:
        """Show the pod's exclusive CPUs on it, and the shrunk shared pool on the node."""
        annotations = pod_cpusets(self.cpu_manager, pod["metadata"]["uid"])
        if annotations:
            m = pod["metadata"]
            patch = {"metadata": {"uid": m["uid"], "annotations": annotations}}
            self._annotate(PODS, m["namespace"], m["name"], patch)
            self._publish_shared_cpus()

    def _release_cpus(self, uid: str) -> None:
        if self.cpu_manager is not None and self.cpu_manager.release(uid):
            self._publish_shared_cpus()

    def _publish_shared_cpus(self) -> None:
        if self.cpu_manager is not None:
            patch = {"metadata": {"annotations": shared_pool_annotation(self.cpu_manager)}}
            self._annotate(NODES, "", self.name, patch)

    def _annotate(self, kind: Any, namespace: str, name: str, patch: dict[str, Any]) -> None:
        what = f"{kind.kind} {f'{namespace}/{name}' if namespace else name} not annotated"
        self.status_manager.until_landed(
            what, lambda: self.client.patch(kind, namespace, name, patch, PatchType.MERGE)
        )

    def _reject(self, pod: Object, reason: str, message: str) -> None:
        """rejectPod: the pod fails with the admission's reason, and an event says why."""
        uid = pod["metadata"]["uid"]
        self._rejected.add(uid)
        self.recorder.event(pod, "Warning", reason, message)
        pod_status = {
            "phase": "Failed",
            "reason": reason,
            "message": REJECTED_PREFIX + message,
            "startTime": (pod.get("status") or {}).get("startTime") or self.clock.now_rfc3339(),
        }
        m = pod["metadata"]
        what = f"pod {m['namespace']}/{m['name']} status not written"
        self.status_manager.until_landed(
            what, lambda: self.status_manager.patch_status(m, pod_status)
        )

    # --- eviction ----------------------------------------------------------------------------

    def synchronize_eviction(self) -> None:
        """The eviction manager's pass of this monitoring interval, unless it is still waiting
        for the pod it evicted last to be cleaned up."""
        if self._evicting is not None:
            return
        static = self.images.static_status
        if static is self._eviction_basis and self.eviction.may_skip(self._ceiling):
            return  # a pass could change nothing
        self._eviction_basis = static
        evictions = self.eviction.synchronize(self.clock.now())
        if evictions:
            self._evicting = self.clock.loop.create_task(self._after_eviction(evictions))

    async def _after_eviction(self, evictions: list[Eviction]) -> None:
        """Wait (30 s at most) for the evicted pods' containers to stop, then synchronize
        again at once, as long as that evicts more."""
        try:
            with self.failures.guard(EVICTION_MANAGER):
                while evictions:
                    uids = [e.pod.uid for e in evictions]
                    waited = 0.0
                    while waited < POD_CLEANUP_TIMEOUT and not all(map(self._cleaned_up, uids)):
                        await self.clock.sleep(POD_CLEANUP_POLL)
                        waited += POD_CLEANUP_POLL
                    evictions = self.eviction.synchronize(self.clock.now())
        finally:
            self._evicting = None

    def _cleaned_up(self, uid: str) -> bool:
        worker = self.workers.get(uid)
        return worker is None or not any(c.running for c in worker.containers)

    def _set_ceiling(self, worker: PodWorker, pod: Mapping[str, Any]) -> None:
        """Count what the pod may use at most, again whenever its annotations change or an
        ephemeral container is added."""
        annotations = _ANNOTATIONS(
            tuple(sorted((pod["metadata"].get("annotations") or {}).items()))
        )
        ephemerals = len((pod.get("spec") or {}).get("ephemeralContainers") or ())
        if (
            worker.ceiling is not None
            and worker.ceiling_annotations == annotations
            and worker.ceiling_ephemerals == ephemerals
        ):
            return
        self._drop_ceiling(worker)
        worker.ceiling = UsageCeiling.of(pod)
        worker.ceiling_annotations = annotations
        worker.ceiling_ephemerals = ephemerals
        self._ceiling += worker.ceiling

    def _drop_ceiling(self, worker: PodWorker) -> None:
        known, worker.ceiling = worker.ceiling, None
        if known is None:
            return
        if not known.bounded:
            ceilings = (w.ceiling for w in self.workers.values() if w.ceiling is not None)
            self._ceiling = sum(ceilings, UsageCeiling())
        else:
            self._ceiling -= known

    def active_pods(self) -> list[PodWorker]:
        """The workers of the admitted pods but those whose containers have all stopped
        (filterOutInactivePods): a pod being deleted, or done but for its sidecars and
        ephemeral containers, is still active until they have stopped."""
        return [w for w in self.workers.values() if not w.stopped]

    def evict_pod(self, pod: ActivePod, grace_period: int, message: str, disruption: bool) -> None:
        worker = self.workers.get(pod.uid)
        if worker is None:
            return
        self.recorder.event(worker.reference(), "Warning", EVICTED, message)
        worker.evict(grace_period, message, disruption)

    # --- what workers need -------------------------------------------------------------------

    def container_environment(
        self, pod: Mapping[str, Any], container: str, pod_ip: str
    ) -> dict[str, str]:
        c = container_named(pod.get("spec") or {}, container)
        if c is None:
            return {}
        node = NodeInfo(self.sources, self.node_allocatable, self.host_ip, self.services)
        return container_environment(pod, c, node, pod_ip)

    def node_allocatable(self) -> ResourceList:
        return self.config.allocatable_list()

    def web(self, namespace: str) -> WebGet:
        return service_web(namespace, self.services, self.pods)

    def container_resources(
        self, pod: Mapping[str, Any], container: str
    ) -> LinuxContainerResources:
        worker = self.workers.get(pod["metadata"]["uid"])
        if worker is not None and worker.allocation is not None:
            pod = allocated_pod(pod, worker.allocation)
        memory = self.machine.memory_bytes
        capacity = int(memory) if memory < math.inf else 1
        resources = shaped_container_resources(pod, container, capacity)
        if self.cpu_manager is not None:
            given = self.cpu_manager.assignments.get(pod["metadata"]["uid"]) or {}
            cpuset = given.get(container, frozenset())
            resources = dataclasses.replace(resources, cpuset_cpus=cpuset)
        return _RESOURCES(resources)  # the runtime keeps them for every container it runs

    def source_changed(self, kind: SourceKind, source: Mapping[str, Any]) -> None:
        """Retry the containers that wait for this ConfigMap or Secret, update the files of
        its volumes. A pod that fails at it fails alone (`pod_failed`): the other pods, and
        in a pool the other nodes, still hear of the change."""
        for worker in list(self._followers.get(source_key(kind, source), {}).values()):
            try:
                worker.source_changed()
            except Exception as e:
                self.pod_failed(worker, e)

    def _follow(self, worker: PodWorker, follows: bool) -> None:
        """File the worker under the sources it uses, or take it off them."""
        for resource, name in worker.source_names:
            key = (worker.namespace, resource, name)
            followers = self._followers.get(key)
            if follows and followers is None:
                followers = self._followers[key] = {}
                self.sources_followed(key, True)
            if followers is None:
                continue
            if follows:
                followers[worker.uid] = worker
            elif followers.pop(worker.uid, None) is not None and not followers:
                del self._followers[key]
                self.sources_followed(key, False)

    def _token_due(self, uid: str) -> None:
        """A token of the pod's volumes came, or is due for refreshing: set them up again."""
        worker = self.workers.get(uid)
        if worker is not None:
            try:
                worker.source_changed()
            except Exception as e:
                self.pod_failed(worker, e)

    def _syncs_volumes(self, uid: str) -> bool:
        worker = self.workers.get(uid)
        return worker is not None and not (worker.terminating or worker.finished)

    def _only_files_change(self, uid: str) -> bool:
        """Setting the pod's volumes up again would change nothing but their files: no
        container waits for its configuration (`PodWorker.source_changed`)."""
        worker = self.workers.get(uid)
        return worker is not None and not worker.config_blocked

    def files_read(self, uid: str) -> None:
        """Set up the pod's token volumes again if refreshes were made since (the simulated
        mode's, `TokenManager.defer`)."""
        manager = self.token_manager
        worker = self.workers.get(uid)
        if worker is not None and manager.files_stale(uid):
            pod = worker.read_pod()
            worker.volumes.renew_tokens(
                pod, self.sources, self.tokens, manager.first_token, self.node_allocatable
            )

    @property
    def container_exited(self) -> OnExit:
        return self._container_exited

    def _exited(self, status: ContainerStatus) -> None:
        worker = self.workers.get(status.sandbox)
        if worker is not None:
            try:
                worker.exited(status)
            except Exception as e:
                self.pod_failed(worker, e)

    def status_changed(self, worker: PodWorker) -> None:
        if worker.source_names:
            self._follow(worker, worker.follows_sources and not worker.terminating)
        if worker.stopped:
            self._release(worker)
        self.status_manager.sync(worker)

    # --- stats -------------------------------------------------------------------------------

    def summary(self) -> Summary:
        """What the node and its pods use now (the kubelet's /stats/summary), for the eviction
        manager and the metrics API; see `pinnace.kubelet.summary`."""
        return node_summary(
            self.config,
            self.workers.values(),
            self.runtime.list_container_stats(),
            self.machine.system_memory_bytes,
            self._image_bytes(),
            self.clock.now(),
        )

    def _image_filesystem(self) -> tuple[int, int]:
        """The imagefs' capacity and available bytes, as `summary` has them, for less."""
        rootfs, logs = self.runtime.disk_usage()
        _, _, (capacity, used) = filesystems(self.config, rootfs, logs, self._image_bytes())
        return capacity, max(0, capacity - used)

    def _image_bytes(self) -> int:
        return sum(i["sizeBytes"] for i in self.images.static_status.get("images", ()))

    def resource_metrics(self) -> NodeMetricsPoint:
        """The CPU and memory figures of `summary`, for less (what the usage history samples):
        the same pods, in the same order, each with its running containers."""
        by_key = self.runtime.running_usage()
        pods = []
        for worker in self.workers.values():
            containers = tuple(
                (run.name, *figures)
                for c in worker.containers
                if (run := c.current) is not None
                and run.ended is None  # c.running
                and (figures := by_key.get(run.key)) is not None
            )
            if containers or not worker.finished:
                pods.append(PodMetricsPoint(worker.namespace, worker.name, containers))
        cpu = sum(c[1] for p in pods for c in p.containers)
        memory = sum(c[2] for p in pods for c in p.containers)
        return NodeMetricsPoint(cpu, round(self.machine.system_memory_bytes) + memory, pods)

    def pods_usage(self) -> tuple[int, int]:
        """What its pods use now, as `summary` has it, for less: the CPU (nano-cores) and the
        memory working set (bytes) of their running containers."""
        running = [
            run.key
            for w in self.workers.values()
            for c in w.containers
            if (run := c.current) is not None and run.ended is None  # c.running
        ]
        return self.runtime.cpu_and_memory(running) if running else (0, 0)

    # --- logs --------------------------------------------------------------------------------

    def read_log(self, pod: Object, container: str, options: LogOptions) -> AsyncIterator[str]:
        """pods/log, as the kubelet serves /containerLogs."""
        worker = self.workers.get(pod["metadata"].get("uid", ""))
        name = pod["metadata"]["name"]
        run = worker.container_log(container, options.previous) if worker else None
        if run is None:
            if options.previous:
                raise status.bad_request(
                    f'previous terminated container "{container}" in pod "{name}" not found'
                )
            reason = worker.waiting_reason(container) if worker else CONTAINER_CREATING
            raise status.bad_request(waiting_to_start(name, container, reason))
        return container_log(run, options, self.clock)

    # --- streaming ---------------------------------------------------------------------------

    def exec(self, pod: Object, options: StreamOptions) -> Session:
        """pods/exec, as the kubelet's GetExec: the command runs in the container's shell
        model (`pinnace.kubelet.exec`) if the container runs."""
        context = self._exec_context(pod, options.container)
        return lambda io: run_exec(options.command, context, options.tty, io, self.clock)

    def attach(self, pod: Object, options: StreamOptions) -> Session:
        """pods/attach, as the kubelet's GetAttach: the container's output from now on."""
        worker = self.workers.get(pod["metadata"].get("uid", ""))
        attached = worker.attach_target(options.container) if worker else None
        if attached is None:
            m = pod["metadata"]
            full_name = f"{m['name']}_{m['namespace']}"
            raise StreamError(f"container {options.container} not found in pod {full_name}")
        stdin, tty = options.stdin, options.tty
        return lambda io: run_attach(attached, stdin, tty, io, self.clock)

    def port_forward(self, pod: Object, port: int) -> Forward:
        """One connection of pods/portforward to `port`, as CRI's PortForward: to what the
        pod's running containers listen on there (`pinnace.kubelet.listeners`)."""
        uid = pod["metadata"].get("uid", "")
        worker = self.workers.get(uid)
        spec = worker.listener(port) if worker else None
        if spec is None:
            raise StreamError(refused(uid, port))
        return lambda io: serve_http(io, spec, port, self.clock.now())

    def _exec_context(self, pod: Object, container: str) -> ShellContext:
        worker = self.workers.get(pod["metadata"].get("uid", ""))
        context = worker.exec_context(container) if worker else None
        if context is None:
            raise StreamError(f'container not found ("{container}")')
        return context

    # --- standalone --------------------------------------------------------------------------

    async def run(self) -> None:
        """Register, then follow this node's pods and keep the heartbeat until cancelled."""
        await self.register()
        nodes = Informer(self.client, NODES, field_selector=f"metadata.name={self.name}")
        nodes.add_event_handler(self.node_changed, lambda _, new: self.node_changed(new))
        sources = SourceInformers(self.client, self.source_changed)
        self.sources = sources.lookup
        services = Informer(self.client, SERVICES)
        self.services = services.list
        pods = Informer(
            self.client,
            PODS,
            field_selector=f"spec.nodeName={self.name}",
            codec=self.codec,
            namespace_index=False,
        )
        self.packed_pod = pods.packed
        self.pods = pods.list  # alone, it knows its own pods: a Service's endpoints among them
        pods.add_event_handler(self.pod_added, self.pod_updated, self.pod_deleted)
        informers = (nodes, services, pods)
        for informer in informers:
            informer.start()
        await sources.start()
        await services.wait_for_sync()
        try:
            while True:
                await self.clock.sleep(self.config.heartbeat_interval)
                await self.heartbeat()
        finally:
            for informer in informers:
                await informer.stop()
            await sources.stop()


_ANNOTATIONS: Interned[tuple[tuple[str, str], ...]] = Interned()
_RESOURCES: Interned[LinuxContainerResources] = Interned()


def _not_packed(pod: Mapping[str, Any]) -> None:
    return None


def _unheard(key: SourceKey, followed: bool) -> None:
    return None


def _same_status(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Equal but for heartbeat times."""

    def shape(s: Mapping[str, Any]) -> Any:
        conditions = [
            (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
            for c in s.get("conditions") or ()
        ]
        rest = {k: s.get(k) for k in wanted if k != "conditions"}
        return conditions, rest

    return shape(current) == shape(wanted)
