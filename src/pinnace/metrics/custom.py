"""The metrics adapter of the simulated cluster: custom and external metrics as
prometheus-adapter serves them (kubernetes-sigs/prometheus-adapter, on
custom-metrics-apiserver's provider interfaces), computed from what the objects declare
instead of from Prometheus (docs/autoscaling.md#custom-and-external-metrics).

Series, the external metrics, are declared in ConfigMaps labelled
`metrics.sim.pinnace.dev/series`: each data key is a series name, each line of its value one
series, its labels in braces then its value over time, counted from the ConfigMap's creation:

    data:
      queue_messages_ready: |
        {queue=worker_tasks} ramp 10 100 5m
        {queue=reports} 30
      frontend_requests: "periodic 100 900 1h"

Objects declare custom metrics in annotations `metrics.sim.pinnace.dev/<metric>`: on a pod
(usually through its template) or on any other namespaced object, such as a Service:

    metrics.sim.pinnace.dev/http_requests_per_second: "ramp 5 50 10m"   # from the pod's start
    metrics.sim.pinnace.dev/http_requests_per_second: "series frontend_requests"
    metrics.sim.pinnace.dev/http_requests_per_second: "share frontend_requests{tier=web}"

A constant or a shape (`pinnace.kubelet.usage`'s syntax: ramp, spike, periodic) is counted
from the pod's start (any other object's creation); `series NAME{selector}` is the sum of the
series of that name in the object's namespace its labels match; `share …` is that sum divided
among the Running and Ready pods of the namespace that declare the metric with the same text,
as a Service spreads its load over its ready endpoints: the pods of one Deployment share it,
so scaling out lowers each one's value. A pod that is not Ready gets no share (0). Only
Running pods report metrics; a declaration that does not parse, or a series that does not
exist, leaves the object without the metric.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pinnace.api import catalog, status
from pinnace.api.kind import Kind
from pinnace.api.labels import LabelSelector, SelectorError, parse_selector
from pinnace.api.objects import Object
from pinnace.apiserver.custom_metrics import (
    ALL_OBJECTS,
    CustomMetricInfo,
    ExternalValue,
    MetricValue,
    external_metric_not_found,
    metric_not_found,
    metric_not_found_for,
)
from pinnace.client import Client
from pinnace.clock import parse_time
from pinnace.controllers.controller_utils import is_pod_ready
from pinnace.kubelet.usage import Curve, UsageSyntaxError, parse_curve

log = logging.getLogger(__name__)

ANNOTATION_PREFIX = "metrics.sim.pinnace.dev/"
SERIES_LABEL = "metrics.sim.pinnace.dev/series"
NANO_UNITS = "cpu"
"""The usage syntax's resource whose amounts are kept in billionths: a metric's value keeps
its fractions ("0.5", "250m")."""
PODS = catalog.kind("", "pods")
CONFIGMAPS = catalog.kind("", "configmaps")
DESCRIBED = (
    PODS,
    catalog.kind("", "services"),
    catalog.kind("apps", "deployments"),
    catalog.kind("apps", "statefulsets"),
    catalog.kind("apps", "replicasets"),
)
"""The kinds whose metrics discovery lists (any namespaced kind's can be read)."""


class MetricSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class SeriesRef:
    name: str
    selector: LabelSelector


@dataclass(frozen=True)
class Declaration:
    """What an annotation declares: a curve of its own, or (a share of) series."""

    curve: Curve | None = None
    series: SeriesRef | None = None
    shared: bool = False


@dataclass(frozen=True)
class Series:
    name: str
    labels: Mapping[str, str]
    curve: Curve
    start: float

    def at(self, now: float) -> float:
        return self.curve.at(now - self.start)


def parse_declaration(text: str) -> Declaration:
    words = text.split(None, 1)
    if words and words[0] in ("share", "series"):
        if len(words) < 2:
            raise MetricSyntaxError(f'"{words[0]}" needs a series name')
        return Declaration(series=parse_series_ref(words[1]), shared=words[0] == "share")
    try:
        return Declaration(curve=parse_curve(text, NANO_UNITS))
    except UsageSyntaxError as e:
        shapes = '"series NAME{selector}" or "share NAME{selector}"'
        raise MetricSyntaxError(f"{e}, {shapes}") from None


def parse_series_ref(text: str) -> SeriesRef:
    """`name` or `name{label selector}`."""
    name, brace, rest = text.strip().partition("{")
    if not brace:
        return SeriesRef(name, LabelSelector.everything())
    if not rest.endswith("}"):
        raise MetricSyntaxError(f'"{text}": the selector must end with "}}"')
    try:
        return SeriesRef(name.strip(), parse_selector(rest[:-1]))
    except SelectorError as e:
        raise MetricSyntaxError(f'"{text}": {e}') from None


def parse_series_line(line: str) -> tuple[dict[str, str], Curve]:
    """`{k=v,k2="v2"} CURVE` or `CURVE`: a series' labels and value."""
    labels: dict[str, str] = {}
    text = line.strip()
    if text.startswith("{"):
        inside, brace, text = text[1:].partition("}")
        if not brace:
            raise MetricSyntaxError(f'"{line}": the labels must end with "}}"')
        for pair in filter(None, (p.strip() for p in inside.split(","))):
            key, equals, value = pair.partition("=")
            if not equals or not key.strip():
                raise MetricSyntaxError(f'"{pair}" is not a label such as queue=tasks')
            labels[key.strip()] = value.strip().strip('"')
    try:
        return labels, parse_curve(text.strip(), NANO_UNITS)
    except UsageSyntaxError as e:
        raise MetricSyntaxError(f'"{line}": {e}') from None


def configmap_series(configmap: Object) -> list[Series]:
    """The series a ConfigMap declares; a line that does not parse is left out (and logged)."""
    meta = configmap["metadata"]
    start = parse_time(meta["creationTimestamp"])
    found = []
    for name, value in sorted((configmap.get("data") or {}).items()):
        for line in str(value).splitlines():
            if not line.strip():
                continue
            try:
                labels, curve = parse_series_line(line)
            except MetricSyntaxError as e:
                log.warning(
                    "ConfigMap %s/%s, series %s: %s", meta["namespace"], meta["name"], name, e
                )
                continue
            found.append(Series(name, labels, curve, start))
    return found


def series_sum(series: Iterable[Series], ref: SeriesRef, now: float) -> float | None:
    """The sum of the series `ref` names, or None when none does."""
    matching = [s for s in series if s.name == ref.name and ref.selector.matches(s.labels)]
    return sum(s.at(now) for s in matching) if matching else None


def milli(nano_units: float) -> int:
    return round(nano_units / 1_000_000)


def _annotations(obj: Object) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _start(kind: Kind, obj: Object) -> float:
    """A pod's start, any other object's creation."""
    started = (obj.get("status") or {}).get("startTime") if kind is PODS else None
    return parse_time(started or obj["metadata"]["creationTimestamp"])


def _running(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


class SimulatedMetricsAdapter:
    """The `MetricsProvider` of `pinnace.apiserver.custom_metrics`, reading the cluster through
    `client` when asked (nothing is kept between requests)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    async def custom_metrics(self) -> list[CustomMetricInfo]:
        found: set[tuple[str, str]] = set()
        infos = []
        for kind in DESCRIBED:
            for obj in (await self._client.list(kind))["items"]:
                for key in _annotations(obj):
                    metric = key[len(ANNOTATION_PREFIX) :]
                    if key.startswith(ANNOTATION_PREFIX) and (kind.plural, metric) not in found:
                        found.add((kind.plural, metric))
                        infos.append(CustomMetricInfo(kind, metric))
        return sorted(infos, key=lambda i: (i.kind.plural, i.metric))

    async def custom_values(
        self, namespace: str, kind: Kind, name: str, metric: str, label_selector: str
    ) -> list[MetricValue]:
        key = ANNOTATION_PREFIX + metric
        if name == ALL_OBJECTS:
            listed = await self._client.list(kind, namespace, label_selector=label_selector)
            objects = listed["items"]
        else:
            try:
                objects = [await self._client.get(kind, namespace, name)]
            except status.StatusError as e:
                if e.code == 404:
                    raise metric_not_found_for(kind, metric, name) from None
                raise
        declaring = [
            o for o in objects if key in _annotations(o) and (kind is not PODS or _running(o))
        ]
        now = self._client.clock.now()
        values = await self._values(namespace, kind, key, declaring, now)
        if not values:
            if name == ALL_OBJECTS:
                raise metric_not_found(kind, metric)
            raise metric_not_found_for(kind, metric, name)
        return values

    async def _values(
        self, namespace: str, kind: Kind, key: str, objects: list[Object], now: float
    ) -> list[MetricValue]:
        declarations: list[tuple[Object, Declaration]] = []
        for obj in objects:
            try:
                declarations.append((obj, parse_declaration(_annotations(obj)[key])))
            except MetricSyntaxError as e:
                log.warning(
                    "%s %s/%s, %s: %s", kind.kind, namespace, obj["metadata"]["name"], key, e
                )
        if not declarations:
            return []
        series = await self._series(namespace) if any(d.series for _, d in declarations) else []
        sharers = (
            await self._sharers(namespace, key) if any(d.shared for _, d in declarations) else {}
        )
        values = []
        for obj, declared in declarations:
            amount = self._amount(kind, obj, key, declared, series, sharers, now)
            if amount is not None:
                meta = obj["metadata"]
                values.append(MetricValue(kind, namespace, meta["name"], milli(amount), now))
        return values

    @staticmethod
    def _amount(
        kind: Kind,
        obj: Object,
        key: str,
        declared: Declaration,
        series: list[Series],
        sharers: Mapping[str, int],
        now: float,
    ) -> float | None:
        if declared.curve is not None:
            return declared.curve.at(now - _start(kind, obj))
        assert declared.series is not None
        total = series_sum(series, declared.series, now)
        if total is None or not declared.shared or kind is not PODS:
            return total
        if not is_pod_ready(obj):
            return 0.0
        return total / sharers[_annotations(obj)[key]]

    async def _sharers(self, namespace: str, key: str) -> dict[str, int]:
        """How many Running and Ready pods of the namespace declare `key`, by its text."""
        counts: dict[str, int] = {}
        for pod in (await self._client.list(PODS, namespace))["items"]:
            text = _annotations(pod).get(key)
            if text is not None and _running(pod) and is_pod_ready(pod):
                counts[text] = counts.get(text, 0) + 1
        return counts

    async def _series(self, namespace: str) -> list[Series]:
        listed = await self._client.list(CONFIGMAPS, namespace, label_selector=SERIES_LABEL)
        return [s for cm in listed["items"] for s in configmap_series(cm)]

    async def external_metrics(self) -> list[str]:
        return sorted({s.name for s in await self._series("")})

    async def external_values(
        self, namespace: str, metric: str, label_selector: str
    ) -> list[ExternalValue]:
        try:
            selector = parse_selector(label_selector)
        except SelectorError as e:
            raise status.bad_request(str(e)) from None
        series = [s for s in await self._series(namespace) if s.name == metric]
        if not series:
            raise external_metric_not_found(metric)
        now = self._client.clock.now()
        return [
            ExternalValue(s.labels, milli(s.at(now)), now)
            for s in series
            if selector.matches(s.labels)
        ]
