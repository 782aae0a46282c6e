"""The HorizontalPodAutoscaler controller (autoscaling/v2), as kube-controller-manager v1.32's
(pkg/controller/podautoscaler/horizontal.go).

Every sync period (15 s) each HPA is reconciled: it reads its target's scale subresource, asks
the resource metrics API (metrics.k8s.io) for its pods' usage, proposes a replica count per
metric (`hpa_replicas`), keeps the largest, normalizes it with the stabilization windows,
rate policies and min/max bounds (`hpa_behavior`), writes the new count through the scale
subresource, and reports status: currentReplicas, desiredReplicas, currentMetrics,
lastScaleTime and the AbleToScale, ScalingActive and ScalingLimited conditions, with Events
(SuccessfulRescale, FailedGetResourceMetric ...) as Kubernetes words them.

The target is any kind the server serves with a scale subresource (a custom resource's too),
found by group and kind through a `KindMapper` as the controller's RESTMapper finds it.

Pods and Object metrics are read from custom.metrics.k8s.io, External ones from
external.metrics.k8s.io (`CustomMetricsClient`); without an adapter serving them they fail as
on a cluster without one ("no custom metrics API (custom.metrics.k8s.io) registered").
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pinnace.api import catalog
from pinnace.api.core.event import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector, SelectorError, parse_selector, selector_from_dict
from pinnace.api.objects import Object, clone
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError
from pinnace.apiserver.custom_metrics import UnmappedKind
from pinnace.client import Client, EventRecorder, Informer, InformerFactory, object_key
from pinnace.client.custom_metrics import CustomMetricsClient
from pinnace.client.mapper import KindMapper, RegistryMapper
from pinnace.clock.rfc3339 import format_time
from pinnace.controllers.controller_utils import WorkQueue, split_key
from pinnace.controllers.hpa_behavior import (
    DEFAULT_DOWNSCALE_STABILIZATION_WINDOW,
    Condition,
    Normalizer,
)
from pinnace.controllers.hpa_replicas import (
    MetricError,
    PodMetricsInfo,
    Proposal,
    ReplicaCalculator,
    custom_pod_metrics_info,
    external_metric_values,
    pod_metrics_info,
)
from pinnace.resources.quantity import Quantity

log = logging.getLogger(__name__)

CONTROLLER_NAME = "horizontal-pod-autoscaler"
DEFAULT_SYNC_PERIOD = 15.0

PodMetricsLister = Callable[[str, str], Awaitable[Object]]
"""(namespace, label selector) -> the PodMetricsList of metrics.k8s.io."""
NOT_SERVED = "the server could not find the requested resource (get pods.metrics.k8s.io)"
"""What client-go reports when no one serves metrics.k8s.io."""
NO_CUSTOM_METRICS = "no custom metrics API (custom.metrics.k8s.io) registered"
NO_EXTERNAL_METRICS = "no external metrics API (external.metrics.k8s.io) registered"
UNSERVED = "the server could not find the requested resource"
"""The message of a 404 for a path no one serves."""


HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
PODS = catalog.kind("", "pods")


class _Failure(Exception):
    """A reconcile that ends early: its status is written and nothing is scaled."""


@dataclass
class _MetricResult:
    replicas: int
    name: str


class HorizontalController:
    def __init__(
        self,
        client: Client,
        informers: InformerFactory,
        metrics: PodMetricsLister | None = None,
        custom_metrics: CustomMetricsClient | None = None,
        *,
        mapper: KindMapper | None = None,
        sync_period: float = DEFAULT_SYNC_PERIOD,
        downscale_stabilization_window: float = DEFAULT_DOWNSCALE_STABILIZATION_WINDOW,
        calculator: ReplicaCalculator | None = None,
    ) -> None:
        self._client = client
        self._clock = client.clock
        self._metrics = metrics
        self._custom = custom_metrics
        self._mapper = mapper or RegistryMapper(KindRegistry())
        self._sync_period = sync_period
        self._calculator = calculator or ReplicaCalculator()
        self._normalizer = Normalizer(downscale_stabilization_window)
        self._recorder = EventRecorder(client, CONTROLLER_NAME)
        self._queue = WorkQueue(self._clock)
        self._selectors: dict[str, LabelSelector] = {}
        """Each HPA's last known pod selector, to find pods two HPAs both claim."""
        self._hpas: Informer = informers.informer(HPAS)
        self._pods: Informer = informers.informer(PODS)
        self._hpas.add_event_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
            on_delete=self._deleted,
        )

    async def run(self) -> None:
        """Reconcile autoscalers forever; cancel the task to stop."""
        await self._hpas.wait_for_sync()
        await self._pods.wait_for_sync()
        await self._queue.run(self.sync)

    # --- the queue: every HPA once per sync period ----------------------------------------------

    def _enqueue(self, hpa: Object) -> None:
        key = object_key(hpa)
        self._selectors.setdefault(key, LabelSelector.nothing())
        self._after_period(key)

    def _after_period(self, key: str) -> None:
        """As the HPA queue's fixed-interval rate limiter: a key waits one sync period, and
        adding a waiting key again changes nothing (it keeps its earlier time)."""
        self._queue.add_after(key, self._sync_period)

    def _deleted(self, hpa: Object) -> None:
        self._selectors.pop(object_key(hpa), None)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        hpa = self._hpas.get(namespace, name)
        if hpa is None:
            self._normalizer.forget(key)
            return
        try:
            await self._reconcile(clone(hpa), key)
        except asyncio.CancelledError:
            raise
        except _Failure as e:
            log.info("horizontal pod autoscaler %s: %s", key, e)
        except Exception:
            log.exception("reconciling horizontal pod autoscaler %s failed", key)
        self._after_period(key)

    # --- one reconcile ------------------------------------------------------------------------

    async def _reconcile(self, hpa: Object, key: str) -> None:
        original = copy.deepcopy(hpa.get("status") or {})
        hpa["status"] = copy.deepcopy(original)
        spec = hpa["spec"]
        namespace = hpa["metadata"]["namespace"]
        ref = spec.get("scaleTargetRef") or {}
        reference = f"{ref.get('kind', '')}/{namespace}/{ref.get('name', '')}"

        try:
            kind, scale = await self._target_scale(ref, namespace)
        except (StatusError, _Failure) as e:
            message = e.message if isinstance(e, StatusError) else str(e)
            self._event(hpa, EVENT_TYPE_WARNING, "FailedGetScale", message)
            self._condition(
                hpa,
                "AbleToScale",
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {message}",
            )
            await self._write_status(original, hpa)
            raise _Failure(f"failed to query scale subresource for {reference}: {message}") from e
        self._condition(
            hpa,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        )
        now = self._clock.now()
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        self._normalizer.record_initial(key, current, now)
        minimum = int(spec.get("minReplicas", 1))
        maximum = int(spec.get("maxReplicas", 0))
        statuses: list[Object] | None = None
        desired, reason, rescale = 0, "", True

        if current == 0 and minimum != 0:
            rescale = False
            self._condition(
                hpa,
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            )
        elif current > maximum:
            desired, reason = maximum, "Current number of replicas above Spec.MaxReplicas"
        elif current < minimum:
            desired, reason = minimum, "Current number of replicas below Spec.MinReplicas"
        else:
            statuses = []
            try:
                proposal = await self._replicas_for_metrics(hpa, scale, current, statuses, now)
            except _Failure as e:
                self._set_status(
                    hpa, current, int(hpa["status"].get("desiredReplicas", 0)), statuses
                )
                await self._write_status(original, hpa)
                self._event(hpa, EVENT_TYPE_WARNING, "FailedComputeMetricsReplicas", str(e))
                raise _Failure(
                    "failed to compute desired number of replicas based on listed metrics for "
                    f"{reference}: {e}"
                ) from e
            desired = max(proposal.replicas, 0)
            if desired > current:
                reason = f"{proposal.name} above target"
            if desired < current:
                reason = "All metrics below target"
            desired, conditions = self._normalizer.normalize(
                key, spec, current, desired, minimum, now
            )
            for condition in conditions:
                self._condition(hpa, *condition)
            rescale = desired != current

        if rescale:
            try:
                await self._client.update_scale(kind, namespace, ref.get("name", ""), desired)
            except StatusError as e:
                self._event(
                    hpa,
                    EVENT_TYPE_WARNING,
                    "FailedRescale",
                    f"New size: {desired}; reason: {reason}; error: {e.message}",
                )
                self._condition(
                    hpa,
                    "AbleToScale",
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {e.message}",
                )
                self._set_status(
                    hpa, current, int(hpa["status"].get("desiredReplicas", 0)), statuses
                )
                await self._write_status(original, hpa)
                raise _Failure(f"failed to rescale {reference}: {e.message}") from e
            self._condition(
                hpa,
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
            )
            self._event(
                hpa,
                EVENT_TYPE_NORMAL,
                "SuccessfulRescale",
                f"New size: {desired}; reason: {reason}",
            )
            self._normalizer.record_scale(key, spec.get("behavior"), current, desired, now)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescaled=rescale)
        await self._write_status(original, hpa)

    async def _target_scale(self, ref: Object, namespace: str) -> tuple[Kind, Object]:
        """The target's kind and Scale (scaleForResourceMappings): the target's group and kind
        mapped to the kinds the server serves, each tried in turn; the first one's error when
        none answers."""
        api_version = ref.get("apiVersion", "")
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        mappings = await self._mapper.mappings(group, ref.get("kind", ""))
        if not mappings:
            raise _Failure(f'no matches for kind "{ref.get("kind", "")}" in group "{group}"')
        errors: list[StatusError] = []
        for kind in mappings:
            try:
                return kind, await self._client.get_scale(kind, namespace, ref.get("name", ""))
            except StatusError as e:
                errors.append(e)
        raise errors[0]

    async def _replicas_for_metrics(
        self, hpa: Object, scale: Object, current: int, statuses: list[Object], now: float
    ) -> _MetricResult:
        """The largest proposal of the HPA's metrics (computeReplicasForMetrics); `statuses`
        gets one MetricStatus per metric, empty for those that failed."""
        selector, pods = self._selected_pods(hpa, scale)
        specs = hpa["spec"].get("metrics") or []
        statuses.extend({"type": ""} for _ in specs)
        best = _MetricResult(0, "")
        invalid: list[tuple[Condition, str]] = []
        for i, metric in enumerate(specs):
            try:
                result, statuses[i] = await self._replicas_for_metric(
                    hpa, metric, scale, selector, pods, now
                )
            except _MetricFailure as e:
                invalid.append((e.condition, str(e)))
                continue
            if best.replicas == 0 or result.replicas > best.replicas:
                best = result
        if invalid and (len(invalid) >= len(specs) or best.replicas < current):
            condition, first = invalid[0]
            self._condition(hpa, *condition)
            raise _Failure(
                f"invalid metrics ({len(invalid)} invalid out of {len(specs)}), "
                f"first error is: {first}"
            )
        self._condition(
            hpa,
            "ScalingActive",
            "True",
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {best.name}",
        )
        return best

    def _selected_pods(self, hpa: Object, scale: Object) -> tuple[str, list[Object]]:
        """The target's pod selector and the pods it selects, once checked that it is set,
        parses and no other HPA claims those pods."""
        text = (scale.get("status") or {}).get("selector") or ""
        if not text:
            self._event(hpa, EVENT_TYPE_WARNING, "SelectorRequired", "selector is required")
            self._condition(
                hpa,
                "ScalingActive",
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
            )
            raise _Failure("selector is required")
        try:
            selector = parse_selector(text)
        except SelectorError as e:
            message = (
                f"couldn't convert selector into a corresponding internal selector object: {e}"
            )
            self._event(hpa, EVENT_TYPE_WARNING, "InvalidSelector", message)
            self._condition(hpa, "ScalingActive", "False", "InvalidSelector", message)
            raise _Failure(message) from None
        key = object_key(hpa)
        if key in self._selectors:
            self._selectors[key] = selector
        namespace = hpa["metadata"]["namespace"]
        pods = self._pods.list(namespace, selector)
        claiming = sorted(
            other
            for other, theirs in self._selectors.items()
            if split_key(other)[0] == namespace
            and any(theirs.matches(p["metadata"].get("labels") or {}) for p in pods)
        )
        if len(claiming) > 1:
            message = (
                f"pods by selector {text} are controlled by multiple HPAs: [{' '.join(claiming)}]"
            )
            self._event(hpa, EVENT_TYPE_WARNING, "AmbiguousSelector", message)
            self._condition(hpa, "ScalingActive", "False", "AmbiguousSelector", message)
            raise _Failure(message)
        return text, pods

    async def _replicas_for_metric(
        self,
        hpa: Object,
        metric: Object,
        scale: Object,
        selector: str,
        pods: list[Object],
        now: float,
    ) -> tuple[_MetricResult, Object]:
        kind = metric.get("type", "")
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        if kind in ("Resource", "ContainerResource"):
            return await self._resource_metric(hpa, metric, current, selector, pods, now)
        if kind == "Pods":
            return await self._pods_metric(hpa, metric["pods"], current, selector, pods, now)
        if kind == "Object":
            return await self._object_metric(hpa, metric["object"], scale, pods)
        if kind == "External":
            return await self._external_metric(hpa, metric["external"], scale, pods)
        error = f'unknown metric source type "{kind}"'
        raise _MetricFailure(self._unable_to_compute(hpa, "InvalidMetricSourceType", error), error)

    async def _resource_metric(
        self,
        hpa: Object,
        metric: Object,
        current: int,
        selector: str,
        pods: list[Object],
        now: float,
    ) -> tuple[_MetricResult, Object]:
        kind = metric["type"]
        field = "resource" if kind == "Resource" else "containerResource"
        source = metric.get(field) or {}
        reason = (
            "FailedGetResourceMetric" if kind == "Resource" else "FailedGetContainerResourceMetric"
        )
        try:
            result, current_value = await self._resource_proposal(
                hpa, source, current, selector, pods, now
            )
        except MetricError as e:
            condition = self._unable_to_compute(hpa, reason, str(e))
            what = source.get("name", "") if kind == "Resource" else source.get("container")
            noun = "resource" if kind == "Resource" else "container"
            raise _MetricFailure(
                condition, f"failed to get {what} {noun} metric value: {e}"
            ) from None
        status_source = {"name": source.get("name", "")}
        if kind == "ContainerResource":
            status_source["container"] = source.get("container", "")
        return result, {"type": kind, field: {**status_source, "current": current_value}}

    async def _pods_metric(
        self,
        hpa: Object,
        source: Object,
        current: int,
        selector: str,
        pods: list[Object],
        now: float,
    ) -> tuple[_MetricResult, Object]:
        """computeStatusForPodsMetric: the pods' average against target.averageValue."""
        namespace = hpa["metadata"]["namespace"]
        ident = source.get("metric") or {}
        name = ident.get("name", "")
        try:
            metric_selector = _metric_selector(ident)
            target = Quantity((source.get("target") or {}).get("averageValue") or 0).milli_value()
            try:
                listed = await self._custom_call(
                    lambda c: c.pods(namespace, selector, name, metric_selector)
                )
                metrics = custom_pod_metrics_info(listed)
            except MetricError as e:
                raise MetricError(f"unable to get metric {name}: {e}") from None
            proposal = self._calculator.raw_resource_replicas(
                current, target, "", metrics, pods, now
            )
        except MetricError as e:
            condition = self._unable_to_compute(hpa, "FailedGetPodsMetric", str(e))
            raise _MetricFailure(condition, f"failed to get pods metric value: {e}") from None
        status = {
            "type": "Pods",
            "pods": {
                "metric": _identifier(ident),
                "current": {"averageValue": str(Quantity.from_milli(proposal.raw_average))},
            },
        }
        return _MetricResult(proposal.replicas, f"pods metric {name}"), status

    async def _object_metric(
        self, hpa: Object, source: Object, scale: Object, pods: list[Object]
    ) -> tuple[_MetricResult, Object]:
        """computeStatusForObjectMetric: the described object's value against target.value,
        or divided among the replicas against target.averageValue."""
        namespace = hpa["metadata"]["namespace"]
        ident = source.get("metric") or {}
        name = ident.get("name", "")
        described = source.get("describedObject") or {}
        target = source.get("target") or {}

        def failed(error: str, message: str | None = None) -> _MetricFailure:
            condition = self._unable_to_compute(hpa, "FailedGetObjectMetric", error)
            return _MetricFailure(
                condition, f"failed to get object metric value: {message or error}"
            )

        try:
            metric_selector = _metric_selector(ident)
        except MetricError as e:
            raise failed(str(e)) from None
        if target.get("type") not in ("Value", "AverageValue"):
            raise failed(
                "invalid object metric source: neither a value target nor an average value "
                "target was set"
            )
        try:
            value = await self._object_value(namespace, described, name, metric_selector)
        except MetricError as e:
            error = (
                f"unable to get metric {name}: {described.get('kind', '')} on {namespace} "
                f"{described.get('name', '')}/{e}"
            )
            wrapped = (
                None
                if target["type"] == "Value"
                else f"failed to get {name} object metric: {error}"
            )
            raise failed(error, wrapped) from None
        if target["type"] == "Value":
            current = int((scale.get("spec") or {}).get("replicas") or 0)
            ratio = value / Quantity(target.get("value") or 0).milli_value()
            try:
                replicas = self._calculator.usage_ratio_replicas(current, ratio, pods)
            except MetricError as e:
                raise failed(str(e)) from None
            status = {
                "describedObject": described,
                "metric": _identifier(ident),
                "current": {"value": str(Quantity.from_milli(value))},
            }
            label = f"{described.get('kind', '')} metric {name}"
            return _MetricResult(replicas, label), {"type": "Object", "object": status}
        replicas, average = self._calculator.per_pod_replicas(
            _status_replicas(scale), value, Quantity(target.get("averageValue") or 0).milli_value()
        )
        status = {
            "metric": _identifier(ident),
            "current": {"averageValue": str(Quantity.from_milli(average))},
        }
        # kube-controller-manager names an Object metric with an AverageValue target so too
        label = f"external metric {name}({go_label_selector(ident.get('selector'))})"
        return _MetricResult(replicas, label), {"type": "Object", "object": status}

    async def _object_value(
        self, namespace: str, described: Object, metric: str, metric_selector: str
    ) -> int:
        """GetObjectMetric: the described object's value in milli-units. The object is named
        by its group and kind, whatever its version, of any kind the server serves (custom
        resources' too)."""
        api_version = described.get("apiVersion", "")
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        kind, name = described.get("kind", ""), described.get("name", "")
        listed = await self._custom_call(
            lambda c: c.object(namespace, group, kind, name, metric, metric_selector)
        )
        items = listed.get("items") or []
        if len(items) != 1:
            raise MetricError(
                "unable to fetch metrics from custom metrics API: the custom metrics API server "
                f"returned {len(items)} results when we asked for exactly one"
            )
        return Quantity(items[0]["value"]).milli_value()

    async def _external_metric(
        self, hpa: Object, source: Object, scale: Object, pods: list[Object]
    ) -> tuple[_MetricResult, Object]:
        """computeStatusForExternalMetric: the sum of the series against target.value, or
        divided among the replicas against target.averageValue."""
        namespace = hpa["metadata"]["namespace"]
        ident = source.get("metric") or {}
        name = ident.get("name", "")
        target = source.get("target") or {}
        per_pod = target.get("averageValue") is not None
        label = f"external metric {name}({go_label_selector(ident.get('selector'))})"

        def failed(error: str, message: str) -> _MetricFailure:
            condition = self._unable_to_compute(hpa, "FailedGetExternalMetric", error)
            return _MetricFailure(
                condition, f"failed to get {name} external metric value: {message}"
            )

        if not per_pod and target.get("value") is None:
            error = (
                "invalid external metric source: neither a value target nor an average value "
                "target was set"
            )
            raise failed(error, error)
        try:
            selector = _metric_selector(ident)
            try:
                total = sum(
                    external_metric_values(
                        await self._external_call(lambda c: c.external(namespace, name, selector))
                    )
                )
            except MetricError as e:
                raise MetricError(
                    f"unable to get external metric {namespace}/{name}/"
                    f"{go_label_selector(ident.get('selector'))}: {e}"
                ) from None
            if per_pod:
                replicas, average = self._calculator.per_pod_replicas(
                    _status_replicas(scale), total, Quantity(target["averageValue"]).milli_value()
                )
                current = {"averageValue": str(Quantity.from_milli(average))}
            else:
                spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
                ratio = total / Quantity(target["value"]).milli_value()
                replicas = self._calculator.usage_ratio_replicas(spec_replicas, ratio, pods)
                current = {"value": str(Quantity.from_milli(total))}
        except MetricError as e:
            message = (
                f"failed to get {name} external metric: {e}"
                if per_pod
                else f"failed to get external metric {name}: {e}"
            )
            raise failed(str(e), message) from None
        status = {"metric": _identifier(ident), "current": current}
        return _MetricResult(replicas, label), {"type": "External", "external": status}

    async def _custom_call(
        self, call: Callable[[CustomMetricsClient], Awaitable[Object]]
    ) -> Object:
        return await self._adapter_call(call, "custom", NO_CUSTOM_METRICS)

    async def _external_call(
        self, call: Callable[[CustomMetricsClient], Awaitable[Object]]
    ) -> Object:
        return await self._adapter_call(call, "external", NO_EXTERNAL_METRICS)

    async def _adapter_call(
        self, call: Callable[[CustomMetricsClient], Awaitable[Object]], api: str, unserved: str
    ) -> Object:
        """The adapter's answer, or the metrics client's error: a group no one serves is
        one it found no APIService for."""
        prefix = f"unable to fetch metrics from {api} metrics API"
        if self._custom is None:
            raise MetricError(f"{prefix}: {unserved}")
        try:
            return await call(self._custom)
        except StatusError as e:
            message = unserved if e.code == 404 and e.message == UNSERVED else e.message
            raise MetricError(f"{prefix}: {message}") from None
        except UnmappedKind as e:
            raise MetricError(f"{prefix}: {e}") from None

    async def _resource_proposal(
        self,
        hpa: Object,
        source: Object,
        current: int,
        selector: str,
        pods: list[Object],
        now: float,
    ) -> tuple[_MetricResult, Object]:
        resource = source.get("name", "")
        container = source.get("container", "")
        target = source.get("target") or {}
        namespace = hpa["metadata"]["namespace"]
        calculator = self._calculator
        if target.get("averageValue") is not None:
            try:
                metrics = await self._pod_metrics(namespace, selector, resource, container)
                proposal = calculator.raw_resource_replicas(
                    current,
                    Quantity(target["averageValue"]).milli_value(),
                    resource,
                    metrics,
                    pods,
                    now,
                )
            except MetricError as e:
                raise MetricError(f"failed to get {resource} usage: {e}") from None
            value = {"averageValue": str(Quantity.from_milli(proposal.raw_average))}
            return _MetricResult(proposal.replicas, f"{resource} resource"), value
        if target.get("averageUtilization") is None:
            raise MetricError(
                "invalid resource metric source: neither an average utilization target nor an "
                "average value (usage) target was set"
            )
        try:
            metrics = await self._pod_metrics(namespace, selector, resource, container)
            proposal = calculator.resource_replicas(
                current,
                int(target["averageUtilization"]),
                resource,
                metrics,
                pods,
                now,
                container,
            )
        except MetricError as e:
            raise MetricError(f"failed to get {resource} utilization: {e}") from None
        noun = "resource" if not container else "container resource"
        name = f"{resource} {noun} utilization (percentage of request)"
        return _MetricResult(proposal.replicas, name), _utilization(proposal)

    async def _pod_metrics(
        self, namespace: str, selector: str, resource: str, container: str
    ) -> PodMetricsInfo:
        def failed(why: str) -> MetricError:
            return MetricError(f"unable to get metrics for resource {resource}: {why}")

        if self._metrics is None:
            raise failed(f"unable to fetch metrics from resource metrics API: {NOT_SERVED}")
        try:
            listed = await self._metrics(namespace, selector)
        except StatusError as e:
            message = NOT_SERVED if e.code == 404 else e.message
            raise failed(f"unable to fetch metrics from resource metrics API: {message}") from None
        try:
            return pod_metrics_info(listed, resource, container)
        except MetricError as e:
            raise failed(str(e)) from None

    # --- status, conditions and events ----------------------------------------------------

    def _unable_to_compute(self, hpa: Object, reason: str, message: str) -> Condition:
        self._event(hpa, EVENT_TYPE_WARNING, reason, message)
        return (
            "ScalingActive",
            "False",
            reason,
            f"the HPA was unable to compute the replica count: {message}",
        )

    def _event(self, hpa: Object, event_type: str, reason: str, message: str) -> None:
        self._recorder.event(hpa, event_type, reason, message)

    def _condition(self, hpa: Object, kind: str, status: str, reason: str, message: str) -> None:
        """setCondition: a changed status moves lastTransitionTime; a new type is appended."""
        conditions = hpa["status"].setdefault("conditions", [])
        now = self._clock.now_rfc3339()
        found = next((c for c in conditions if c.get("type") == kind), None)
        if found is None:
            conditions.append(
                {
                    "type": kind,
                    "status": status,
                    "lastTransitionTime": now,
                    "reason": reason,
                    "message": message,
                }
            )
            return
        if found.get("status") != status:
            found["lastTransitionTime"] = now
        found.update(status=status, reason=reason, message=message)

    def _set_status(
        self,
        hpa: Object,
        current: int,
        desired: int,
        metrics: list[Object] | None,
        rescaled: bool = False,
    ) -> None:
        old = hpa["status"]
        status: Object = {}
        if current:
            status["currentReplicas"] = current
        status["desiredReplicas"] = desired
        last_scale = format_time(self._clock.now()) if rescaled else old.get("lastScaleTime")
        if last_scale:
            status["lastScaleTime"] = last_scale
        if metrics:
            status["currentMetrics"] = metrics
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    async def _write_status(self, original: Object, hpa: Object) -> None:
        if hpa["status"] == original:
            return
        try:
            await self._client.update_status(HPAS, hpa)
        except StatusError as e:
            self._event(hpa, EVENT_TYPE_WARNING, "FailedUpdateStatus", e.message)
            raise _Failure(
                f"failed to update status for {hpa['metadata']['name']}: {e.message}"
            ) from e


class _MetricFailure(Exception):
    def __init__(self, condition: Condition, message: str) -> None:
        super().__init__(message)
        self.condition = condition


def _utilization(proposal: Proposal) -> Object:
    return {
        "averageUtilization": proposal.utilization,
        "averageValue": str(Quantity.from_milli(proposal.raw_average)),
    }


def _status_replicas(scale: Object) -> int:
    return int((scale.get("status") or {}).get("replicas") or 0)


def _identifier(ident: Object) -> Object:
    """A MetricIdentifier as the status carries it: the name, and the selector when set."""
    found: Object = {"name": ident.get("name", "")}
    if ident.get("selector") is not None:
        found["selector"] = ident["selector"]
    return found


def _metric_selector(ident: Object) -> str:
    """The metric's label selector as a query parameter (LabelSelectorAsSelector)."""
    try:
        return str(selector_from_dict(ident.get("selector")))
    except SelectorError as e:
        raise MetricError(str(e)) from None


def go_label_selector(selector: Object | None) -> str:
    """A *metav1.LabelSelector as Go's %+v prints it (its generated String())."""
    if selector is None:
        return "nil"
    labels = "".join(f"{k}: {v}," for k, v in sorted((selector.get("matchLabels") or {}).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or []
    )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
