"""kube-apiserver's /metrics: request counts and durations with kube's labels, objects in
storage, requests in flight and open watches, one registry per cluster."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Clock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.store import MemoryStore

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def call(
    app: APIApp, method: str, path: str, query: bytes = b"", body: Any = None
) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else b""
    headers = [(b"content-type", b"application/json")] if body is not None else []
    scope = {"type": "http", "method": method, "path": path, "query_string": query,
             "headers": headers}  # fmt: skip
    sent: list[dict[str, Any]] = []
    received = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received:  # the client stays connected
            await asyncio.Event().wait()
        received = True
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def samples(text: bytes) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            found[sample.name, frozenset(sample.labels.items())] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found[name, frozenset(labels.items())]


async def plane_and_app() -> tuple[ControlPlane, APIApp]:
    options = ClusterOptions(scheduler=False, controllers=False)
    plane = ControlPlane(MemoryStore(), Clock(asyncio.get_running_loop()), options)
    await plane.start()
    return plane, plane.http_app()


REQUEST = {"group": "", "version": "v1", "resource": "pods", "subresource": "", "dry_run": "",
           "component": "apiserver"}  # fmt: skip


def test_requests_are_counted_by_verb_resource_scope_and_code() -> None:
    async def scenario() -> tuple[Samples, Samples]:
        plane, app = await plane_and_app()
        other_plane, other_app = await plane_and_app()
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        assert (await call(app, "POST", "/api/v1/namespaces/default/pods", body=pod))[0] == 201
        for _ in range(2):
            await call(app, "GET", "/api/v1/namespaces/default/pods/p")
        await call(app, "GET", "/api/v1/namespaces/default/pods/missing")
        await call(app, "GET", "/api/v1/namespaces/default/pods/p/log")
        await call(app, "GET", "/api/v1/pods")
        code, text = await call(app, "GET", "/metrics")
        assert code == 200
        _, other = await call(other_app, "GET", "/metrics")
        await plane.stop()
        await other_plane.stop()
        return samples(text), samples(other)

    found, other = asyncio.run(scenario())
    total = "apiserver_request_total"
    namespaced = {**REQUEST, "scope": "namespace"}
    assert value(found, total, verb="POST", code="201", **namespaced) == 1
    assert value(found, total, verb="GET", code="200", **namespaced) == 2
    assert value(found, total, verb="GET", code="404", **namespaced) == 1
    assert value(found, total, verb="LIST", code="200", **{**REQUEST, "scope": "cluster"}) == 1
    log = {**namespaced, "subresource": "log"}
    assert value(found, total, verb="CONNECT", code="200", **log) == 1  # as kube's CleanVerb
    count = "apiserver_request_duration_seconds_count"
    assert value(found, count, verb="GET", **namespaced) == 3
    bucket = "apiserver_request_duration_seconds_bucket"
    assert value(found, bucket, verb="GET", le="60", **namespaced) == 3
    assert value(found, "apiserver_storage_objects", resource="pods") == 1
    assert value(found, "apiserver_storage_objects", resource="deployments.apps") == 0
    # Only what has storage is counted: a kind only ever created (a Binding, the reviews) is
    # never stored, and kube-apiserver has no store, so no series, for it.
    stored = {
        dict(labels)["resource"] for name, labels in found if name == "apiserver_storage_objects"
    }
    assert not stored & {"bindings", "tokenreviews.authentication.k8s.io",
                         "selfsubjectaccessreviews.authorization.k8s.io"}  # fmt: skip
    # The scrape itself is the one read in flight.
    assert value(found, "apiserver_current_inflight_requests", request_kind="readOnly") == 1
    assert value(found, "apiserver_current_inflight_requests", request_kind="mutating") == 0
    # The other cluster in this process counted none of these.
    assert not any(name == total for name, _ in other)
    assert value(other, "apiserver_storage_objects", resource="pods") == 0


def test_an_open_watch_is_a_long_running_request_until_it_ends() -> None:
    async def scenario() -> tuple[Samples, Samples]:
        plane, app = await plane_and_app()
        watching = asyncio.ensure_future(
            call(app, "GET", "/api/v1/namespaces/default/pods", b"watch=true&timeoutSeconds=1")
        )
        while not app.requests.longrunning:  # until the watch is open
            await asyncio.sleep(0.01)
        _, during = await call(app, "GET", "/metrics")
        await watching
        _, after = await call(app, "GET", "/metrics")
        await plane.stop()
        return samples(during), samples(after)

    during, after = asyncio.run(scenario())
    labels = {k: v for k, v in REQUEST.items() if k != "dry_run"}
    watch = {"verb": "WATCH", "scope": "namespace", **labels}
    assert value(during, "apiserver_longrunning_requests", **watch) == 1
    assert value(after, "apiserver_longrunning_requests", **watch) == 0
    total = {"verb": "WATCH", "scope": "namespace", "code": "200", **REQUEST}
    assert value(after, "apiserver_request_total", **total) == 1
