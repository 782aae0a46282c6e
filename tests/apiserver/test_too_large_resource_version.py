"""A GET or LIST at a resourceVersion the server has not reached, on the virtual clock: as
kube-apiserver's watch cache (cacher's waitUntilFreshAndBlock), the read waits up to 3 s for
the store to reach it, answers once a write does, and otherwise answers
storage.NewTooLargeResourceVersionError: 504 Timeout, "Timeout: Too large resource version: X,
current: Y", a ResourceVersionTooLarge cause and, over HTTP, Retry-After: 1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.options import ListOptions
from pinnace.api.status import StatusError
from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Randomness

CONFIGMAPS = catalog.kind("", "configmaps")


def created(api: Harness, name: str) -> int:
    body = {"metadata": {"name": name}}
    made = api.call(api.server.create, CONFIGMAPS, "default", body)
    return int(made.obj["metadata"]["resourceVersion"])


def waited(api: Harness, read: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """(virtual seconds the read took, its answer or StatusError)."""

    async def timed() -> tuple[float, Any]:
        start = api.server.clock.now()
        try:
            answer: Any = await read()
        except StatusError as e:
            answer = e
        return api.server.clock.now() - start, answer

    return api.run(timed())


def too_large(requested: int, current: int) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"Timeout: Too large resource version: {requested}, current: {current}",
        "reason": "Timeout",
        "details": {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
        "code": 504,
    }


@pytest.mark.parametrize("verb", ["get", "list"])
def test_a_read_ahead_of_the_store_waits_3s_then_answers_504(api: Harness, verb: str) -> None:
    current = created(api, "a")
    future = str(current + 5)
    if verb == "get":
        seconds, answer = waited(
            api, lambda: api.server.get(CONFIGMAPS, "default", "a", resource_version=future)
        )
    else:
        options = ListOptions(resource_version=future)
        seconds, answer = waited(api, lambda: api.server.list(CONFIGMAPS, "default", options))
    assert seconds == 3.0
    assert isinstance(answer, StatusError)
    assert answer.status() == too_large(current + 5, current)


def test_a_write_reaching_the_version_within_3s_answers_the_read(api: Harness) -> None:
    current = created(api, "a")

    async def write_later() -> None:
        await asyncio.sleep(2)
        await api.server.create(CONFIGMAPS, "default", {"metadata": {"name": "b"}})

    async def read() -> Any:
        writer = asyncio.get_running_loop().create_task(write_later())
        options = ListOptions(resource_version=str(current + 1))
        listed = await api.server.list(CONFIGMAPS, "default", options)
        await writer
        return listed

    seconds, listed = waited(api, read)
    assert seconds == 2.0
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a", "b"]
    assert listed["metadata"]["resourceVersion"] == str(current + 1)


def test_over_http_the_504_says_when_to_retry(api: Harness) -> None:
    current = created(api, "a")
    app = APIApp(api.server, Randomness(1))
    path = "/api/v1/namespaces/default/configmaps"
    query = f"resourceVersion={current + 7}".encode()

    async def get() -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "query_string": query}
        await app({**scope, "headers": []}, receive, send)
        body = b"".join(m.get("body", b"") for m in sent[1:])
        return sent[0]["status"], body, sent[0]["headers"]

    code, body, headers = api.run(get())
    assert code == 504
    assert (b"retry-after", b"1") in [(k.lower(), v) for k, v in headers]
    assert json.loads(body) == too_large(current + 7, current)
