"""client-go's custom and external metrics clients (k8s.io/metrics/pkg/client/custom_metrics and
external_metrics): what they ask (`CustomMetricsClient`, read by the HPA and by the scheduler's
Trimaran CustomMetrics provider), and `HTTPMetricsClient`, asking it over HTTP for the
components of `pinnace controller-manager` and `pinnace scheduler` processes, as
kube-controller-manager reads the groups kube-apiserver proxies to an adapter.

The paths are the clients':

    GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/<ns>/<resource>/<name>/<metric>
            ?metricLabelSelector=…     (an object's metric; `*` and ?labelSelector=… for pods)
    GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=…

where <resource> is the kind's group-resource (`pods`, `deployments.apps`). Each answers the
list (MetricValueList, ExternalMetricValueList) or raises the server's StatusError, as
`apiserver.custom_metrics.LocalMetricsClient` does in the server's process.

An object's metric names the object by group and kind, which the client maps to its resource
as client-go's does with a RESTMapper (qualResourceForKind): through discovery here
(`pinnace.client.mapper.DiscoveryMapper`), in any version of the group, its preferred one
first; a kind no version serves raises `UnmappedKind`.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import quote, urlencode

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.apiserver.custom_metrics import (
    ALL_OBJECTS,
    CUSTOM_GROUP,
    CUSTOM_VERSIONS,
    EXTERNAL_GROUP,
    EXTERNAL_VERSION,
    UnmappedKind,
    group_resource,
    not_served,
)
from pinnace.client.http import HTTPClient
from pinnace.client.mapper import DiscoveryMapper

PODS = group_resource(catalog.kind("", "pods"))


class CustomMetricsClient(Protocol):
    """What client-go's custom and external metrics clients ask of the adapter; each answers
    the group's list (MetricValueList, ExternalMetricValueList) or raises its StatusError."""

    async def pods(
        self, namespace: str, selector: str, metric: str, metric_selector: str
    ) -> Object: ...

    async def object(
        self, namespace: str, group: str, kind: str, name: str, metric: str, metric_selector: str
    ) -> Object:
        """The metric of the object `name` of `kind` in `group` (any version); raises
        UnmappedKind for a kind the server does not serve."""
        ...

    async def external(self, namespace: str, metric: str, selector: str) -> Object: ...


class HTTPMetricsClient:
    """The `CustomMetricsClient` of a component in another process than the server's."""

    def __init__(self, client: HTTPClient) -> None:
        self._client = client
        self._mapper = DiscoveryMapper(client)

    async def pods(
        self, namespace: str, selector: str, metric: str, metric_selector: str
    ) -> Object:
        return await self._custom(namespace, PODS, ALL_OBJECTS, metric, selector, metric_selector)

    async def object(
        self, namespace: str, group: str, kind: str, name: str, metric: str, metric_selector: str
    ) -> Object:
        resource = await self._resource_of(group, kind)
        return await self._custom(namespace, resource, name, metric, "", metric_selector)

    async def _resource_of(self, group: str, kind: str) -> str:
        """The group-resource serving `kind`, found through discovery."""
        found = await self._mapper.mappings(group, kind)
        if found:
            return group_resource(found[0])
        if not await self._mapper.versions(CUSTOM_GROUP):
            raise not_served()  # client-go finds the group's version before mapping the kind
        raise UnmappedKind(group, kind)

    async def external(self, namespace: str, metric: str, selector: str) -> Object:
        path = f"/apis/{EXTERNAL_GROUP}/{EXTERNAL_VERSION}/namespaces/{_segment(namespace)}"
        return await self._client.get_path(_query(f"{path}/{_segment(metric)}", selector, ""))

    async def _custom(
        self,
        namespace: str,
        resource: str,
        name: str,
        metric: str,
        selector: str,
        metric_selector: str,
    ) -> Object:
        path = "/".join(
            (
                f"/apis/{CUSTOM_GROUP}/{CUSTOM_VERSIONS[0]}/namespaces",
                _segment(namespace),
                resource,
                name if name == ALL_OBJECTS else _segment(name),
                _segment(metric),
            )
        )
        return await self._client.get_path(_query(path, selector, metric_selector))


def _segment(text: str) -> str:
    return quote(text, safe="")


def _query(path: str, selector: str, metric_selector: str) -> str:
    params = {"labelSelector": selector, "metricLabelSelector": metric_selector}
    present = {k: v for k, v in params.items() if v}
    return f"{path}?{urlencode(present)}" if present else path
