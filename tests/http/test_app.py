"""The ASGI application in process: what a client gets when something inside goes wrong."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tests.store.test_sqlite import limit_pages

from pinnace.api import catalog
from pinnace.api.options import LogOptions
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.http.responses import go_json, warning_headers
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness
from pinnace.store import MemoryStore, SQLiteStore


async def call(
    app: APIApp,
    method: str,
    path: str,
    query: bytes = b"",
    body: bytes = b"",
    content_type: str = "application/json",
    accept: str = "",
) -> tuple[int, bytes]:
    headers = [(b"content-type", content_type.encode())] if body else []
    headers += [(b"accept", accept.encode())] if accept else []
    scope = {"type": "http", "method": method, "path": path, "query_string": query}
    scope["headers"] = headers
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_an_unexpected_failure_is_a_generic_500_logged_on_the_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> tuple[int, bytes]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret internals")

        server.list = broken  # type: ignore[method-assign]
        return await call(APIApp(server, Randomness(1)), "GET", "/api/v1/namespaces/a/pods")

    with caplog.at_level(logging.ERROR):
        code, body = asyncio.run(scenario())
    assert code == 500
    assert json.loads(body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Internal error occurred: an error on the server",
        "reason": "InternalError",
        "code": 500,
    }
    assert b"secret" not in body and b"Traceback" not in body
    assert "secret internals" in caplog.text


def test_pod_logs_are_plain_text_from_the_node_agent() -> None:
    pods = catalog.kind("", "pods")
    asked: list[LogOptions] = []

    async def source(pod: dict[str, Any], container: str, options: LogOptions) -> Any:
        asked.append(options)
        yield f"{pod['metadata']['name']}/{container}: hello\n"

    async def scenario() -> tuple[int, bytes]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        server.log_source = source
        pod = {
            "metadata": {"name": "talker"},
            "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "busybox"}]},
        }
        await server.create(pods, "default", pod)
        path = "/api/v1/namespaces/default/pods/talker/log"
        return await call(APIApp(server, Randomness(1)), "GET", path, b"tailLines=5&timestamps=1")

    code, body = asyncio.run(scenario())
    assert (code, body) == (200, b"talker/main: hello\n")
    assert asked == [LogOptions(container="", previous=False, tail_lines=5, timestamps=True)]


def test_log_options_kube_apiserver_refuses_are_a_422_naming_the_field() -> None:
    pods = catalog.kind("", "pods")

    async def scenario(query: bytes) -> tuple[int, Any]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        await server.create(pods, "default", pod)
        path = "/api/v1/namespaces/default/pods/p/log"
        code, body = await call(APIApp(server, Randomness(1)), "GET", path, query)
        return code, json.loads(body)

    code, answer = asyncio.run(scenario(b"tailLines=-1&limitBytes=0"))
    assert code == 422
    assert answer["message"] == (
        'PodLogOptions "p" is invalid: [tailLines: Invalid value: -1: must be greater than or '
        "equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
    )
    code, answer = asyncio.run(scenario(b"sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z"))
    assert (code, answer["message"]) == (
        422,
        'PodLogOptions "p" is invalid: []: Forbidden: at most one of `sinceTime` or '
        "`sinceSeconds` may be specified",
    )


def test_json_bodies_are_the_bytes_kube_apiserver_writes() -> None:
    async def scenario(*paths: str) -> list[tuple[int, bytes]]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        app = APIApp(server, Randomness(1))
        return [await call(app, "GET", path) for path in paths]

    missing, odd_name, namespace, version = asyncio.run(
        scenario(
            "/api/v1/namespaces/default/pods/nope",
            "/api/v1/namespaces/default/pods/a<b&c>",
            "/api/v1/namespaces/default",
            "/version",
        )
    )
    # metav1.Status' field order (details before code), as json.Encoder ends it: a newline.
    assert missing == (
        404,
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"pods \\"nope\\" not found","reason":"NotFound",'
        b'"details":{"name":"nope","kind":"pods"},"code":404}\n',
    )
    # Go escapes <, > and & in strings.
    assert b'"details":{"name":"a\\u003cb\\u0026c\\u003e","kind":"pods"}' in odd_name[1]
    assert namespace[1].endswith(b"}\n") and json.loads(namespace[1])["kind"] == "Namespace"
    # /version is WriteRawJSON's: indented, no final newline.
    assert version[1].startswith(b'{\n  "major": "1",\n') and version[1].endswith(b"\n}")


def test_gets_answer_each_version_served_with_the_object_as_last_written() -> None:
    """A GET's JSON is kept for the object until it is written again: each answer is the
    object as stored now, at the version asked for, in the representation asked for."""
    hpa_path = "/namespaces/default/horizontalpodautoscalers/web"
    v1, v2 = "/apis/autoscaling/v1" + hpa_path, "/apis/autoscaling/v2" + hpa_path

    def hpa(replicas: int) -> dict[str, Any]:
        return {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": replicas,
            },
        }

    async def answers(app: APIApp) -> list[tuple[int, Any]]:
        got = [await call(app, "GET", path) for path in (v1, v2, v1, v2)]
        return [(code, json.loads(body)) for code, body in got]

    async def scenario() -> None:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        app = APIApp(server, Randomness(1))
        hpas = catalog.kind("autoscaling", "horizontalpodautoscalers")
        await server.create(hpas, "default", hpa(3))
        first = await answers(app)
        assert [(code, body["apiVersion"]) for code, body in first] == [
            (200, "autoscaling/v1"),
            (200, "autoscaling/v2"),
        ] * 2
        assert first[0][1]["spec"]["maxReplicas"] == first[1][1]["spec"]["maxReplicas"] == 3
        stored = await server.get(hpas, "default", "web")
        await server.update(hpas, "default", "web", {**stored, **hpa(5)})
        assert [body["spec"]["maxReplicas"] for _, body in await answers(app)] == [5] * 4
        yaml_code, yaml_body = await call(app, "GET", v2, accept="application/yaml")
        assert yaml_code == 200 and yaml_body.startswith(b"apiVersion: autoscaling/v2\n")
        await server.delete(hpas, "default", "web")
        assert [code for code, _ in await answers(app)] == [404] * 4
        await server.create(hpas, "default", hpa(7))
        again = await answers(app)
        assert [body["spec"]["maxReplicas"] for _, body in again] == [7] * 4
        assert again[1][1]["metadata"]["uid"] != first[1][1]["metadata"]["uid"]

    asyncio.run(scenario())


def test_go_json_escapes_as_go_s_encoder_and_nothing_else() -> None:
    assert go_json({"a": "x<y>&z"}) == b'{"a":"x\\u003cy\\u003e\\u0026z"}'
    # U+2028 and U+2029 are escaped; other characters whose UTF-8 starts as theirs are not.
    assert go_json(["\u2028", "\u20ac", "\u2029\u2026"]) == (
        b'["\\u2028","\xe2\x82\xac","\\u2029\xe2\x80\xa6"]'
    )
    assert go_json({"a": "\u20ac<"}) == b'{"a":"\xe2\x82\xac\\u003c"}'


def test_warnings_are_headers_as_kube_apiserver_writes_them() -> None:
    # apimachinery's NewWarningHeader: quotes and backslashes escaped, UTF-8 as it is, a text
    # with a control character (which no header may hold) left out, duplicates once.
    warnings = ['unknown field "a\\x7f"', "café", "bad\x7f", "bad\n", "café", ""]
    assert warning_headers(warnings) == [
        ("Warning", '299 - "unknown field \\"a\\\\x7f\\""'),
        ("Warning", '299 - "café"'),
    ]


def test_a_full_disk_is_relayed_in_sqlites_words_and_fails_readiness_until_space_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # As kube-apiserver relays "etcdserver: mvcc: database space exceeded": a 500 whose
    # message is the storage's, one log line, and the etcd readiness check failing.
    configmap = json.dumps({"metadata": {"name": "big"}, "data": {"a": "x" * 100_000}}).encode()
    configmaps = "/api/v1/namespaces/default/configmaps"

    async def scenario() -> list[tuple[int, bytes]]:
        store = SQLiteStore(tmp_path / "db")
        server = APIServer(store, Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        app = APIApp(server, Randomness(1))
        limit_pages(store, None)
        answers = [await call(app, "POST", configmaps, body=configmap)]
        answers += [await call(app, "GET", path) for path in ("/readyz", "/readyz/etcd")]
        answers.append(await call(app, "GET", "/livez"))
        limit_pages(store, 1_000_000)
        answers.append(await call(app, "GET", "/readyz"))
        answers.append(await call(app, "POST", configmaps, body=configmap))
        await store.close()
        return answers

    with caplog.at_level(logging.WARNING):
        refused, ready, etcd, live, ready_again, created = asyncio.run(scenario())
    assert refused[0] == 500
    assert json.loads(refused[1]) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "sqlite: database or disk is full",
        "code": 500,
    }
    assert ready == (
        500,
        b"[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]etcd-readiness ok\n"
        b"[+]informer-sync ok\n[+]poststarthook/bootstrap-controller ok\n[+]shutdown ok\n"
        b"readyz check failed\n",
    )
    assert etcd == (500, b"internal server error: sqlite: database or disk is full\n")
    assert live == (200, b"ok")
    assert ready_again == (200, b"ok")
    assert created[0] == 201
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "1 writes not committed: sqlite: database or disk is full"
    ]
    assert not any(r.exc_info for r in caplog.records)
