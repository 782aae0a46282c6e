"""/openapi/v3/<group-version> as kube-openapi's handler3 serves it: the document's hash is its
ETag, a request by the current hash may be cached for a year, and one by an old hash is
redirected to the current (kubectl caches the documents by the hashes the index names)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness
from pinnace.store import MemoryStore


def get(path: str, query: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    async def scenario() -> list[dict[str, Any]]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        scope = {"type": "http", "method": "GET", "path": path, "query_string": query}
        scope["headers"] = []
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await APIApp(server, Randomness(1))(scope, receive, send)
        return sent

    sent = asyncio.run(scenario())
    headers: dict[str, str] = {}
    for name, value in sent[0]["headers"]:
        assert name.decode() not in headers, f"{name!r} sent twice"
        headers[name.decode()] = value.decode()
    return sent[0]["status"], headers, b"".join(m.get("body", b"") for m in sent[1:])


def current_url() -> str:
    _, _, index = get("/openapi/v3")
    return json.loads(index)["paths"]["apis/apps/v1"]["serverRelativeURL"]


def test_the_current_hash_is_cached_for_good() -> None:
    path, _, query = current_url().partition("?")
    status, headers, body = get(path, query.encode())
    assert status == 200 and json.loads(body)["openapi"].startswith("3.")
    assert headers["cache-control"] == "public, immutable"
    assert headers["etag"] == '"' + query.removeprefix("hash=") + '"'
    assert headers["vary"] == "Accept"
    assert headers["expires"].endswith(" GMT")


def test_an_old_hash_is_redirected_to_the_current() -> None:
    status, headers, _ = get("/openapi/v3/apis/apps/v1", b"hash=OLD")
    assert status == 301
    assert headers["location"] == current_url()


def test_without_a_hash_nothing_may_be_cached() -> None:
    status, headers, _ = get("/openapi/v3/apis/apps/v1")
    assert status == 200
    assert headers["cache-control"] == "no-cache, private"
    assert headers["etag"].startswith('"')
