"""The scheduler as an API client: kube-scheduler's informers, scheduling loop and binding cycle
around the synchronous core (`pinnace.scheduler.schedule_one.Scheduler`).

- One pod informer (pods not yet finished, as kube-scheduler's field selector) and one node
  informer feed the core's handlers: the core files pods bound to a node in its cache and puts
  pending pods whose schedulerName a profile serves in its queue; it ignores the others, which
  stay Pending and untouched.
- The loop runs scheduling cycles back to back while the queue has pods, giving the event loop
  a turn every few cycles, and otherwise sleeps until an informer event or the next queue
  flush (every second, as kube-scheduler moves due pods from backoffQ).
- A placed pod is assumed at once; its Binding is sent on a task of its own, so cycles never
  wait for the API. A bound pod gets the Scheduled event. A failed bind forgets the assumed
  pod, records FailedScheduling and puts the pod back after a backoff.
- Events are recorded through events.k8s.io/v1 (`pinnace.client.events_v1`), one recorder per
  profile, reporting as the profile's schedulerName on `hostname`, with v1.32's actions:
  Scheduling (FailedScheduling), Binding (Scheduled), Preempting (Preempted, related to the
  preemptor).
- A pod that fits nowhere gets the FailedScheduling Warning event and the PodScheduled=False
  condition (reason Unschedulable, or SchedulerError for an error), patched into its status
  as kube-scheduler's updatePod does, only when it changes, with the node preemption nominated.
- DefaultPreemption's decisions are carried out as kube-scheduler's prepareCandidate does:
  each victim gets the DisruptionTarget condition, is deleted gracefully and gets a Preempted
  event; lower-priority pods nominated to the node lose their nomination.
- When a plugin reads node usage (the Trimaran plugins, the policy plugins), the nodes' usage
  is sampled every `usageSampleInterval` (30 s) from `node_metrics`, the node agents' stats
  summaries that the metrics API (metrics.k8s.io) serves, or, in a process of its own, from
  that API's NodeMetrics and PodMetrics (`metrics_api`), into the node table
  (`NodeTable.record_usage`), and, for plugins reading forecasts, the pods' usage per workload
  into a `pinnace.forecast.UsageHistory`. With the Trimaran CustomMetrics provider
  (`trimaran.PodsMetricLoad`) a node's cpu is instead its pods' sum of a Pods custom metric,
  read from custom.metrics.k8s.io through `custom_metrics` (in the server's process or over
  HTTP), as a share of the capacity the arguments give, times the node's CPU capacity.
- A `Placer` (the research environment, `pinnace.gym`) may finish each cycle that reaches the
  choice of a node among the feasible ones itself, now or later: the loop waits for it, as
  kube-scheduler's single scheduling goroutine would for a slow Score plugin.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.stats import Summary
from pinnace.api.status import StatusError
from pinnace.apiserver.metrics import MetricsSource
from pinnace.client import Client, InformerFactory, PatchType
from pinnace.client.custom_metrics import CustomMetricsClient
from pinnace.client.events_v1 import DEFAULT_HOSTNAME, EventBroadcaster
from pinnace.client.informer import NAMESPACE_INDEX
from pinnace.clock import Randomness
from pinnace.clock.component import HeldTasks, cancel_and_wait
from pinnace.resources.lists import parse_quantity
from pinnace.scheduler import schedule_one
from pinnace.scheduler.config import SchedulerConfiguration, build_profiles
from pinnace.scheduler.events import ADD, DELETE, UPDATE, ClusterEvent
from pinnace.scheduler.failure_memo import FailureMemo, in_tree
from pinnace.scheduler.framework import CycleState, Plugin, ReadsWorkloadUsage
from pinnace.scheduler.loop import Placer, SchedulingLoop
from pinnace.scheduler.metrics_api import MetricsLister, read_usage
from pinnace.scheduler.plugins.default_binder import Binding
from pinnace.scheduler.plugins.pod_topology_spread import WorkloadSelector
from pinnace.scheduler.plugins.trimaran import PodsMetricLoad
from pinnace.scheduler.plugins.volume_listers import (
    CLAIMS,
    CLASSES,
    CSI_NODES,
    VOLUMES,
    VolumeListers,
)
from pinnace.scheduler.plugins.workload_selectors import (
    REPLICA_SET,
    SERVICE,
    STATEFUL_SET,
    WorkloadSelectors,
)
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.preemption import Preemption
from pinnace.scheduler.schedule_one import (
    FAILED_SCHEDULING,
    SCHEDULED,
    ScheduleResult,
    all_plugins,
)
from pinnace.scheduler.usage_sampling import UsageSampling

log = logging.getLogger(__name__)

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
NAMESPACES = catalog.kind("", "namespaces")
REPLICA_SETS = catalog.kind("apps", "replicasets")
STATEFUL_SETS = catalog.kind("apps", "statefulsets")
SERVICES = catalog.kind("", "services")
VOLUME_KINDS = (
    (CLAIMS, catalog.kind("", "persistentvolumeclaims")),
    (VOLUMES, catalog.kind("", "persistentvolumes")),
    (CLASSES, catalog.kind("storage.k8s.io", "storageclasses")),
    (CSI_NODES, catalog.kind("storage.k8s.io", "csinodes")),
)

NOT_FINISHED = "status.phase!=Succeeded,status.phase!=Failed"
"""kube-scheduler's pod informer selection: finished pods hold no resources."""
MAX_MESSAGE_LENGTH = 1024
"""An event message longer than this is cut, as kube-scheduler's truncateMessage does."""
TRUNCATED = " ..."
"""What ends a message cut to MAX_MESSAGE_LENGTH."""
POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
PREEMPTED = "Preempted"
SCHEDULING = "Scheduling"
BINDING = "Binding"
PREEMPTING = "Preempting"
"""The actions of kube-scheduler's Events: FailedScheduling's, Scheduled's, Preempted's."""


class SchedulerService:
    """kube-scheduler over `client`: `await scheduler.run()` until cancelled.

    `config` gives the profiles (kube-scheduler's defaults when None); `randomness` seeds the
    tie-breaks between equally scored nodes; `node_metrics` is where plugins reading usage get
    it from in the API server's process, `metrics_api` the metrics API's lists they read it
    from in another (without either they see no usage); `placer`, when given, finishes the
    cycles that reach the choice of a node; `hostname` is the host its Events report from
    (their reportingInstance is `<schedulerName>-<hostname>`)."""

    def __init__(
        self,
        client: Client,
        config: SchedulerConfiguration | None = None,
        randomness: Randomness | None = None,
        node_metrics: MetricsSource | None = None,
        placer: Placer | None = None,
        custom_metrics: CustomMetricsClient | None = None,
        metrics_api: MetricsLister | None = None,
        hostname: str = DEFAULT_HOSTNAME,
    ) -> None:
        self.client = client
        self.clock = client.clock
        config = config or SchedulerConfiguration()
        stream = (randomness or Randomness(0)).child("scheduler")
        self._bindings: dict[str, Binding] = {}
        self.core = schedule_one.Scheduler(
            build_profiles(config, self._binding_requested),
            self.clock,
            seed=stream.random.getrandbits(63),
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        )
        self.events = EventBroadcaster(client, hostname)
        self.recorders = {name: self.events.new_recorder(name) for name in config.scheduler_names}
        self.factory = InformerFactory(client)
        self.pods = self.factory.informer(PODS, field_selector=NOT_FINISHED)
        self.nodes = self.factory.informer(NODES)
        self.pods.add_event_handler(self._pod_added, self._pod_updated, self._pod_deleted)
        self.nodes.add_event_handler(self._node_added, self._node_updated, self._node_deleted)
        self._connect_preemption(stream)
        self._connect_namespace_labels()
        self._connect_workload_selectors()
        self._connect_volumes()
        self._node_metrics = node_metrics
        self._metrics_api = metrics_api
        self._custom_metrics = custom_metrics
        self.placer = placer
        self.usage: UsageSampling | None = None
        """The usage sampled for the plugins (and the placer) reading it, when one does and
        there is usage to read."""
        if node_metrics is not None or metrics_api is not None:
            self.usage = UsageSampling.of(self.core, self.clock, placer)
        # Sampled usage changes what plugins read with no event; a user's plugin may read
        # anything.
        if self.usage is None and all(map(in_tree, self._deciding_failures())):
            self._remember_failures()
        self.scheduling = SchedulingLoop(self.core, self.clock, self._handle, placer)
        self._tasks = HeldTasks()
        """Bindings under way."""
        self._running: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._running = self.clock.loop.create_task(self.run())

    async def stop(self) -> None:
        """Stop scheduling; bindings under way are cancelled, and waited for."""
        if self._running is not None:
            await cancel_and_wait([self._running, *self._tasks])
            self._running = None

    async def run(self) -> None:
        """Schedule until cancelled."""
        sampling: asyncio.Task[None] | None = None
        recording = self.clock.loop.create_task(self.events.run())
        self.factory.start()
        try:
            await self.factory.wait_for_sync()
            if self.usage is not None:
                sampling = self.clock.loop.create_task(self._sample_usage_forever(self.usage))
            await self.scheduling.run()
        finally:
            await cancel_and_wait([recording] if sampling is None else [recording, sampling])
            await self.factory.stop()
            for task in self._tasks:
                task.cancel()

    # --- informer events ---------------------------------------------------------------------

    def _pod_added(self, pod: Object) -> None:
        self.core.add_pod(pod)
        self.scheduling.nudge()

    def _pod_updated(self, old: Object, new: Object) -> None:
        self.core.update_pod(old, new)
        self.scheduling.nudge()

    def _pod_deleted(self, pod: Object) -> None:
        self.core.delete_pod(pod)
        self.scheduling.nudge()

    def _node_added(self, node: Object) -> None:
        self.core.add_node(node)
        self.scheduling.nudge()

    def _node_updated(self, old: Object, new: Object) -> None:
        self.core.update_node(old, new)
        self.scheduling.nudge()

    def _node_deleted(self, node: Object) -> None:
        self.core.delete_node(node["metadata"]["name"])
        self.scheduling.nudge()

    def _deciding_failures(self) -> list[Plugin]:
        """The plugins whose verdicts make a failed cycle: PreFilter, Filter, PostFilter."""
        return [
            plugin
            for profile in self.core.profiles.values()
            for plugin in (*profile.pre_filter, *profile.filter, *profile.post_filter)
        ]

    def _remember_failures(self) -> None:
        """Let the core remember failed cycles while nothing they read changes: it sees its
        own pods and nodes change; every other informer's events change the plugins'
        listers."""
        core = self.core

        def changed(*_: Object) -> None:
            core.listers_changed()

        for informer in self.factory.informers():
            if informer is not self.pods and informer is not self.nodes:
                informer.add_event_handler(changed, changed, changed)
        core.failures = FailureMemo()

    def _connect_preemption(self, stream: Randomness) -> None:
        """Give each preemption plugin its API side: this adapter carries out its decisions,
        and a PodDisruptionBudget informer lists the budgets it must respect; and its random
        choices a stream of the run's seed."""
        preempting = [p for p in all_plugins(self.core) if isinstance(p, PreemptsThroughAPI)]
        for i, plugin in enumerate(preempting):
            plugin.preempt = self._preempt
            plugin.pod_disruption_budgets = self.factory.informer(PDBS).list
            plugin.random = stream.child(f"preemption-{i}").random

    def _connect_namespace_labels(self) -> None:
        """Plugins matching namespace selectors (InterPodAffinity) read the namespaces' labels
        from a map a namespace informer keeps current."""
        readers = [p for p in all_plugins(self.core) if isinstance(p, ReadsNamespaceLabels)]
        if not readers:
            return
        labels: dict[str, Mapping[str, str]] = {}

        def changed(namespace: Object) -> None:
            labels[namespace["metadata"]["name"]] = namespace["metadata"].get("labels") or {}

        def deleted(namespace: Object) -> None:
            labels.pop(namespace["metadata"]["name"], None)

        self.factory.informer(NAMESPACES).add_event_handler(
            changed, lambda old, new: changed(new), deleted
        )
        for reader in readers:
            reader.namespace_labels = labels

    def _connect_workload_selectors(self) -> None:
        """PodTopologySpread's default constraints select a pod's siblings by its workload:
        the Services selecting it and its controlling ReplicaSet or StatefulSet come from
        informers."""
        selecting = [p for p in all_plugins(self.core) if isinstance(p, SelectsWorkloads)]
        if not selecting:
            return
        workloads = WorkloadSelectors()
        for kind_name, kind in (
            (REPLICA_SET, REPLICA_SETS),
            (STATEFUL_SET, STATEFUL_SETS),
            (SERVICE, SERVICES),
        ):
            self._follow_workloads(workloads, kind_name, kind)
        for plugin in selecting:
            plugin.workload_selector = workloads

    def _connect_volumes(self) -> None:
        """The volume plugins read claims, volumes, classes and CSI nodes from informers;
        a change to one may make pods schedulable. VolumeBinding's PreBind writes through
        the scheduler's client."""
        readers = [p for p in all_plugins(self.core) if isinstance(p, ReadsVolumes)]
        if not readers:
            return
        listers = VolumeListers()
        for resource, kind in VOLUME_KINDS:
            self._follow_volumes(listers, resource, kind)
        for reader in readers:
            reader.volume_listers = listers
        for writer in all_plugins(self.core):
            if isinstance(writer, WritesVolumes):
                writer.api = self.client

    def _follow_volumes(self, listers: VolumeListers, resource: str, kind: Kind) -> None:
        def changed(obj: Object, action: str) -> None:
            if action == DELETE:
                listers.delete(resource, obj)
            else:
                listers.set(resource, obj)
            self.core.queue.move_all_to_active_or_backoff(ClusterEvent(resource, action))
            self.scheduling.nudge()

        self.factory.informer(kind).add_event_handler(
            lambda obj: changed(obj, ADD),
            lambda old, new: changed(new, UPDATE),
            lambda obj: changed(obj, DELETE),
        )

    async def _sample_usage_forever(self, usage: UsageSampling) -> None:
        while True:
            loads = await self._metric_loads(usage.load_metric) if usage.load_metric else None
            summaries = await self._node_usage(usage.workload_usage is not None)
            if summaries is not None:
                usage.record(summaries, self.pods.get_by_key, loads)
            await asyncio.sleep(usage.interval)

    async def _node_usage(self, with_pods: bool) -> Mapping[str, Summary] | None:
        """Every node's stats summary now: the node agents' in the API server's process, else
        as the metrics API serves them; None when they could not be read."""
        if self._node_metrics is not None:
            return self._node_metrics()
        assert self._metrics_api is not None
        return await read_usage(self._metrics_api, self._node_of, with_pods)

    def _node_of(self, key: str) -> str | None:
        pod = self.pods.get_by_key(key)
        return (pod.get("spec") or {}).get("nodeName") if pod is not None else None

    async def _metric_loads(self, load_metric: PodsMetricLoad) -> dict[str, float]:
        """Node name -> the sum of the Pods custom metric over its pods (those the adapter
        has a value for), by namespace as custom.metrics.k8s.io serves them."""
        loads: dict[str, float] = {}
        if self._custom_metrics is None:
            return loads
        # The namespaces with pods, as the pod informer files them (not every pod listed).
        for namespace in sorted(self.pods.index_values(NAMESPACE_INDEX)):
            try:
                listed = await self._custom_metrics.pods(namespace, "", load_metric.metric, "")
            except StatusError as e:
                if e.code != 404:
                    log.warning("reading custom metric %s: %s", load_metric.metric, e)
                continue
            for value in listed.get("items") or ():
                described = value["describedObject"]
                node = self._node_of(f"{described['namespace']}/{described['name']}")
                if node:
                    milli = parse_quantity(value["value"]).milli_value()
                    loads[node] = loads.get(node, 0.0) + milli / 1000
        return loads

    def _follow_workloads(self, workloads: WorkloadSelectors, kind_name: str, kind: Kind) -> None:
        def deleted(obj: Object) -> None:
            m = obj["metadata"]
            workloads.delete(kind_name, m.get("namespace") or "default", m["name"])

        self.factory.informer(kind).add_event_handler(
            lambda obj: workloads.set(kind_name, obj),
            lambda old, new: workloads.set(kind_name, new),
            deleted,
        )

    # --- results -----------------------------------------------------------------------------

    def _binding_requested(self, binding: Binding) -> None:
        """DefaultBinder's callback: the Binding is sent once the cycle has assumed the pod."""
        m = binding["metadata"]
        self._bindings[f"{m['namespace']}/{m['name']}"] = binding

    def _handle(self, result: ScheduleResult) -> None:
        pod = result.pod
        if result.node_name is None:
            self._failed(pod, result.status.is_rejected(), result.message, result)
            return
        binding = self._bindings.pop(pod.key, None)
        if binding is None:  # another Bind plugin bound it during the cycle
            self._record(pod, EVENT_TYPE_NORMAL, SCHEDULED, BINDING, result.message)
            return
        self._spawn(self._bind(result, result.node_name))

    async def _bind(self, result: ScheduleResult, node_name: str) -> None:
        profile = self.core.profiles[result.pod.scheduler_name]
        for plugin in profile.pre_bind:
            status = await plugin.pre_bind(result.pod, node_name)
            if not status.is_success():
                message = f'running PreBind plugin "{plugin.name}": {status.message}'
                self._bind_failed(result, node_name, message)
                return
        try:
            await self.client.bind(result.pod.pod, node_name)
        except Exception as e:  # any failure of the call fails this binding only
            reason = e.message if isinstance(e, StatusError) else str(e) or type(e).__name__
            self._bind_failed(result, node_name, f'running Bind plugin "DefaultBinder": {reason}')
            return
        self._record(result.pod, EVENT_TYPE_NORMAL, SCHEDULED, BINDING, result.message)

    def _bind_failed(self, result: ScheduleResult, node_name: str, message: str) -> None:
        """handleBindingCycleError: unreserve, free the node, put the pod back to back off as
        long as its failed attempts say (1 s doubling to 10 s) unless it is gone or bound
        meanwhile, and say why."""
        pod = result.pod
        self.core.profiles[pod.scheduler_name].run_unreserve(CycleState(), pod, node_name)
        self.core.listers_changed()  # what Unreserve undid
        if self.core.cache.is_assumed(pod.key):
            self.core.cache.forget(pod)
        current = self.pods.get_by_key(pod.key)
        if current is not None and not (current.get("spec") or {}).get("nodeName"):
            self.core.queue.add_after_binding_error(PodInfo.from_pod(current), result.attempts)
        self.scheduling.nudge()
        self._failed(pod, False, message, None)

    def _failed(
        self, pod: PodInfo, unschedulable: bool, message: str, result: ScheduleResult | None
    ) -> None:
        self._record(pod, EVENT_TYPE_WARNING, FAILED_SCHEDULING, SCHEDULING, message)
        nominated = result.nominated_node_name if result is not None else None
        patch = failure_patch(pod.pod, unschedulable, message, nominated, self.clock.now_rfc3339())
        if patch is not None:
            self._spawn(self._patch_status(pod, patch))

    async def _patch_status(self, pod: PodInfo, patch: Object) -> None:
        try:
            await self.client.patch(
                PODS,
                pod.namespace,
                pod.name,
                patch,
                PatchType.STRATEGIC_MERGE,
                subresource="status",
            )
        except StatusError as e:
            log.log(
                logging.DEBUG if e.code == 404 else logging.WARNING,
                "could not update the PodScheduled condition of %s: %s",
                pod.key,
                e.message,
            )

    def _preempt(self, decision: Preemption) -> None:
        self.core.metrics.preempted(len(decision.victims))
        for victim in decision.victims:
            self._spawn(self._evict_victim(decision, victim))
        for nominated in decision.nominations_to_clear:
            patch = {"status": {"nominatedNodeName": None}}
            self._spawn(self._patch_status(nominated, patch))

    async def _evict_victim(self, decision: Preemption, victim: PodInfo) -> None:
        condition = decision.disruption_condition()
        patch = status_patch(victim.pod, condition, None, self.clock.now_rfc3339())
        if patch is not None:
            await self._patch_status(victim, patch)
        try:
            await self.client.delete(PODS, victim.namespace, victim.name)
        except StatusError as e:
            if e.code != 404:
                log.warning("could not preempt %s: %s", victim.key, e.message)
            return
        self.recorders[decision.preemptor.scheduler_name].eventf(
            victim.pod,
            decision.preemptor.pod,
            EVENT_TYPE_NORMAL,
            PREEMPTED,
            PREEMPTING,
            decision.victim_event_message(),
        )

    def _record(
        self, pod: PodInfo, event_type: str, reason: str, action: str, message: str
    ) -> None:
        if len(message) > MAX_MESSAGE_LENGTH:
            message = message[: MAX_MESSAGE_LENGTH - len(TRUNCATED)] + TRUNCATED
        self.recorders[pod.scheduler_name].eventf(
            pod.pod, None, event_type, reason, action, message
        )

    def _spawn(self, work: Any) -> None:
        task = self.clock.loop.create_task(work)
        self._tasks.hold(task)

    async def flush(self) -> None:
        """Wait until the binds, status writes and events begun so far are done."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.events.flush()


@runtime_checkable
class PreemptsThroughAPI(Protocol):
    """A PostFilter plugin whose preemption decisions the adapter carries out (`preempt`),
    respecting the budgets it lists (`pod_disruption_budgets`): DefaultPreemption."""

    preempt: Callable[[Preemption], object]
    pod_disruption_budgets: Callable[[], Sequence[Mapping[str, Any]]]
    random: random.Random

    def dry_run(self) -> AbstractContextManager[list[Preemption]]: ...


@runtime_checkable
class ReadsNamespaceLabels(Protocol):
    """A plugin matching namespace selectors: the labels of every namespace, by name."""

    namespace_labels: Mapping[str, Mapping[str, str]]


@runtime_checkable
class SelectsWorkloads(Protocol):
    """A plugin selecting a pod's siblings by the workload controlling it."""

    workload_selector: WorkloadSelector | None


@runtime_checkable
class ReadsVolumes(Protocol):
    """A volume plugin: claims, volumes, storage classes and CSI nodes by name."""

    volume_listers: VolumeListers | None


@runtime_checkable
class WritesVolumes(Protocol):
    """A plugin whose PreBind writes volume bindings through the scheduler's client."""

    api: Client | None


def connect_offline(
    core: schedule_one.Scheduler,
    *,
    namespaces: Sequence[Mapping[str, Any]] = (),
    budgets: Sequence[Mapping[str, Any]] = (),
    replica_sets: Sequence[Mapping[str, Any]] = (),
    stateful_sets: Sequence[Mapping[str, Any]] = (),
    services: Sequence[Mapping[str, Any]] = (),
    usage_of: SchedulerService | None = None,
    volumes: VolumeListers | None = None,
) -> None:
    """Give the plugins with an API side what a core running apart from the API (an explanation,
    a capacity plan) reads instead of informers: the namespaces' labels, the budgets preemption
    respects, the workloads that select a pod's siblings, the claims, volumes, classes and
    CSI nodes the volume plugins read (without them, they check nothing), and the node and
    workload usage `usage_of` (a running scheduler) has sampled. Call it once the core has its
    nodes and pods."""
    labels = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in namespaces}
    listed = list(budgets)
    workloads = WorkloadSelectors()
    for replica_set in replica_sets:
        workloads.set(REPLICA_SET, replica_set)
    for stateful_set in stateful_sets:
        workloads.set(STATEFUL_SET, stateful_set)
    for service in services:
        workloads.set(SERVICE, service)
    for plugin in all_plugins(core):
        if isinstance(plugin, ReadsNamespaceLabels):
            plugin.namespace_labels = labels
        if isinstance(plugin, PreemptsThroughAPI):
            plugin.pod_disruption_budgets = lambda: listed
        if isinstance(plugin, SelectsWorkloads):
            plugin.workload_selector = workloads
        if isinstance(plugin, ReadsVolumes):
            plugin.volume_listers = volumes
        if isinstance(plugin, ReadsWorkloadUsage) and usage_of is not None:
            sampled = usage_of.usage
            plugin.workload_usage = sampled.workload_usage if sampled is not None else None
    if usage_of is not None:
        core.table.copy_usage(usage_of.core.table)


def failure_patch(
    pod: Mapping[str, Any], unschedulable: bool, message: str, nominated: str | None, now: str
) -> Object | None:
    """The status patch kube-scheduler's handleSchedulingFailure sends for a cycle that failed
    with `message` (rejected by plugins, or an error), with the node preemption `nominated`;
    None when the pod already says all that."""
    condition = {
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": UNSCHEDULABLE if unschedulable else SCHEDULER_ERROR,
        "message": message,
    }
    return status_patch(pod, condition, nominated, now)


def status_patch(
    pod: Mapping[str, Any], condition: dict[str, Any], nominated: str | None, now: str
) -> Object | None:
    """The status patch kube-scheduler's updatePod sends: the condition (PodScheduled, or a
    victim's DisruptionTarget), its lastTransitionTime kept when the pod has it with the same
    status (apipod.UpdatePodCondition), and status.nominatedNodeName when preemption nominated
    one ("" clears it); None when the pod already says all that."""
    status = pod.get("status") or {}
    current = next(
        (c for c in status.get("conditions") or () if c.get("type") == condition["type"]), None
    )
    transition = now
    if current is not None and current.get("status") == condition["status"]:
        transition = current.get("lastTransitionTime")
    condition = {**condition, "lastTransitionTime": transition}
    changed = current is None or any(
        current.get(k) != condition[k] for k in ("status", "reason", "message")
    )
    renominate = nominated is not None and (status.get("nominatedNodeName") or "") != nominated
    if not changed and not renominate:
        return None
    patch: dict[str, Any] = {"status": {"conditions": [condition]}}
    if renominate:
        patch["status"]["nominatedNodeName"] = nominated or None  # null clears it
    return patch
