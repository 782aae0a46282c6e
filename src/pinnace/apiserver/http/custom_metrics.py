"""The paths of custom.metrics.k8s.io and external.metrics.k8s.io, get only, as
custom-metrics-apiserver's installers route them (pkg/apiserver/installer):

    /apis/custom.metrics.k8s.io/<version>/namespaces/<ns>/<resource>/<name or *>/<metric>
    /apis/custom.metrics.k8s.io/<version>/namespaces/<ns>/<metric>   (the Namespace's metric)
    /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>

The group-version paths themselves are discovery, answered with the other groups'.
"""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api import catalog
from pinnace.apiserver import custom_metrics
from pinnace.apiserver.http import params
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import Response, json_response
from pinnace.apiserver.http.routes import method_not_allowed, not_found
from pinnace.apiserver.server import APIServer

_CUSTOM = tuple(
    (f"/apis/{custom_metrics.CUSTOM_GROUP}/{v}/", v) for v in custom_metrics.CUSTOM_VERSIONS
)
_EXTERNAL = f"/apis/{custom_metrics.EXTERNAL_GROUP}/{custom_metrics.EXTERNAL_VERSION}/"
NAMESPACES = catalog.kind("", "namespaces")


@dataclass(frozen=True)
class MetricTarget:
    version: str
    """The custom group's version; "" for the external group."""
    parts: tuple[str, ...]
    """The path below the group version, split at its slashes."""


def route(path: str) -> MetricTarget | None:
    """The metric `path` asks for; None for a path outside the groups' resources."""
    for prefix, version in (*_CUSTOM, (_EXTERNAL, "")):
        if path.startswith(prefix):
            parts = tuple(path[len(prefix) :].split("/"))
            return MetricTarget(version, parts) if any(parts) else None
    return None


async def handle(server: APIServer, request: Request, target: MetricTarget) -> Response:
    if request.method not in ("GET", "HEAD"):
        raise method_not_allowed()
    custom_metrics.provider(server)
    label_selector = params.first(request.query, "labelSelector") or ""
    parts = target.parts
    if len(parts) < 3 or parts[0] != "namespaces" or not all(parts):
        raise not_found()
    namespace = parts[1]
    if not target.version:
        if len(parts) != 3:
            raise not_found()
        found = await custom_metrics.external_metric_list(
            server, namespace, parts[2], label_selector
        )
        return json_response(found)
    if len(parts) == 3:
        # a metric of the Namespace object itself
        raise custom_metrics.metric_not_found_for(NAMESPACES, parts[2], namespace)
    if len(parts) != 5:
        raise not_found()
    resource, name, metric = parts[2:]
    kind = custom_metrics.kind_of_resource(server.kinds, resource)
    if kind is None or not kind.namespaced:
        raise not_found()
    metric_selector = params.first(request.query, "metricLabelSelector") or ""
    listed = await custom_metrics.custom_metric_list(
        server, target.version, namespace, kind, name, metric, label_selector, metric_selector
    )
    return json_response(listed)
