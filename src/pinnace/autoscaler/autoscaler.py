"""ClusterAutoscaler: cluster-autoscaler's loop (core/static_autoscaler.go RunOnce) over the
node pools that have a maxSize, every --scan-interval.

Each loop:
1. The snapshot: the nodes and their pods, and for every node asked for that has not joined yet
   a node of its group's template ("upcoming"), so pods waiting for it do not ask again.
2. The pods that cannot be scheduled (PodScheduled False, reason Unschedulable; not of a
   priority under -10, the expendable cutoff) and would not fit anywhere in the snapshot
   either are the ones to help; pods younger than --new-pod-scale-up-delay (or their
   annotation `cluster-autoscaler.kubernetes.io/pod-scale-up-delay`, when longer) wait, and
   while every one of them is under 2 s old the loop waits for more (and does no scale-down).
3. Scale-up (`scaleup`): the expander's option is carried out: its nodes join after the
   provisioning delay, through the node pool as `pinnace up` runs its nodes. TriggeredScaleUp
   on each pod it helps, ScaledUpGroup on the status ConfigMap (as the group's size is
   set, and once it is); when nothing is done,
   NotTriggerScaleUp with the reasons on each pod. A loop that scaled up ends there.
4. Scale-down (`scaledown`): the unneeded nodes are updated every loop; unless in cooldown
   (--scale-down-delay-after-add since the last scale-up, -after-delete since the last removal,
   -after-failure since the last failure) those unneeded long enough go: each is tainted
   `ToBeDeletedByClusterAutoscaler` (NoSchedule), its pods are evicted through the eviction API
   (a budget's refusal is retried every 10 s for up to --max-pod-eviction-time; DaemonSet pods
   are evicted too, best effort), and once they are gone the node is removed from its pool.
   Pods still there after --max-graceful-termination-sec and 30 s fail the drain
   (core/scaledown/actuation/drain.go); a failed drain or deletion takes the taint off again.
   ScaleDownEmpty or ScaleDown on the status ConfigMap as each removal starts and once the
   node is gone (actuation/actuator.go, delete_in_batch.go). A loop out of cooldown that
   removes nothing puts the soft taint DeletionCandidateOfClusterAutoscaler (PreferNoSchedule)
   on the unneeded nodes and takes it off the others (actuation/softtaint.go).
5. The status ConfigMap (`status`).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.autoscaler.drainability import (
    KUBE_SYSTEM,
    budgets_of,
    is_terminal,
    owners_of,
    pod_key,
)
from pinnace.autoscaler.expander import PRIORITY_CONFIG_MAP, Expander
from pinnace.autoscaler.metrics import AutoscalerStats
from pinnace.autoscaler.options import AutoscalerOptions
from pinnace.autoscaler.scaledown import (
    Candidate,
    Planner,
    Removal,
    nodes_to_delete,
    not_expendable,
)
from pinnace.autoscaler.scaleup import Group, scale_up, scale_up_info
from pinnace.autoscaler.simulator import Snapshot
from pinnace.autoscaler.status import (
    LAST_UPDATED,
    STATUS_CONFIG_MAP,
    Counts,
    GroupStatus,
    StatusWriter,
)
from pinnace.client import Client, EventRecorder, Informer
from pinnace.clock import Randomness, parse_duration
from pinnace.clock.component import HeldTasks, cancel_and_wait
from pinnace.clock.rfc3339 import go_time_string, parse_time
from pinnace.controllers.controller_utils import controller_ref
from pinnace.controllers.daemonset_util import DaemonPlacement
from pinnace.kubelet.cluster_config import NodePool
from pinnace.kubelet.config import NODE_POOL_LABEL, NodeConfig
from pinnace.kubelet.node_status import node_object
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.config import SchedulerConfiguration

log = logging.getLogger(__name__)

COMPONENT = "cluster-autoscaler"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
"""The soft taint (PreferNoSchedule) of an unneeded node, so new pods prefer other nodes."""
MAX_BULK_SOFT_TAINT_COUNT = 10
"""Soft taints added or removed in one loop at most (--max-bulk-soft-taint-count)."""
UNSCHEDULABLE_POD_TIME_BUFFER = 2.0
"""All pending pods younger than this: wait a loop for more (allPodsAreNew)."""
EVICTION_RETRY = 10.0
"""Between a refused eviction and the next try (DefaultEvictionRetryTime)."""
POD_GONE_POLL = 5.0
"""Between checks that the evicted pods are gone."""
POD_EVICTION_HEADROOM = 30.0
"""Beyond the longest grace period, how long a drain waits for its pods to go."""
POD_SCALE_UP_DELAY = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay"

NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
CONFIG_MAPS = catalog.kind("", "configmaps")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
DAEMON_SETS = catalog.kind("apps", "daemonsets")
OWNER_KINDS = {
    "replicasets": catalog.kind("apps", "replicasets"),
    "jobs": catalog.kind("batch", "jobs"),
}


class NodeProvider(Protocol):
    """Where nodes come from and go to: the cluster's node pool (`NodeAgentPool`)."""

    next_index: int

    def configs(self) -> list[NodeConfig]: ...

    async def add_nodes(self, configs: Iterable[NodeConfig]) -> None: ...

    async def remove_node(self, name: str) -> None: ...


@dataclass
class _Provisioning:
    """Nodes asked for: upcoming until the node informer has each of them."""

    group: str
    configs: list[NodeConfig]
    joined: bool = False
    """The pool has registered them."""


class ClusterAutoscaler:
    def __init__(
        self,
        client: Client,
        options: AutoscalerOptions,
        provider: NodeProvider,
        scheduler_config: SchedulerConfiguration | None,
        randomness: Randomness,
    ) -> None:
        self.client = client
        self.clock = client.clock
        self.options = options
        self.provider = provider
        self.scheduler_config = scheduler_config
        self.groups = {p.name: p for p in options.node_groups()}
        self._nodes = Informer(client, NODES, namespace_index=False)
        self._pods = Informer(client, PODS)
        self._budgets = Informer(client, PDBS)
        self._daemon_sets = Informer(client, DAEMON_SETS)
        self._owners = {r: Informer(client, kind) for r, kind in OWNER_KINDS.items()}
        self._config_maps = Informer(client, CONFIG_MAPS, KUBE_SYSTEM)
        self._recorder = EventRecorder(client, COMPONENT)
        self.expander = Expander(
            options.expander,
            randomness.random,
            lambda: self._config_maps.get(KUBE_SYSTEM, PRIORITY_CONFIG_MAP),
        )
        self.planner = Planner(
            options.scale_down_utilization_threshold,
            options.scale_down_unneeded_time,
            recheck_timeout=options.unremovable_node_recheck_timeout,
        )
        self._status = StatusWriter()
        self._provisioning: list[_Provisioning] = []
        self._deleting: dict[str, str] = {}
        """Nodes being removed -> their group."""
        self._drains = 0
        self._next_index = 0
        self._tasks = HeldTasks()
        self.stats = AutoscalerStats(
            node_groups=len(self.groups), max_nodes=options.max_nodes_total
        )
        """What its metrics report (`metrics.AutoscalerMetrics`)."""
        self.last_scale_up = -float("inf")
        self.last_scale_down_delete = -float("inf")
        self.last_scale_down_failure = -float("inf")

    def _informers(self) -> list[Informer]:
        return [
            self._nodes, self._pods, self._budgets, self._daemon_sets,
            *self._owners.values(), self._config_maps,
        ]  # fmt: skip

    async def start(self) -> None:
        for informer in self._informers():
            informer.start()
        for informer in self._informers():
            await informer.wait_for_sync()
        self._tasks.hold(self.clock.loop.create_task(self._run(), name=COMPONENT))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        for informer in self._informers():
            await informer.stop()
        await self._recorder.flush()

    async def _run(self) -> None:
        while True:
            try:
                await self.run_once()
            except StatusError as e:
                log.warning("cluster autoscaler loop failed: %s", e.message)
            await self.clock.sleep(self.options.scan_interval)

    # --- the loop ------------------------------------------------------------------------------

    async def run_once(self) -> None:
        now = self.clock.now()
        nodes = self._nodes.list()
        pods = [p for p in self._pods.list() if not is_terminal(p) and not _finished(p)]
        pods_on: dict[str, list[Object]] = {}
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if node_name:
                pods_on.setdefault(node_name, []).append(pod)
        made: list[Snapshot] = []

        def snapshot() -> Snapshot:
            """The simulation, made when first needed (most loops need none)."""
            if not made:
                made.append(self._snapshot(nodes, pods_on))
            return made[0]

        self.stats.last_activity["main"] = self.stats.last_activity["autoscaling"] = now
        pending = not_expendable([p for p in pods if _unschedulable(p)])
        self.stats.unschedulable_pods = len(pending)
        if pending:
            pending = self._unhelped(pending, snapshot())
        pending = [p for p in pending if _age(p, now) >= self._scale_up_delay(p)]
        scale_down_blocked = False
        if pending:
            room = self._total_room(nodes)
            if 0 < self.options.max_nodes_total <= sum(1 for n in nodes if _ready(n)):
                # cluster-autoscaler 1.32 gives up here without a word to the pods (1.33 tells
                # them "max total nodes in cluster reached")
                log.debug("max total nodes in cluster reached: %d", self.options.max_nodes_total)
            elif all(_age(p, now) < UNSCHEDULABLE_POD_TIME_BUFFER for p in pending):
                scale_down_blocked = True
            elif await self._scale_up(pending, nodes, snapshot(), room):
                self.last_scale_up = now
                await self._write_status(now, nodes)
                return
        if self.options.scale_down_enabled:
            await self._scale_down(snapshot, nodes, pods, pods_on, now, scale_down_blocked)
        await self._write_status(now, nodes)

    def _scale_up_delay(self, pod: Object) -> float:
        """--new-pod-scale-up-delay, or the pod's annotation when that asks for longer (a
        shorter one, or one that does not parse, is ignored)."""
        delay = self.options.new_pod_scale_up_delay
        text = (pod["metadata"].get("annotations") or {}).get(POD_SCALE_UP_DELAY)
        if text is None:
            return delay
        try:
            asked = parse_duration(text) / 1e9
        except ValueError:
            log.warning("pod %s: bad %s %r", pod_key(pod), POD_SCALE_UP_DELAY, text)
            return delay
        return max(asked, delay)

    def _snapshot(self, nodes: list[Object], pods_on: dict[str, list[Object]]) -> Snapshot:
        """The nodes, their pods, and a node of its group for every node on its way."""
        snapshot = Snapshot(self.scheduler_config, self.clock)
        for node in nodes:
            snapshot.add_node(node)
            for pod in pods_on.get(node["metadata"]["name"], ()):
                snapshot.core.add_pod(pod)
        self._add_upcoming(snapshot)
        return snapshot

    def _unhelped(self, marked: list[Object], snapshot: Snapshot) -> list[Object]:
        """Of the pods the scheduler gave up on, those that would not fit anywhere in the
        snapshot either (filterOutSchedulable): a pod that would is placed there, taking the
        room, and left to the scheduler."""
        marked = sorted(marked, key=lambda p: -int((p.get("spec") or {}).get("priority") or 0))
        names = list(snapshot.core.table.names)
        left = []
        for pod in marked:
            place = snapshot.find_place(pod, names)
            if place is None:
                left.append(pod)
            else:
                snapshot.add_pod(pod, place)
        return left

    def _add_upcoming(self, snapshot: Snapshot) -> None:
        for request in self._provisioning:
            template = self.groups[request.group].node
            for config in request.configs:
                if not snapshot.has_node(config.name):
                    node = self._template(replace(template, name=config.name))
                    snapshot.add_node(node)
                    for pod in self._daemon_pods(node):
                        snapshot.add_pod(pod, config.name)

    def _upcoming(self, nodes: list[Object]) -> list[tuple[str, str]]:
        """(group, node) of every node asked for that the node informer does not have yet;
        requests whose nodes it has are done with."""
        present = {n["metadata"]["name"] for n in nodes}
        self._provisioning = [
            r
            for r in self._provisioning
            if not (r.joined and all(c.name in present for c in r.configs))
        ]
        return [
            (r.group, c.name)
            for r in self._provisioning
            for c in r.configs
            if c.name not in present
        ]

    def _total_room(self, nodes: list[Object]) -> int | None:
        if self.options.max_nodes_total <= 0:
            return None
        return self.options.max_nodes_total - len(nodes) - len(self._upcoming(nodes))

    # --- scale-up ------------------------------------------------------------------------------

    async def _scale_up(
        self, pending: list[Object], nodes: list[Object], snapshot: Snapshot, room: int | None
    ) -> bool:
        sizes = self._sizes(nodes)
        groups = [
            Group(pool, sizes.get(pool.name, 0), self._template_named(pool), self._daemon_pods)
            for pool in self.groups.values()
        ]
        outcome = scale_up(pending, groups, snapshot, self.expander, room)
        priority_map = self._config_maps.get(KUBE_SYSTEM, PRIORITY_CONFIG_MAP)
        for reason, message in outcome.warnings:
            if priority_map is not None:
                self._recorder.event(priority_map, EVENT_TYPE_WARNING, reason, message)
        option = outcome.chosen
        if option is None:
            for pod, message in outcome.helpless.values():
                self._not_triggered([pod], message)
            return False
        size = sizes.get(option.group.name, 0)
        info = scale_up_info(option, size)
        for pod in option.pods:
            self._recorder.event(
                pod, EVENT_TYPE_NORMAL, "TriggeredScaleUp", f"pod triggered scale-up: [{info}]"
            )
        await self._log_event(
            EVENT_TYPE_NORMAL,
            "ScaledUpGroup",
            f"Scale-up: setting group {option.group.name} size to {size + option.node_count} "
            f"instead of {size} (max: {option.group.max_size})",
        )
        self._request_nodes(option.group, option.node_count)
        await self._log_event(
            EVENT_TYPE_NORMAL,
            "ScaledUpGroup",
            f"Scale-up: group {option.group.name} size set to {size + option.node_count} "
            f"instead of {size} (max: {option.group.max_size})",
        )
        self.stats.scaled_up_nodes += option.node_count
        self.stats.last_activity["scaleUp"] = self.clock.now()
        return True

    def _not_triggered(self, pods: list[Object], message: str) -> None:
        for pod in pods:
            self._recorder.event(
                pod,
                EVENT_TYPE_NORMAL,
                "NotTriggerScaleUp",
                f"pod didn't trigger scale-up: {message}",
            )

    def _request_nodes(self, pool: NodePool, count: int) -> None:
        taken = {c.name for c in self.provider.configs()}
        taken |= {c.name for r in self._provisioning for c in r.configs}
        number = 1 + max(
            (int(m.group(1)) for n in taken if (m := re.fullmatch(rf"{pool.name}-(\d+)", n))),
            default=0,
        )
        self._next_index = max(self._next_index, self.provider.next_index)
        configs = [pool.numbered(number + i, self._next_index + i) for i in range(count)]
        self._next_index += count
        request = _Provisioning(pool.name, configs)
        self._provisioning.append(request)
        self._tasks.hold(self.clock.loop.create_task(self._provision(request)))

    async def _provision(self, request: _Provisioning) -> None:
        """The nodes join after the provisioning delay (the cloud starting the machines)."""
        await self.clock.sleep(self.options.provisioning_delay)
        try:
            await self.provider.add_nodes(request.configs)
        except (StatusError, ValueError) as e:
            log.warning("adding nodes to %s failed: %s", request.group, e)
            self._provisioning.remove(request)
            return
        request.joined = True

    def _sizes(self, nodes: list[Object]) -> dict[str, int]:
        """Each group's target size: its nodes not being removed, and those on their way."""
        sizes: dict[str, int] = {}
        for node in nodes:
            group = _group_of(node)
            if group in self.groups and node["metadata"]["name"] not in self._deleting:
                sizes[group] = sizes.get(group, 0) + 1
        for group, _ in self._upcoming(nodes):
            sizes[group] = sizes.get(group, 0) + 1
        return sizes

    def _template_named(self, pool: NodePool) -> Callable[[str], Object]:
        return lambda name: self._template(replace(pool.node, name=name))

    def _template(self, config: NodeConfig) -> Object:
        return node_object(config, self.clock.now_rfc3339())

    def _daemon_pods(self, node: Object) -> list[Object]:
        """A pod of every DaemonSet that would run on `node`."""
        pods = []
        for ds in self._daemon_sets.list():
            if not DaemonPlacement.of(ds).should_run(node)[0]:
                continue
            template = (ds.get("spec") or {}).get("template") or {}
            meta = ds["metadata"]
            pods.append(
                {
                    "metadata": {
                        "name": f"{meta['name']}-{node['metadata']['name']}",
                        "namespace": meta.get("namespace", "default"),
                        "uid": f"{meta.get('uid', '')}/{node['metadata']['name']}",
                        "labels": (template.get("metadata") or {}).get("labels") or {},
                    },
                    "spec": template.get("spec") or {},
                }
            )
        return pods

    # --- scale-down ----------------------------------------------------------------------------

    async def _scale_down(
        self,
        snapshot: Callable[[], Snapshot],
        nodes: list[Object],
        pods: list[Object],
        pods_on: dict[str, list[Object]],
        now: float,
        blocked: bool,
    ) -> None:
        registered = [n for n in nodes if n["metadata"]["name"] not in self._deleting]
        candidates = [
            Candidate(n, _group_of(n), pods_on.get(n["metadata"]["name"], []), _ready(n))
            for n in registered
            if _group_of(n) in self.groups
        ]
        destinations = [n["metadata"]["name"] for n in registered]
        budgets = budgets_of(self._budgets.list(), pods)
        owners = owners_of({r: i.list() for r, i in self._owners.items()})
        self.planner.update(snapshot, candidates, destinations, budgets, owners, now)
        options = self.options
        cooldown = (
            blocked
            or not candidates
            or now < self.last_scale_up + options.scale_down_delay_after_add
            or now < self.last_scale_down_failure + options.scale_down_delay_after_failure
            or now < self.last_scale_down_delete + options.delay_after_delete
        )
        self.stats.unneeded_nodes = len(self.planner.unneeded)
        self.stats.unremovable_nodes = Counter(self.planner.unremovable.values())
        self.stats.scale_down_in_cooldown = cooldown
        if cooldown:
            return
        self.stats.last_activity["scaleDown"] = now
        sizes = self._sizes(nodes)
        room = {g: sizes.get(g, 0) - pool.min_size for g, pool in self.groups.items()}
        empty, drains = nodes_to_delete(
            self.planner.ready_to_go(now),
            room,
            options.max_empty_bulk_delete,
            options.max_drain_parallelism - self._drains,
        )
        for removal in empty:
            await self._log_event(
                EVENT_TYPE_NORMAL,
                "ScaleDownEmpty",
                f'Scale-down: removing empty node "{removal.node}"',
            )
        for removal in drains:
            pods_text = ",".join(pod_key(p) for p in removal.move)
            await self._log_event(
                EVENT_TYPE_NORMAL,
                "ScaleDown",
                f"Scale-down: removing node {removal.node}, utilization: "
                f"{_utilisation_text(removal.utilisation)}, pods to reschedule: {pods_text}",
            )
        for removal in [*empty, *drains]:
            self._deleting[removal.node] = removal.group
            self.planner.forget(removal.node)
            if not removal.empty:
                self._drains += 1
            self._tasks.hold(self.clock.loop.create_task(self._remove(removal)))
        if empty or drains:
            self.last_scale_down_delete = now
        else:
            await self._update_soft_taints([c.node for c in candidates])

    async def _update_soft_taints(self, nodes: list[Object]) -> None:
        """UpdateSoftDeletionTaints (actuation/softtaint.go), in a loop that started no removal:
        the soft taint comes off the group's nodes that are needed again, then goes on those
        now unneeded, at most MAX_BULK_SOFT_TAINT_COUNT writes in all; a node being deleted is
        left as it is."""
        unneeded = self.planner.unneeded
        changes = sorted(
            (
                (n, n["metadata"]["name"] in unneeded)
                for n in nodes
                if not _has_taint(n, TO_BE_DELETED_TAINT)
                and _has_taint(n, DELETION_CANDIDATE_TAINT) != (n["metadata"]["name"] in unneeded)
            ),
            key=lambda change: change[1],
        )
        soft = {
            "key": DELETION_CANDIDATE_TAINT,
            "value": str(int(self.clock.now())),
            "effect": "PreferNoSchedule",
        }
        for node, add in changes[:MAX_BULK_SOFT_TAINT_COUNT]:
            name = node["metadata"]["name"]
            try:
                await self._set_taint(name, DELETION_CANDIDATE_TAINT, soft if add else None)
            except StatusError as e:
                log.info("soft taint on %s: %s", name, e.message)

    async def _remove(self, removal: Removal) -> None:
        """Taint, drain and remove the node; on failure, untaint it."""
        name = removal.node
        try:
            node = await self._taint(name)
            self._recorder.event(
                node, EVENT_TYPE_NORMAL, "ScaleDown", "marked the node as toBeDeleted/unschedulable"
            )
            if not removal.empty:
                await self._drain(name, removal.move)
            await self.provider.remove_node(name)
            self._recorder.event(
                node, EVENT_TYPE_NORMAL, "ScaleDown", "nodes removed by cluster autoscaler"
            )
            if removal.empty:
                await self._log_event(
                    EVENT_TYPE_NORMAL, "ScaleDownEmpty", f"Scale-down: empty node {name} removed"
                )
            else:
                await self._log_event(
                    EVENT_TYPE_NORMAL, "ScaleDown", f"Scale-down: node {name} removed with drain"
                )
            reason = "unready" if not removal.ready else "empty" if removal.empty else ""
            self.stats.scaled_down_nodes[reason or "underutilized"] += 1
        except (StatusError, _DrainFailed, LookupError) as e:
            message = e.message if isinstance(e, StatusError) else str(e)
            log.info("scale-down of %s failed: %s", name, message)
            self.last_scale_down_failure = self.clock.now()
            node_now = self._nodes.get("", name)
            if node_now is not None:
                what = "delete empty node" if removal.empty else "drain and delete node"
                self._recorder.event(
                    node_now, EVENT_TYPE_WARNING, "ScaleDownFailed", f"failed to {what}: {message}"
                )
                await self._untaint(name)
        finally:
            self._deleting.pop(name, None)
            if not removal.empty:
                self._drains -= 1

    async def _taint(self, name: str) -> Object:
        value = str(int(self.clock.now()))
        taint = {"key": TO_BE_DELETED_TAINT, "value": value, "effect": "NoSchedule"}
        return await self._set_taint(name, TO_BE_DELETED_TAINT, taint)

    async def _untaint(self, name: str) -> None:
        try:
            await self._set_taint(name, TO_BE_DELETED_TAINT, None)
        except StatusError as e:
            log.info("untainting %s failed: %s", name, e.message)

    async def _set_taint(self, name: str, key: str, taint: Object | None) -> Object:
        """The node with its taint of `key` replaced by `taint`, or removed (None)."""

        def mutate(node: Object) -> Object:
            taints = [t for t in (node["spec"].get("taints") or []) if t.get("key") != key]
            node["spec"]["taints"] = taints + ([taint] if taint else [])
            return node

        return await self.client.modify(NODES, "", name, mutate)

    async def _drain(self, node: str, move: list[Object]) -> None:
        """Evict the pods (those to move, retried while a budget refuses; the DaemonSet pods
        once, best effort), then wait for those to move to be gone."""
        deadline = self.clock.now() + self.options.max_pod_eviction_time
        daemons = [p for p in self._pods.list() if _on(p, node) and _daemon(p)]
        for pod in daemons:
            try:
                await self._evict(pod)
            except StatusError as e:
                log.info("evicting DaemonSet pod %s failed: %s", pod_key(pod), e.message)
        for pod in move:
            self._recorder.event(
                pod, EVENT_TYPE_NORMAL, "ScaleDown", "deleting pod for node scale down"
            )
            while True:
                try:
                    await self._evict(pod)
                    self.stats.evicted_pods["succeeded"] += 1
                    break
                except StatusError as e:
                    if e.code == 404:
                        break
                    if self.clock.now() >= deadline:
                        self.stats.evicted_pods["failed"] += 1
                        self._recorder.event(
                            pod,
                            EVENT_TYPE_WARNING,
                            "ScaleDownFailed",
                            "failed to delete pod for ScaleDown",
                        )
                        raise _DrainFailed(
                            f"Failed to drain node /{node}, due to following errors: "
                            f"[failed to evict pod {pod_key(pod)} within allowed timeout "
                            f"(last error: {e.message})]"
                        ) from None
                    await self.clock.sleep(EVICTION_RETRY)
        await self._wait_gone(node, move)

    async def _evict(self, pod: Object) -> None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        grace = 30 if grace is None else int(grace)
        grace = min(grace, self.options.max_graceful_termination_sec)
        meta = pod["metadata"]
        await self.client.evict(meta["namespace"], meta["name"], DeleteOptions(grace))

    async def _wait_gone(self, node: str, pods: list[Object]) -> None:
        """Until the pods are gone; those still there at the deadline fail the drain."""
        deadline = (
            self.clock.now() + self.options.max_graceful_termination_sec + POD_EVICTION_HEADROOM
        )
        while self.clock.now() < deadline:
            if not any(self._still_on(pod, node) for pod in pods):
                return
            await self.clock.sleep(POD_GONE_POLL)
        if any(self._still_on(pod, node) for pod in pods):
            raise _DrainFailed(f"Failed to drain node /{node}: pods remaining after timeout")

    def _still_on(self, pod: Object, node: str) -> bool:
        """The pod (this very one, by uid) still exists on the node, finished or not (a
        finalizer can keep it): looked up by name, not found by listing every pod at each
        poll."""
        meta = pod["metadata"]
        current = self._pods.get(meta.get("namespace", ""), meta["name"])
        return (
            current is not None
            and current["metadata"].get("uid") == meta.get("uid")
            and _on(current, node)
        )

    # --- status ----------------------------------------------------------------------------------

    async def _log_event(self, event_type: str, reason: str, message: str) -> None:
        """An event on the status ConfigMap (cluster-autoscaler's LogEventRecorder)."""
        config_map = self._config_maps.get(KUBE_SYSTEM, STATUS_CONFIG_MAP)
        if config_map is None:
            config_map = await self._write_status(self.clock.now(), self._nodes.list())
        self._recorder.event(config_map, event_type, reason, message)

    async def _write_status(self, now: float, nodes: list[Object]) -> Object:
        sizes = self._sizes(nodes)
        upcoming: dict[str, int] = {}
        for group, _ in self._upcoming(nodes):
            upcoming[group] = upcoming.get(group, 0) + 1
        candidates: dict[str, int] = {}
        for removal in self.planner.unneeded.values():
            candidates[removal.group] = candidates.get(removal.group, 0) + 1
        groups = []
        for name, pool in sorted(self.groups.items()):
            mine = [n for n in nodes if _group_of(n) == name]
            assert pool.max_size is not None
            groups.append(
                GroupStatus(
                    name,
                    _counts(mine, self._deleting, upcoming.get(name, 0)),
                    sizes.get(name, 0),
                    pool.min_size,
                    pool.max_size,
                    bool(upcoming.get(name)),
                    candidates.get(name, 0),
                )
            )
        counts = _counts(nodes, self._deleting, sum(upcoming.values()))
        self.stats.safe_to_autoscale = counts.healthy
        self.stats.nodes.update(
            ready=counts.ready,
            unready=counts.total - counts.ready,
            unregistered=counts.unregistered,
        )
        text = self._status.text(
            now,
            counts,
            bool(upcoming),
            len(self.planner.unneeded),
            groups,
        )
        stamp = go_time_string(now)

        def mutate(config_map: Object) -> Object:
            config_map.setdefault("data", {})["status"] = text
            config_map["metadata"].setdefault("annotations", {})[LAST_UPDATED] = stamp
            return config_map

        try:
            return await self.client.modify(CONFIG_MAPS, KUBE_SYSTEM, STATUS_CONFIG_MAP, mutate)
        except StatusError as e:
            if e.code != 404:
                raise
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": STATUS_CONFIG_MAP,
                "namespace": KUBE_SYSTEM,
                "annotations": {LAST_UPDATED: stamp},
            },
            "data": {"status": text},
        }
        return await self.client.create(CONFIG_MAPS, KUBE_SYSTEM, body)


class _DrainFailed(Exception):
    pass


def _counts(nodes: list[Object], deleting: Mapping[str, str], upcoming: int) -> Counts:
    ready = sum(1 for n in nodes if _ready(n))
    being_deleted = sum(1 for n in nodes if n["metadata"]["name"] in deleting)
    return Counts(len(nodes), ready, being_deleted=being_deleted, unregistered=upcoming)


def _has_taint(node: Object, key: str) -> bool:
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def _ready(node: Object) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


def _group_of(node: Object) -> str:
    return ((node.get("metadata") or {}).get("labels") or {}).get(NODE_POOL_LABEL, "")


def _unschedulable(pod: Object) -> bool:
    if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _finished(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _on(pod: Object, node: str) -> bool:
    return (pod.get("spec") or {}).get("nodeName") == node


def _daemon(pod: Object) -> bool:
    ref = controller_ref(pod)
    return ref is not None and ref.get("kind") == "DaemonSet"


def _age(pod: Object, now: float) -> float:
    created = pod["metadata"].get("creationTimestamp")
    return now - parse_time(created) if created else 0.0


def _utilisation_text(utilisation: Mapping[str, float]) -> str:
    """utilization.Info as cluster-autoscaler's event prints it (%v): {CpuUtil MemUtil GpuUtil
    ResourceName Utilization}, the resource the larger share's (memory's when they tie)."""
    cpu, memory = utilisation.get(CPU, 0.0), utilisation.get(MEMORY, 0.0)
    name, highest = (CPU, cpu) if cpu > memory else (MEMORY, memory)
    return f"{{{_go_float(cpu)} {_go_float(memory)} 0 {name} {_go_float(highest)}}}"


def _go_float(value: float) -> str:
    """A float64 as Go's %v prints it: the shortest form that reads back, no `.0`."""
    text = repr(value)
    return text.removesuffix(".0")
