"""The metrics.k8s.io/v1beta1 paths: `nodes[/<name>]`, `pods` across namespaces and
`namespaces/<namespace>/pods[/<name>]`, read-only (get and list; no watch)."""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api import status
from pinnace.api.kind import Kind
from pinnace.apiserver import metrics
from pinnace.apiserver.http import negotiation, params
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import Encoder, Response
from pinnace.apiserver.http.routes import method_not_allowed, not_found
from pinnace.apiserver.server import APIServer

PREFIX = f"/apis/{metrics.GROUP}/{metrics.VERSION}/"


@dataclass(frozen=True)
class MetricsTarget:
    kind: Kind
    namespace: str = ""
    name: str = ""


def route(path: str) -> MetricsTarget | None:
    """The metrics resource `path` names; None for paths outside the group's resources (its
    discovery documents among them); 404 for a path inside that names nothing."""
    if not path.startswith(PREFIX):
        return None
    parts = [p for p in path[len(PREFIX) :].split("/") if p]
    if not parts:
        return None
    namespace = ""
    if parts[0] == "namespaces" and len(parts) >= 3:
        namespace, parts = parts[1], parts[2:]
    if parts[0] == "nodes" and not namespace and len(parts) <= 2:
        return MetricsTarget(metrics.NODE_METRICS, "", parts[1] if len(parts) == 2 else "")
    if parts[0] == "pods" and len(parts) <= 2 and (namespace or len(parts) == 1):
        return MetricsTarget(metrics.POD_METRICS, namespace, parts[1] if len(parts) == 2 else "")
    raise not_found()


async def handle(server: APIServer, request: Request, target: MetricsTarget) -> Response:
    if request.method not in ("GET", "HEAD"):
        raise method_not_allowed()
    if params.go_bool(request.query, "watch"):
        raise status.method_not_supported(target.kind.plural, "watch", metrics.GROUP)
    negotiated = negotiation.negotiate_resource(request.header("accept"))
    encoder = Encoder(target.kind, negotiated, "Metadata", server.clock.now)
    label_selector = params.first(request.query, "labelSelector") or ""
    field_selector = params.first(request.query, "fieldSelector") or ""
    if target.kind is metrics.NODE_METRICS:
        if target.name:
            return encoder.object(await metrics.get_node_metrics(server, target.name))
        listed = await metrics.list_node_metrics(server, label_selector, field_selector)
        return encoder.list(listed)
    if target.name:
        found = await metrics.get_pod_metrics(server, target.namespace, target.name)
        return encoder.object(found)
    listed = await metrics.list_pod_metrics(
        server, target.namespace, label_selector, field_selector
    )
    return encoder.list(listed)
