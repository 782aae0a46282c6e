"""Watch events on the wire: one JSON object a line, tables for kubectl, errors in-stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from pinnace.api import catalog, status
from pinnace.apiserver.http.negotiation import negotiate_resource
from pinnace.apiserver.http.responses import Encoder
from pinnace.apiserver.http.watchstream import watch_stream

CONFIGMAPS = catalog.by_resource("", "configmaps")
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "resourceVersion": "5",
            "creationTimestamp": "2025-01-01T00:00:00Z",
        },
        "data": {"a": "1"},
    }


def lines(accept: str, *events: dict[str, Any], fail: bool = False) -> list[dict[str, Any]]:
    assert CONFIGMAPS is not None
    encoder = Encoder(CONFIGMAPS, negotiate_resource(accept), "Metadata", now=1735689600.0)

    async def source() -> AsyncIterator[dict[str, Any]]:
        for event in events:
            yield event
        if fail:
            raise status.resource_expired("too old resource version: 1 (5)")

    async def collect() -> list[bytes]:
        return [chunk async for chunk in watch_stream(source(), encoder)]

    chunks = asyncio.run(collect())
    assert all(chunk.endswith(b"\n") and chunk.count(b"\n") == 1 for chunk in chunks)
    return [json.loads(chunk) for chunk in chunks]


def test_json_events_carry_the_objects() -> None:
    got = lines("application/json", {"type": "ADDED", "object": configmap("a")})
    assert got == [{"type": "ADDED", "object": configmap("a")}]


def test_table_events_carry_one_row_and_headers_once() -> None:
    got = lines(
        TABLE,
        {"type": "ADDED", "object": configmap("a")},
        {"type": "MODIFIED", "object": configmap("b")},
    )
    assert [e["object"]["kind"] for e in got] == ["Table", "Table"]
    assert [c["name"] for c in got[0]["object"]["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert got[1]["object"]["columnDefinitions"] is None
    assert got[1]["object"]["rows"][0]["cells"] == ["b", 1, "0s"]


def test_a_failure_inside_the_stream_is_an_error_event() -> None:
    got = lines("application/json", {"type": "ADDED", "object": configmap("a")}, fail=True)
    assert got[1] == {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "too old resource version: 1 (5)",
            "reason": "Expired",
            "code": 410,
        },
    }
