"""Large request bodies: parsed without stalling the server, bounded as kube-apiserver bounds
them (3 MiB, 413)."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from typing import Any
from urllib.parse import urlparse

import pytest
from tests.http.conftest import Cluster

from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.http import bodies
from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness
from pinnace.store import MemoryStore

CM_PATH = "/api/v1/namespaces/default/configmaps"


def big_config_map(name: str, size: int) -> bytes:
    """A ConfigMap of `size` bytes of YAML, most of them an unknown field (data may only
    hold 1 MiB)."""
    head = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\npadding: ".encode()
    return head + b"x" * (size - len(head) - 1) + b"\n"


async def call(
    app: APIApp, method: str, path: str, body: bytes = b"", content_type: str = ""
) -> tuple[int, bytes]:
    headers = [(b"content-type", content_type.encode())] if content_type else []
    scope = {"type": "http", "method": method, "path": path, "query_string": b""}
    scope["headers"] = [*headers, (b"content-length", str(len(body)).encode())]
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if chunks:
            return chunks.pop()
        await asyncio.Event().wait()  # no disconnect while the answer is written
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def test_readyz_answers_while_a_large_yaml_body_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsing, finish = threading.Event(), threading.Event()
    parse = bodies.yaml_to_json_strict

    def held_parse(data: bytes) -> Any:
        parsing.set()
        # Released once /readyz has answered; a parse on the event loop holds /readyz back
        # instead, until this wait gives up.
        finish.wait(timeout=10)
        return parse(data)

    monkeypatch.setattr(bodies, "yaml_to_json_strict", held_parse)
    answered: list[str] = []

    async def scenario() -> tuple[int, int]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        app = APIApp(server, Randomness(1))

        async def create() -> int:
            body = big_config_map("big", 2_500_000)
            code, _ = await call(app, "POST", CM_PATH, body, "application/yaml")
            answered.append("create")
            return code

        creating = asyncio.create_task(create())
        await asyncio.to_thread(parsing.wait, 10)
        ready, _ = await call(app, "GET", "/readyz")
        answered.append("readyz")
        finish.set()
        return ready, await creating

    ready, created = asyncio.run(scenario())
    assert (ready, created) == (200, 201)
    assert answered == ["readyz", "create"]


def test_a_body_over_3_mib_is_a_413_that_changes_nothing(cluster: Cluster) -> None:
    url = urlparse(cluster.url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    body = big_config_map("too-big", 3 * 1024 * 1024 + 1)
    connection.request("POST", CM_PATH, body, {"Content-Type": "application/yaml"})
    answer = connection.getresponse()
    assert answer.status == 413
    assert json.loads(answer.read()) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Request entity too large: limit is 3145728",
        "reason": "RequestEntityTooLarge",
        "code": 413,
    }
    connection.close()
    assert cluster.kubectl("get", "configmap", "too-big").returncode == 1


def test_kubectl_applies_a_large_config_map_server_side(cluster: Cluster) -> None:
    # Server-side apply always sends YAML: this one is parsed off the event loop.
    data = "".join(f"  key{i}: value{i}\n" for i in range(40_000))
    manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n{data}"
    assert len(manifest) > bodies.MAX_REQUEST_BODY_BYTES // 4
    cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest)
    keys = cluster.ok("get", "configmap", "applied", "-o", "go-template={{len .data}}")
    assert keys == "40000"
