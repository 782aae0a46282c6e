"""The Vertical Pod Autoscaler's recommender and updater (kubernetes/autoscaler's
vertical-pod-autoscaler/pkg/recommender and pkg/updater), as one component of the cluster.

Recommender, every --recommender-interval (1 min): the usage of the running pods each VPA's
target controls, read from the resource metrics API as upstream's metrics client does, goes
into per-container decaying histograms (`vpa_model`); each VPA's status gets a recommendation
per container (target, lowerBound, upperBound capped to the container policy, uncappedTarget)
and its conditions (RecommendationProvided, NoPodsMatched, ConfigUnsupported).

With --storage=prometheus (`VPAOptions.storage`), as upstream's recommender loads its initial
history from Prometheus (pkg/recommender/input/history/history_provider.go and the cluster
feeder's InitFromHistoryProvider), the first time the recommender sees a pod under a VPA it
first feeds that pod's past usage from the cluster's usage history (`PodHistory`: the
cluster's in-process Prometheus, read in the API server's process or over HTTP): over
--history-length, one sample every --history-resolution, CPU the mean over the step before
(upstream's `rate(container_cpu_usage_seconds_total[step])`), memory the last value within
Prometheus' 5-minute lookback, each container from its own series (the history keeps
containers' usage, as upstream's queries read container_cpu_usage_seconds_total and
container_memory_working_set_bytes by container).

Updater, every --updater-interval (1 min): for VPAs in Recreate or Auto mode with a
recommendation, the live pods of each controller (at least --min-replicas, 2, or the VPA's
updatePolicy.minReplicas), whose requests lie outside [lowerBound, upperBound], or that have
lived 12 h and differ by 10 % or more, are evicted through the eviction API (so PodDisruption
Budgets hold), scale-ups first, while more than the controller's replicas less the eviction
tolerance (half, truncated) would stay alive. The admission controller (apiserver's
`admission.vpa`) then gives the replacement pods the recommendation.

The InPlaceOrRecreate mode is VPA 1.4's (alpha, behind its InPlaceOrRecreate gate; the rest
follows VPA 1.3, of Kubernetes v1.32's time): with the cluster's InPlacePodVerticalScaling gate
on, the updater resizes those pods in place through pods/resize instead (the same choice of
pods, the same disruption tolerance, an in-place resize counting as a disruption), and falls
back to eviction for a pod whose resize the kubelet found Infeasible, or kept Deferred for
5 minutes or InProgress for an hour (VPA 1.4 reads these from Kubernetes 1.33's PodResizePending
and PodResizeInProgress conditions; here from v1.32's status.resize). Without the gate, such
VPAs evict as Recreate does.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pinnace.api import catalog
from pinnace.api.autoscaling.vpa_policy import (
    OBSERVED_CONTAINERS_ANNOTATION,
    WELL_KNOWN,
    Owner,
    cap,
    container_policy,
    container_resources,
    controlled_resources,
    recommendation_for,
    resource_list,
    scaling_off,
    targets,
    top_controller,
    update_mode,
)
from pinnace.api.core.event import EVENT_TYPE_NORMAL
from pinnace.api.core.pod_resize import DEFERRED, IN_PROGRESS, INFEASIBLE
from pinnace.api.objects import Object, clone
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, PatchType
from pinnace.client.mapper import KindMapper, RegistryMapper
from pinnace.clock.component import cancel_and_wait
from pinnace.clock.periodic import Periodic
from pinnace.clock.rfc3339 import parse_time
from pinnace.controllers.vpa_model import (
    AggregateContainerState,
    ContainerState,
    RecommenderConfig,
    estimate,
)
from pinnace.resources.lists import parse_quantity
from pinnace.resources.quantity import BINARY_SI, Quantity

log = logging.getLogger(__name__)

VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
PODS = catalog.kind("", "pods")
_OWNERS = {
    "ReplicaSet": catalog.kind("apps", "replicasets"),
    "Job": catalog.kind("batch", "jobs"),
    "Deployment": catalog.kind("apps", "deployments"),
    "StatefulSet": catalog.kind("apps", "statefulsets"),
    "DaemonSet": catalog.kind("apps", "daemonsets"),
}
UPDATER = "vpa-updater"
IN_PLACE_OR_RECREATE = "InPlaceOrRecreate"
DEFERRED_RESIZE_TIMEOUT = 5 * 60.0
IN_PROGRESS_RESIZE_TIMEOUT = 3600.0
"""How long the updater lets an in-place resize stay Deferred or InProgress before it evicts
the pod instead (DeferredResizeUpdateTimeout, InProgressResizeUpdateTimeout)."""
IN_PLACE_UPDATED_ANNOTATION = "vpaInPlaceUpdated"
PodMetricsLister = Callable[[str, str], Awaitable[Object]]
"""(namespace, label selector) -> the PodMetricsList of metrics.k8s.io."""
CHECKPOINT, PROMETHEUS = "checkpoint", "prometheus"
"""The recommender's --storage: where its initial history comes from."""
LOOKBACK = 300.0
"""How far back Prometheus looks for an instant value (its --query.lookback-delta, 5 min)."""


PodHistory = Callable[[str, str], Awaitable[Mapping[str, Sequence[float | None]] | None]]
"""The usage history the recommender's prometheus storage reads (`metrics.history`, in the
API server's process or over HTTP): for the pod "namespace/name" and the name of one of its
containers, "time", "cpu" (cores) and "memory" (bytes), oldest first, None where it had no
sample; None for a container it does not hold."""


@dataclass(frozen=True)
class VPAOptions:
    """The flags of the recommender and the updater of the same names (seconds)."""

    recommender_interval: float = 60.0
    updater_interval: float = 60.0
    min_replicas: int = 2
    eviction_tolerance: float = 0.5
    eviction_rate_limit: float = -1.0
    """Evictions per second; 0 or less: unlimited."""
    eviction_rate_burst: int = 1
    pod_update_threshold: float = 0.1
    in_recommendation_bounds_eviction_lifetime_threshold: float = 12 * 3600.0
    recommendation: RecommenderConfig = field(default_factory=RecommenderConfig)
    in_place: bool = False
    """InPlaceOrRecreate resizes in place: the cluster has InPlacePodVerticalScaling on."""
    storage: str = CHECKPOINT
    """prometheus: a pod's first samples come from the cluster's usage history."""
    history_length: float = 8 * 24 * 3600.0
    history_resolution: float = 3600.0


class VerticalPodAutoscaling:
    """The recommender and the updater, sharing one set of informers."""

    def __init__(
        self,
        client: Client,
        metrics: PodMetricsLister,
        options: VPAOptions = VPAOptions(),
        history: PodHistory | None = None,
        mapper: KindMapper | None = None,
    ) -> None:
        self._client = client
        self._mapper = mapper or RegistryMapper(KindRegistry())
        self._clock = client.clock
        self._metrics = metrics
        self._history = history if options.storage == PROMETHEUS else None
        if options.storage == PROMETHEUS and history is None:
            # upstream's recommender too goes on without the history it cannot get
            log.error("vpa recommender: cannot get cluster history: no usage history here")
        self.options = options
        self._informers = InformerFactory(client)
        self._vpas: Informer = self._informers.informer(VPAS)
        self._vpas.add_event_handler(on_add=self._vpa_added)
        self._passes: list[Periodic] = []
        # Pods and workloads are watched only once a VPA exists: a cluster without one (most
        # simulations) keeps no second copy of every pod.
        self._workloads = InformerFactory(client)
        self._pods: Informer = self._workloads.informer(PODS)
        self._owners = {name: self._workloads.informer(kind) for name, kind in _OWNERS.items()}
        self._watching = False
        self._recorder = EventRecorder(client, UPDATER)
        self._aggregates: dict[tuple[str, str], AggregateContainerState] = {}
        """By (VPA key, container name)."""
        self._containers: dict[tuple[str, str], ContainerState] = {}
        """By (pod uid, container name)."""
        self._limiter = _RateLimiter(options.eviction_rate_limit, options.eviction_rate_burst)
        self._in_place_limiter = _RateLimiter(
            options.eviction_rate_limit, options.eviction_rate_burst
        )
        self._in_place_since: dict[str, float] = {}
        """By pod uid: when the updater first saw its in-place resize under way."""
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._informers.start()
        loop = self._clock.loop
        self._tasks = [
            loop.create_task(self._every(self.options.recommender_interval, self.recommend)),
            loop.create_task(self._every(self.options.updater_interval, self.update)),
        ]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks = []
        if self._watching:
            await self._workloads.stop()
        await self._informers.stop()

    async def _every(self, interval: float, work: Callable[[], Awaitable[None]]) -> None:
        """`work` every `interval`, the first an interval from now; while there is no VPA
        the passes are skipped until one is made (`Periodic`)."""
        passes = Periodic(self._clock, interval, lambda: self._pass(work))
        self._passes.append(passes)
        await self._vpas.wait_for_sync()
        await self._clock.sleep(interval)
        await passes.run()

    def _vpa_added(self, vpa: Object) -> None:
        for passes in self._passes:
            passes.wake()

    async def _pass(self, work: Callable[[], Awaitable[None]]) -> float | None:
        if not self._vpas.list():
            return math.inf  # until a VPA is made
        if not self._watching:
            self._watching = True
            self._workloads.start()
        await self._workloads.wait_for_sync()
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("vertical pod autoscaling failed")
        return None

    # --- which pods a VPA controls ------------------------------------------------------------

    async def _owner(self, api_version: str, kind: str, namespace: str, name: str) -> Owner | None:
        """The controller a reference names: a watched workload from its informer, any other
        kind the server serves read, and its scale subresource asked for, as upstream's
        controller fetcher asks the scale client."""
        informer = self._owners.get(kind)
        if informer is not None:
            obj = informer.get(namespace, name)
            return None if obj is None else Owner(obj, "scale" in _OWNERS[kind].subresources)
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        for served in await self._mapper.mappings(group, kind):
            try:
                obj = await self._client.get(served, namespace, name)
            except StatusError:
                return None
            try:
                await self._client.get_scale(served, namespace, name)
            except StatusError:
                return Owner(obj, False)
            return Owner(obj, True)
        return None

    async def _unsupported(self, vpa: Object) -> str | None:
        """Why the VPA's target cannot be autoscaled, as the recommender's ConfigUnsupported
        condition says it (the cluster feeder's getSelector and validateTargetRef); None when
        it can."""
        namespace = vpa["metadata"]["namespace"]
        ref = (vpa.get("spec") or {}).get("targetRef") or {}
        api_version, kind, name = (str(ref.get(k, "")) for k in ("apiVersion", "kind", "name"))
        why = await self._fetch_error(api_version, kind, namespace, name)
        if why is not None:
            return f"Cannot read targetRef. Reason: {why}"
        as_owner = {**ref, "controller": True}
        stand_in = {"metadata": {"namespace": namespace, "ownerReferences": [as_owner]}}
        if await top_controller(stand_in, self._owner) != (kind, name):
            return (
                "The targetRef controller has a parent but it should point to a topmost "
                "well-known or scalable controller"
            )
        return None

    async def _fetch_error(
        self, api_version: str, kind: str, namespace: str, name: str
    ) -> str | None:
        """Why the target selector fetcher (pkg/target/fetcher.go) cannot read the target: a
        well-known workload from its informer, any other kind through its scale subresource;
        None when it can."""
        if kind in WELL_KNOWN:
            if await self._owner(api_version, kind, namespace, name) is None:
                return f"{kind} {namespace}/{name} does not exist"
            return None
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        last = f'no matches for kind "{kind}" in group "{group}"'
        for served in await self._mapper.mappings(group, kind):
            try:
                scale = await self._client.get_scale(served, namespace, name)
            except StatusError as e:
                last = e.message
                continue
            if not (scale.get("status") or {}).get("selector"):
                last = f"Resource {namespace}/{name} has an empty selector for scale sub-resource"
                break
            return None
        return f"Unhandled targetRef {api_version} / {kind} / {name}, last error {last}"

    async def _controlled_pods(self, vpa: Object) -> list[Object]:
        """GetControllingVPAForPod's converse: the live pods whose top-most controller is the
        VPA's target."""
        namespace = vpa["metadata"]["namespace"]
        found = []
        for pod in self._pods.list(namespace):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if targets(vpa, await top_controller(pod, self._owner)):
                found.append(pod)
        return found

    # --- the recommender ----------------------------------------------------------------------

    async def recommend(self) -> None:
        """RunOnce: load the VPAs and pods, take the metrics' samples, write recommendations."""
        usage: dict[str, dict[str, Object]] = {}
        vpas = self._vpas.list()
        sampled: set[str] = set()
        for vpa in vpas:
            namespace = vpa["metadata"]["namespace"]
            pods = await self._controlled_pods(vpa)
            running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
            if running and namespace not in usage:
                usage[namespace] = await self._pod_usage(namespace)
            for pod in running:
                await self._sample(vpa, pod, usage.get(namespace, {}))
                sampled.add(pod["metadata"].get("uid", ""))
            await self._write_status(vpa, bool(pods), await self._unsupported(vpa))
        self._collect_garbage({_key(vpa) for vpa in vpas}, sampled)

    def _collect_garbage(self, vpas: set[str], pods: set[str]) -> None:
        """Forget the containers of pods no longer running under a VPA and the histograms of
        deleted VPAs (the cluster state's garbage collection)."""
        for key in [k for k in self._containers if k[0] not in pods]:
            del self._containers[key]
        for key in [k for k in self._aggregates if k[0] not in vpas]:
            del self._aggregates[key]

    async def _pod_usage(self, namespace: str) -> dict[str, Object]:
        try:
            listed = await self._metrics(namespace, "")
        except StatusError as e:
            log.info("vpa recommender: no pod metrics for %s: %s", namespace, e)
            return {}
        return {m["metadata"]["name"]: m for m in listed.get("items") or ()}

    async def _sample(self, vpa: Object, pod: Object, usage: dict[str, Object]) -> None:
        metrics = usage.get(pod["metadata"]["name"])
        if metrics is None:
            return
        time = parse_time(metrics["timestamp"])
        key = _key(vpa)
        uid = pod["metadata"].get("uid", "")
        for container in metrics.get("containers") or ():
            name = container["name"]
            if scaling_off(vpa, name):
                continue
            aggregate = self._aggregates.setdefault((key, name), AggregateContainerState())
            state = self._containers.get((uid, name))
            if state is None or state.aggregate is not aggregate:
                state = self._containers[(uid, name)] = ContainerState(aggregate)
                await self._read_history(pod, name, state)
            used = container.get("usage") or {}
            state.add_cpu_sample(parse_quantity(used.get("cpu")).milli_value() / 1000.0, time)
            state.add_memory_sample(float(parse_quantity(used.get("memory")).value()), time)

    async def _read_history(self, pod: Object, container: str, state: ContainerState) -> None:
        """GetClusterHistory's samples of the pod's container: those since the pod started,
        as the query range steps them."""
        if self._history is None:
            return
        meta = pod["metadata"]
        read = await self._history(f"{meta['namespace']}/{meta['name']}", container)
        if read is None:
            return
        started = (pod.get("status") or {}).get("startTime")
        since = parse_time(started) if started else float("-inf")
        samples = [
            (time, cpu, memory)
            for time, cpu, memory in zip(read["time"], read["cpu"], read["memory"], strict=True)
            if time is not None and time >= since
        ]
        if not samples:
            return
        end = self._clock.now()
        step = self.options.history_resolution
        start = end - self.options.history_length
        at = start + max(0, math.floor((samples[0][0] - start) / step)) * step
        times = [t for t, _, _ in samples]  # oldest first: each step's window by bisection
        while at <= end:
            upto = bisect.bisect_right(times, at)
            window = samples[bisect.bisect_right(times, at - step) : upto]
            cpu = [c for _, c, _ in window if c is not None]
            lookback = samples[bisect.bisect_right(times, at - LOOKBACK) : upto]
            memory = [m for _, _, m in lookback if m is not None]
            if cpu:
                state.add_cpu_sample(sum(cpu) / len(cpu), at)
            if memory:
                state.add_memory_sample(memory[-1], at)
            at += step

    def _recommendation(self, vpa: Object) -> list[Object]:
        """GetRecommendedPodResources then the policy's capping, per container with samples."""
        key = _key(vpa)
        states = {
            name: state
            for (vpa_key, name), state in sorted(self._aggregates.items())
            if vpa_key == key and state.total_samples and not scaling_off(vpa, name)
        }
        entries = []
        for name, state in states.items():
            found = estimate(state, len(states), self.options.recommendation)
            controlled = controlled_resources(vpa, name)
            policy = container_policy(vpa, name)
            target, lower, upper = (
                {r: _quantity(r, v) for r, v in values.items() if r in controlled}
                for values in (found.target, found.lower, found.upper)
            )
            entries.append(
                {
                    "containerName": name,
                    "target": _strings(cap(target, policy)),
                    "lowerBound": _strings(cap(lower, policy)),
                    "upperBound": _strings(cap(upper, policy)),
                    "uncappedTarget": _strings(target),
                }
            )
        return entries

    async def _write_status(self, vpa: Object, pods_matched: bool, unsupported: str | None) -> None:
        updated = clone(vpa)
        status = updated.setdefault("status", {})
        entries = self._recommendation(vpa)
        if entries:
            status["recommendation"] = {"containerRecommendations": entries}
        conditions = {c["type"]: c for c in status.get("conditions") or ()}
        if unsupported is None:
            conditions.pop("ConfigUnsupported", None)
        else:
            pods_matched = False  # the feeder's selector matches nothing
            self._condition(conditions, "ConfigUnsupported", True, "", unsupported)
        reason, message = "", ""
        if pods_matched:
            conditions.pop("NoPodsMatched", None)
        else:
            reason, message = "NoPodsMatched", "No pods match this VPA object"
            self._condition(conditions, "NoPodsMatched", True, reason, message)
        provided = bool((status.get("recommendation") or {}).get("containerRecommendations"))
        if provided:
            reason, message = "", ""
        self._condition(conditions, "RecommendationProvided", provided, reason, message)
        status["conditions"] = sorted(conditions.values(), key=lambda c: c["type"])
        if updated.get("status") == vpa.get("status"):
            return
        try:
            await self._client.update_status(VPAS, updated)
        except StatusError as e:
            log.info("vpa recommender: cannot update %s: %s", _key(vpa), e)

    def _condition(
        self, conditions: dict[str, Object], kind: str, status: bool, reason: str, message: str
    ) -> None:
        value = "True" if status else "False"
        old = conditions.get(kind)
        condition: Object = {"type": kind, "status": value}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        if old is not None and old.get("status") == value:
            condition["lastTransitionTime"] = old.get("lastTransitionTime")
        else:
            condition["lastTransitionTime"] = self._clock.now_rfc3339()
        conditions[kind] = condition

    # --- the updater --------------------------------------------------------------------------

    async def update(self) -> None:
        """RunOnce of the updater."""
        live: set[str] = set()
        for vpa in self._vpas.list():
            mode = update_mode(vpa)
            if mode not in ("Recreate", "Auto", IN_PLACE_OR_RECREATE):
                continue
            if not recommendation_for_any(vpa):
                continue
            pods = await self._controlled_pods(vpa)
            live.update(p["metadata"]["uid"] for p in pods)
            groups = await self._groups(vpa, pods)
            in_place = mode == IN_PLACE_OR_RECREATE and self.options.in_place
            candidates = []
            for pod in pods:
                group = groups.get(_creator(pod) or ("", ""))
                priority = None if group is None else self._priority(vpa, pod)
                if (
                    group is not None
                    and priority is not None
                    and (
                        self._in_place_decision(pod, group) != _DEFER
                        if in_place
                        else group.can_evict(pod)
                    )
                    and _meets_eviction_requirements(vpa, pod)
                ):
                    candidates.append((priority, pod, group))
            # Scale-ups first, then the larger difference first.
            candidates.sort(key=lambda c: (not c[0][0], -c[0][1], c[1]["metadata"]["name"]))
            evictions = [(pod, group) for _, pod, group in candidates]
            if in_place:
                evictions = await self._resize_in_place(vpa, evictions)
            for pod, group in evictions:
                if not group.can_evict(pod):
                    continue
                await self._limiter.wait(self._clock)
                if await self._evict(vpa, pod):
                    group.evicted += pod["status"].get("phase") != "Pending"
        for uid in set(self._in_place_since) - live:
            del self._in_place_since[uid]

    async def _resize_in_place(
        self, vpa: Object, candidates: list[tuple[Object, _Group]]
    ) -> list[tuple[Object, _Group]]:
        """The in-place part of RunOnce: resize the pods it may; the ones to evict instead."""
        evictions = []
        for pod, group in candidates:
            decision = self._in_place_decision(pod, group)
            if decision == _EVICT:
                evictions.append((pod, group))
            if decision != _RESIZE:
                continue
            await self._in_place_limiter.wait(self._clock)
            if await self._resize(vpa, pod):
                group.in_place += 1
            else:
                evictions.append((pod, group))
        return evictions

    def _in_place_decision(self, pod: Object, group: _Group) -> str:
        """CanInPlaceUpdate: resize it now, wait, or evict it (a resize that failed or
        stalled: CanEvictInPlacingPod)."""
        status = pod.get("status") or {}
        if status.get("phase") == "Pending":
            return _DEFER
        resize = status.get("resize")
        if resize not in (DEFERRED, IN_PROGRESS, INFEASIBLE):  # isInPlaceUpdating
            return _RESIZE if group.disruptable() else _DEFER
        since = self._in_place_since.setdefault(pod["metadata"]["uid"], self._clock.now())
        if not group.disruptable():
            return _DEFER
        waited = self._clock.now() - since
        if resize == DEFERRED:
            return _EVICT if waited > DEFERRED_RESIZE_TIMEOUT else _DEFER
        if resize == IN_PROGRESS:
            return _EVICT if waited > IN_PROGRESS_RESIZE_TIMEOUT else _DEFER
        return _EVICT  # Infeasible

    async def _resize(self, vpa: Object, pod: Object) -> bool:
        """InPlaceUpdate: the recommendation through pods/resize, then the annotation that
        says so, and the event."""
        meta = pod["metadata"]
        containers = pod["spec"].get("containers") or []
        patched = []
        for container, change in zip(containers, container_resources(vpa, containers), strict=True):
            resources = {
                key: _strings(values)
                for key, values in (("requests", change.requests), ("limits", change.limits))
                if values
            }
            if resources:
                patched.append({"name": container["name"], "resources": resources})
        if not patched:
            return False
        namespace, name = meta["namespace"], meta["name"]
        try:
            await self._client.patch(
                PODS,
                namespace,
                name,
                {"spec": {"containers": patched}},
                PatchType.STRATEGIC_MERGE,
                subresource="resize",
            )
        except StatusError as e:
            log.info("vpa updater: resizing %s/%s failed: %s", namespace, name, e)
            return False
        annotation = {"metadata": {"annotations": {IN_PLACE_UPDATED_ANNOTATION: "true"}}}
        try:
            await self._client.patch(PODS, namespace, name, annotation, PatchType.MERGE)
        except StatusError as e:
            log.info("vpa updater: annotating %s/%s failed: %s", namespace, name, e)
        self._recorder.event(
            pod,
            EVENT_TYPE_NORMAL,
            "InPlaceResizedByVPA",
            "Pod was resized in place by VPA Updater.",
        )
        return True

    async def _groups(self, vpa: Object, pods: list[Object]) -> dict[tuple[str, str], _Group]:
        """GetCreatorMaps: per controller of at least the minimum replicas, its counts."""
        policy = (vpa.get("spec") or {}).get("updatePolicy") or {}
        required = policy.get("minReplicas") or self.options.min_replicas
        by_creator: dict[tuple[str, str], list[Object]] = {}
        for pod in pods:
            creator = _creator(pod)
            if creator is not None:
                by_creator.setdefault(creator, []).append(pod)
        groups = {}
        for creator, replicas in by_creator.items():
            if len(replicas) < required:
                continue
            configured = self._configured(creator, replicas)
            if configured is None:
                continue
            pending = sum(1 for p in replicas if p["status"].get("phase") == "Pending")
            groups[creator] = _Group(
                configured,
                int(configured * self.options.eviction_tolerance),
                len(replicas) - pending,
            )
        return groups

    def _configured(self, creator: tuple[str, str], replicas: list[Object]) -> int | None:
        """getReplicaCount: the controller's spec.replicas (a DaemonSet's ready pods, a Job's
        live ones); None when it has none."""
        kind, name = creator
        if kind == "Job":
            return len(replicas)
        namespace = replicas[0]["metadata"]["namespace"]
        informer = self._owners.get(kind)
        owner = None if informer is None else informer.get(namespace, name)
        if owner is None:
            return None
        if kind == "DaemonSet":
            count = (owner.get("status") or {}).get("numberReady") or 0
        else:
            count = (owner.get("spec") or {}).get("replicas") or 0
        return int(count) or None

    def _priority(self, vpa: Object, pod: Object) -> tuple[bool, float] | None:
        """GetUpdatePriority and AddPod's filter: (scale up, resource diff) of a pod that
        should be updated, None for one that should not."""
        observed = (pod["metadata"].get("annotations") or {}).get(OBSERVED_CONTAINERS_ANNOTATION)
        names = None if observed is None else {n.strip() for n in observed.split(",") if n}
        outside, scale_up = False, False
        requested: dict[str, int] = {}
        recommended: dict[str, int] = {}
        for container in pod["spec"].get("containers") or ():
            if names is not None and container["name"] not in names:
                continue
            recommendation = recommendation_for(vpa, container["name"])
            if recommendation is None or scaling_off(vpa, container["name"]):
                continue
            requests = _requests(pod, container)
            lower = resource_list(recommendation.get("lowerBound"))
            upper = resource_list(recommendation.get("upperBound"))
            for name, target in resource_list(recommendation.get("target")).items():
                recommended[name] = recommended.get(name, 0) + target.milli_value()
                request = requests.get(name)
                if request is None:
                    scale_up = outside = True
                    continue
                requested[name] = requested.get(name, 0) + request.milli_value()
                scale_up = scale_up or target.milli_value() > request.milli_value()
                if (name in lower and request < lower[name]) or (
                    name in upper and request > upper[name]
                ):
                    outside = True
        diff = 0.0
        for name, total in recommended.items():
            request_total = max(float(requested.get(name, 0)), 1.0)
            diff += abs(request_total - total) / request_total
        if not outside:
            started = (pod.get("status") or {}).get("startTime")
            if started is None:
                return None
            lifetime = self.options.in_recommendation_bounds_eviction_lifetime_threshold
            if self._clock.now() < parse_time(started) + lifetime:
                return None
            if diff < self.options.pod_update_threshold:
                return None
        return scale_up, diff

    async def _evict(self, vpa: Object, pod: Object) -> bool:
        meta = pod["metadata"]
        try:
            await self._client.evict(meta["namespace"], meta["name"])
        except StatusError as e:
            log.info("vpa updater: evicting %s/%s failed: %s", meta["namespace"], meta["name"], e)
            return False
        self._recorder.event(
            pod,
            EVENT_TYPE_NORMAL,
            "EvictedByVPA",
            "Pod was evicted by VPA Updater to apply resource recommendation.",
        )
        self._recorder.event(
            vpa,
            EVENT_TYPE_NORMAL,
            "EvictedPod",
            f"VPA Updater evicted Pod {meta['name']} to apply resource recommendation.",
        )
        return True


@dataclass
class _Group:
    """singleGroupStats of one controller's pods."""

    configured: int
    tolerance: int
    running: int
    evicted: int = 0
    in_place: int = 0
    """Pods resized in place in this run (inPlaceUpdateInitiated)."""

    def can_evict(self, pod: Object) -> bool:
        return pod["status"].get("phase") == "Pending" or self.disruptable()

    def disruptable(self) -> bool:
        """isPodDisruptable: enough replicas stay up if one more goes or is resized."""
        should_be_alive = self.configured - self.tolerance
        alive = self.running - self.evicted - self.in_place
        return alive > should_be_alive or (
            self.configured == self.running
            and self.tolerance == 0
            and self.evicted == 0
            and self.in_place == 0
        )


_RESIZE, _DEFER, _EVICT = "approved", "deferred", "evict"
"""The updater's in-place decisions (InPlaceApproved, InPlaceDeferred, InPlaceEvict)."""


class _RateLimiter:
    """A token bucket of `rate` per second and `burst` (golang.org/x/time/rate's Wait); a rate
    of 0 or less lets everything through."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate, self._burst = rate, max(burst, 1)
        self._tokens = float(self._burst)
        self._last: float | None = None

    async def wait(self, clock: Any) -> None:
        if self._rate <= 0:
            return
        now = clock.now()
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
        self._last = now
        self._tokens -= 1
        if self._tokens < 0:
            delay = -self._tokens / self._rate
            await clock.sleep(delay)


def _requests(pod: Object, container: Object) -> dict[str, Quantity]:
    """ContainerRequestsAndLimits' requests: what the container runs with, as its status
    shows it (a pod resized in place), or else its spec's."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == container["name"] and status.get("resources") is not None:
            return resource_list(status["resources"].get("requests"))
    return resource_list((container.get("resources") or {}).get("requests"))


def _meets_eviction_requirements(vpa: Object, pod: Object) -> bool:
    """The scaling-direction eviction admission: with updatePolicy set, some container with a
    recommendation (or without cpu or memory requests) must meet every evictionRequirement,
    a requirement being met when the target is above (TargetHigherThanRequests) or below
    (TargetLowerThanRequests) the request for any of its resources."""
    policy = (vpa.get("spec") or {}).get("updatePolicy")
    if policy is None:
        return True
    requirements = policy.get("evictionRequirements") or ()
    for container in pod["spec"].get("containers") or ():
        recommendation = recommendation_for(vpa, container["name"])
        if recommendation is None:
            continue
        requests = _requests(pod, container)
        if "cpu" not in requests or "memory" not in requests:
            return True
        target = resource_list(recommendation.get("target"))
        if all(_requirement_met(r, requests, target) for r in requirements):
            return True
    return False


def _requirement_met(requirement: Object, requests: dict[str, Any], target: dict[str, Any]) -> bool:
    higher = requirement.get("changeRequirement") == "TargetHigherThanRequests"
    lower = requirement.get("changeRequirement") == "TargetLowerThanRequests"
    for resource in requirement.get("resources") or ():
        wanted = target[resource].milli_value() if resource in target else 0
        asked = requests[resource].milli_value() if resource in requests else 0
        if (higher and wanted > asked) or (lower and wanted < asked):
            return True
    return False


def recommendation_for_any(vpa: Object) -> bool:
    recommendation = (vpa.get("status") or {}).get("recommendation") or {}
    return bool(recommendation.get("containerRecommendations"))


def _creator(pod: Object) -> tuple[str, str] | None:
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("kind", "")), str(ref.get("name", ""))
    return None


def _key(vpa: Object) -> str:
    return f"{vpa['metadata']['namespace']}/{vpa['metadata']['name']}"


def _quantity(resource: str, value: int) -> Quantity:
    """QuantityFromCPUAmount (millicores) and QuantityFromMemoryAmount (bytes, BinarySI)."""
    if resource == "cpu":
        return Quantity.from_milli(value)
    return Quantity.from_milli(value * 1000, BINARY_SI)


def _strings(resources: dict[str, Quantity]) -> dict[str, str]:
    return {name: str(q) for name, q in sorted(resources.items())}
