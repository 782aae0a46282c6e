"""The paths that are not resources: discovery, /version, the health checks and OpenAPI."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType

from pinnace.api import discovery
from pinnace.apiserver.http import negotiation
from pinnace.apiserver.http.params import go_bool
from pinnace.apiserver.http.responses import Response, json_response, text_response
from pinnace.apiserver.http.routes import Discovery, not_found

HEALTH_CHECKS = {
    "/healthz": ("ping", "log", "etcd", "poststarthook/bootstrap-controller"),
    "/livez": ("ping", "log", "etcd", "poststarthook/bootstrap-controller"),
    "/readyz": ("ping", "log", "etcd", "informer-sync", "poststarthook/bootstrap-controller"),
}
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def discovery_document(target: Discovery, accept: str, server_address: str) -> Response:
    if target.group is None:
        version = negotiation.negotiate_discovery(accept)
        if version is not None:
            document = discovery.aggregated_discovery(target.core, version=version)
            return json_response(document, content_type=negotiation.discovery_content_type(version))
        if target.core:
            return json_response(discovery.api_versions(server_address))
        return json_response(discovery.api_group_list())
    if target.version is None:
        group = discovery.api_group(target.group)
        if group is None:
            raise not_found()
        return json_response(group)
    resources = discovery.api_resource_list(target.group, target.version)
    if resources is None:
        raise not_found()
    return json_response(resources)


def version() -> Response:
    return json_response(discovery.version_info())


def health(path: str, query: Mapping[str, Sequence[str]]) -> Response | None:
    """/healthz, /livez, /readyz (and their single checks, /readyz/ping); None for other
    paths. Everything that answers is healthy: the store is in process."""
    for prefix, checks in HEALTH_CHECKS.items():
        if path == prefix:
            if go_bool(query, "verbose"):
                lines = [f"[+]{check} ok" for check in checks]
                return text_response("\n".join(lines) + f"\n{prefix[1:]} check passed\n")
            return text_response("ok")
        if path.startswith(prefix + "/") and path[len(prefix) + 1 :] in checks:
            return text_response("ok")
    return None


def _openapi() -> ModuleType | None:
    """pinnace.api.openapi's documents, when that package provides them."""
    try:
        module = importlib.import_module("pinnace.api.openapi")
    except ImportError:
        return None
    return module if hasattr(module, "openapi_v3_index") else None


def openapi(path: str, accept: str) -> Response | None:
    """/openapi/v2 and /openapi/v3[/<group-version>]; None for other paths."""
    if path != "/openapi/v2" and path != "/openapi/v3" and not path.startswith("/openapi/v3/"):
        return None
    module = _openapi()
    if module is None:
        raise not_found()
    if path == "/openapi/v2":
        body: bytes = module.openapi_v2()
        protobuf = body[:1] != b"{"
        return Response(200, body, OPENAPI_V2_PROTOBUF if protobuf else negotiation.JSON)
    if path == "/openapi/v3":
        return json_response(module.openapi_v3_index())
    document = module.openapi_v3(path[len("/openapi/v3/") :])
    if document is None:
        raise not_found()
    return json_response(document)
