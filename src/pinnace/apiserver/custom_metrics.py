"""custom.metrics.k8s.io (v1beta2, v1beta1) and external.metrics.k8s.io (v1beta1): the groups
an adapter such as prometheus-adapter serves behind an APIService, on the interfaces of
kubernetes-sigs/custom-metrics-apiserver (pkg/provider, pkg/apiserver/endpoints).

In a cluster kube-apiserver proxies these groups to the adapter; here a `MetricsProvider`
registers with the server (`APIServer.custom_metrics`) and answers in-process. This module
keeps the wire forms: discovery's resources (`pods/http_requests_per_second`, one per metric
and resource), `MetricValueList` and `ExternalMetricValueList`, and the adapter's errors (404
NotFound "the server could not find the metric M for pods"). Without a provider the groups
are not served: every path of theirs is a 404, as on a cluster without the adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pinnace.api import catalog, status
from pinnace.api.kind import Kind
from pinnace.api.labels import SelectorError, parse_selector
from pinnace.api.objects import Object
from pinnace.api.registry import KindRegistry
from pinnace.clock.rfc3339 import format_time
from pinnace.resources.quantity import Quantity

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

CUSTOM_GROUP = "custom.metrics.k8s.io"
CUSTOM_VERSIONS = ("v1beta2", "v1beta1")
EXTERNAL_GROUP = "external.metrics.k8s.io"
EXTERNAL_VERSION = "v1beta1"
ALL_OBJECTS = "*"
"""The name that asks for the metric of every object the label selector matches."""


@dataclass(frozen=True)
class MetricValue:
    """One object's value of a custom metric."""

    kind: Kind
    namespace: str
    name: str
    milli: int
    timestamp: float


@dataclass(frozen=True)
class ExternalValue:
    """One series of an external metric."""

    labels: Mapping[str, str]
    milli: int
    timestamp: float


@dataclass(frozen=True)
class CustomMetricInfo:
    """A metric some object of `kind` has (custom-metrics-apiserver's CustomMetricInfo)."""

    kind: Kind
    metric: str


class MetricsProvider(Protocol):
    """What an adapter answers (custom-metrics-apiserver's CustomMetricsProvider and
    ExternalMetricsProvider); every method raises a StatusError for what it cannot find."""

    async def custom_metrics(self) -> list[CustomMetricInfo]: ...

    async def custom_values(
        self, namespace: str, kind: Kind, name: str, metric: str, label_selector: str
    ) -> list[MetricValue]:
        """The values of `metric` of the object `name` of `kind`, or of every object the
        label selector matches when `name` is ALL_OBJECTS."""
        ...

    async def external_metrics(self) -> list[str]: ...

    async def external_values(
        self, namespace: str, metric: str, label_selector: str
    ) -> list[ExternalValue]: ...


# --- errors, as custom-metrics-apiserver's provider package words them ------------------------


def metric_not_found(kind: Kind, metric: str) -> status.StatusError:
    return status.StatusError(
        404, "NotFound", f"the server could not find the metric {metric} for {group_resource(kind)}"
    )


def metric_not_found_for(kind: Kind, metric: str, name: str) -> status.StatusError:
    return status.StatusError(
        404,
        "NotFound",
        f"the server could not find the metric {metric} for {group_resource(kind)} {name}",
    )


def external_metric_not_found(metric: str) -> status.StatusError:
    return status.StatusError(
        404, "NotFound", f"the server could not find the metric {metric} for provided labels"
    )


class UnmappedKind(Exception):
    """What client-go's custom metrics client answers for an object of a kind the server does
    not serve (qualResourceForKind, over the RESTMapper's NoKindMatchError): the object's
    metric is never asked for."""

    def __init__(self, group: str, kind: str) -> None:
        group_kind = f"{kind}.{group}" if group else kind
        super().__init__(
            f"unable to map kind {group_kind} to resource: "
            f'no matches for kind "{kind}" in group "{group}"'
        )


NOT_SERVED_MESSAGE = "the server could not find the requested resource"


def not_served() -> status.StatusError:
    return status.StatusError(404, "NotFound", NOT_SERVED_MESSAGE, {})


def group_resource(kind: Kind) -> str:
    """schema.GroupResource's String(): `pods`, `deployments.apps`."""
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


def kind_of_resource(kinds: KindRegistry, text: str) -> Kind | None:
    """The kind a path's group-resource names (`pods`, `deployments.apps`,
    `crontabs.stable.example.com`), among those the server serves."""
    plural, _, group = text.partition(".")
    return kinds.by_resource(group, plural)


def provider(server: APIServer) -> MetricsProvider:
    if server.custom_metrics is None:
        raise not_served()
    return server.custom_metrics


# --- discovery ---------------------------------------------------------------------------------


async def discovery_kinds(server: APIServer) -> tuple[Kind, ...]:
    """The groups' resources as kinds discovery lists: `<resource>/<metric>` of kind
    MetricValueList at each custom version, `<metric>` of kind ExternalMetricValueList."""
    if server.custom_metrics is None:
        return ()
    found: list[Kind] = []
    for info in await server.custom_metrics.custom_metrics():
        plural = f"{group_resource(info.kind)}/{info.metric}"
        found += [
            _metric_kind(CUSTOM_GROUP, version, "MetricValueList", plural, info.kind.namespaced)
            for version in CUSTOM_VERSIONS
        ]
    for metric in await server.custom_metrics.external_metrics():
        found.append(
            _metric_kind(EXTERNAL_GROUP, EXTERNAL_VERSION, "ExternalMetricValueList", metric, True)
        )
    return tuple(dict.fromkeys(found))


def _metric_kind(group: str, version: str, kind: str, plural: str, namespaced: bool) -> Kind:
    return Kind(group, version, kind, plural, namespaced, "", verbs=("get",))


# --- the values ----------------------------------------------------------------------------------


async def custom_metric_list(
    server: APIServer,
    version: str,
    namespace: str,
    kind: Kind,
    name: str,
    metric: str,
    label_selector: str = "",
    metric_selector: str = "",
) -> Object:
    """GET …/namespaces/<ns>/<resource>/<name or *>/<metric>: a MetricValueList. A declared
    metric has no labels of its own, so a `metric_selector` (metricLabelSelector) keeps its
    values only when it matches an empty label set."""
    values = await provider(server).custom_values(namespace, kind, name, metric, label_selector)
    if metric_selector:
        try:
            wanted = parse_selector(metric_selector)
        except SelectorError as e:
            raise status.bad_request(str(e)) from None
        if not wanted.matches({}):
            values = []
    items = [_metric_value(version, v, metric) for v in values]
    return {
        "kind": "MetricValueList",
        "apiVersion": f"{CUSTOM_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


async def external_metric_list(
    server: APIServer, namespace: str, metric: str, label_selector: str = ""
) -> Object:
    """GET external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>: an
    ExternalMetricValueList."""
    values = await provider(server).external_values(namespace, metric, label_selector)
    items = [
        {
            "metricName": metric,
            "metricLabels": dict(v.labels),
            "timestamp": format_time(v.timestamp),
            "value": str(Quantity.from_milli(v.milli)),
        }
        for v in values
    ]
    return {
        "kind": "ExternalMetricValueList",
        "apiVersion": f"{EXTERNAL_GROUP}/{EXTERNAL_VERSION}",
        "metadata": {},
        "items": items,
    }


def _metric_value(version: str, value: MetricValue, metric: str) -> Object:
    # the adapter writes the core group's version as "/v1", GroupVersion{"", "v1"} joined
    described = {
        "kind": value.kind.kind,
        "namespace": value.namespace,
        "name": value.name,
        "apiVersion": f"{value.kind.group}/{value.kind.version}",
    }
    entry: Object = {"describedObject": described}
    if version == "v1beta1":
        entry["metricName"] = metric
    else:
        entry["metric"] = {"name": metric, "selector": None}
    entry["timestamp"] = format_time(value.timestamp)
    entry["value"] = str(Quantity.from_milli(value.milli))
    if version == "v1beta1":
        entry["selector"] = None
    return entry


class LocalMetricsClient:
    """The metrics clients of a component in the server's process (the HPA's): the same
    answers the HTTP paths give, without the round trip."""

    def __init__(self, server: APIServer) -> None:
        self._server = server

    async def pods(
        self, namespace: str, selector: str, metric: str, metric_selector: str
    ) -> Object:
        pods = catalog.kind("", "pods")
        return await custom_metric_list(
            self._server,
            CUSTOM_VERSIONS[0],
            namespace,
            pods,
            ALL_OBJECTS,
            metric,
            selector,
            metric_selector,
        )

    async def object(
        self, namespace: str, group: str, kind: str, name: str, metric: str, metric_selector: str
    ) -> Object:
        provider(self._server)  # the group's client is found before the kind is mapped
        found = self._server.kinds.by_kind(group, kind)
        if found is None:
            raise UnmappedKind(group, kind)
        return await custom_metric_list(
            self._server, CUSTOM_VERSIONS[0], namespace, found, name, metric, "", metric_selector
        )

    async def external(self, namespace: str, metric: str, selector: str) -> Object:
        return await external_metric_list(self._server, namespace, metric, selector)
