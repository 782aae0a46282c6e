"""Which API object a URL path names, as kube-apiserver's routes lay them out."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.apiextensions.custom import served_kinds
from pinnace.api.registry import KindRegistry
from pinnace.api.status import StatusError
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.routes import Discovery, ResourceTarget, Route, Routes


def route(path: str) -> Route:
    """What a GET of `path` is routed to, as the server finds it."""
    return Request.from_scope({"method": "GET", "path": path}, _no_body).route()


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request"}


def target(path: str) -> tuple[str, str, str, str, str, bool]:
    found = route(path)
    assert isinstance(found, ResourceTarget)
    return (
        found.kind.group,
        found.kind.plural,
        found.namespace,
        found.name,
        found.subresource,
        found.watch_path,
    )


def test_discovery_paths() -> None:
    assert route("/api") == Discovery(core=True)
    assert route("/apis") == Discovery(core=False)
    assert route("/api/v1") == Discovery(core=True, group="", version="v1")
    assert route("/apis/apps") == Discovery(core=False, group="apps")
    assert route("/apis/apps/v1/") == Discovery(core=False, group="apps", version="v1")


def test_resource_paths() -> None:
    assert target("/api/v1/namespaces/dev/pods") == ("", "pods", "dev", "", "", False)
    assert target("/api/v1/namespaces/dev/pods/web/status") == (
        "",
        "pods",
        "dev",
        "web",
        "status",
        False,
    )
    assert target("/api/v1/pods") == ("", "pods", "", "", "", False)
    assert target("/api/v1/nodes/n1") == ("", "nodes", "", "n1", "", False)
    assert target("/apis/apps/v1/namespaces/dev/deployments/web/scale") == (
        "apps",
        "deployments",
        "dev",
        "web",
        "scale",
        False,
    )
    assert target("/api/v1/watch/namespaces/dev/pods") == ("", "pods", "dev", "", "", True)


def test_namespaces_and_their_subresources() -> None:
    assert target("/api/v1/namespaces/dev") == ("", "namespaces", "", "dev", "", False)
    assert target("/api/v1/namespaces/dev/finalize") == (
        "",
        "namespaces",
        "",
        "dev",
        "finalize",
        False,
    )
    assert target("/api/v1/namespaces/dev/configmaps") == ("", "configmaps", "dev", "", "", False)


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api/v2/pods",
        "/api/v1/widgets",
        "/apis/apps/v2/deployments",
        "/apis/apps/v1/pods",
        "/api/v1/namespaces/dev/nodes",
        "/api/v1/pods/web",
        "/api/v1/namespaces/dev/pods/web/tail",
        "/api/v1/namespaces/dev/pods/web/status/extra",
    ],
)
def test_paths_that_name_nothing_are_404(path: str) -> None:
    with pytest.raises(StatusError) as e:
        route(path)
    assert (e.value.code, e.value.message) == (
        404,
        "the server could not find the requested resource",
    )


def _widgets(*versions: str) -> dict[str, Any]:
    """A CRD of namespaced Widgets served at `versions`, the first stored."""
    return {
        "metadata": {"name": "widgets.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": i == 0,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
                for i, version in enumerate(versions)
            ],
        },
    }


def test_remembered_routes_follow_the_kinds_as_crds_come_change_and_go() -> None:
    kinds = KindRegistry()
    routes = Routes(kinds)
    path = "/apis/stable.example.com/v2/namespaces/dev/widgets/w"

    def serve(*versions: str, deleted: bool = False) -> None:
        definition = _widgets(*versions)
        if deleted:
            definition["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        stored, others = served_kinds(definition)
        kinds.add("widgets.stable.example.com", stored, others, source=definition["spec"])

    assert routes.find(path) is None
    serve("v2")
    found = routes.find(path)
    assert isinstance(found, ResourceTarget) and found.conversion is None
    assert routes.find(path) is found  # remembered
    serve("v1", "v2")  # v2 now served, but stored at v1
    found = routes.find(path)
    assert isinstance(found, ResourceTarget)
    assert found.conversion is not None and found.kind.version == "v1"
    serve("v1", "v2", deleted=True)  # the same source, now terminating
    found = routes.find(path)
    assert isinstance(found, ResourceTarget) and found.kind.terminating
    kinds.remove("widgets.stable.example.com")
    assert routes.find(path) is None
