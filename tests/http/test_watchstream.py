"""Watch events on the wire: one JSON object a line, tables for kubectl, errors in-stream."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

import orjson
from tests.apiserver.conftest import Harness

from pinnace.api import catalog, status
from pinnace.api.options import ListOptions
from pinnace.api.versions import ServedVersion, served_version
from pinnace.apiserver.http.negotiation import negotiate_resource
from pinnace.apiserver.http.responses import Encoder
from pinnace.apiserver.http.watchstream import watch_stream
from pinnace.apiserver.watching import WatchEvents

CONFIGMAPS = catalog.kind("", "configmaps")
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
NOW = 1735689600.0
"""2025-01-01T00:00:00Z, when the test ConfigMaps were created."""


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
    encoder = Encoder(CONFIGMAPS, negotiate_resource(accept), "Metadata", now=lambda: NOW)

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


def test_each_table_event_is_aged_when_it_is_sent() -> None:
    # kube-apiserver converts every event to a Table as it sends it: a row sent 14 s after the
    # watch began is 14 s older than the first one.
    clock = [NOW + 1]
    encoder = Encoder(CONFIGMAPS, negotiate_resource(TABLE), "Metadata", now=lambda: clock[0])

    async def source() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "ADDED", "object": configmap("a")}
        clock[0] += 13
        yield {"type": "MODIFIED", "object": configmap("a")}

    async def collect() -> list[bytes]:
        return [chunk async for chunk in watch_stream(source(), encoder)]

    got = [json.loads(chunk) for chunk in asyncio.run(collect())]
    assert [e["object"]["rows"][0]["cells"][2] for e in got] == ["1s", "14s"]


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


def chunks_of_batches(accept: str, *batches: list[dict[str, Any]]) -> list[bytes]:
    encoder = Encoder(CONFIGMAPS, negotiate_resource(accept), "Metadata", now=lambda: NOW)

    async def source() -> AsyncIterator[list[dict[str, Any]]]:
        for batch in batches:
            yield batch

    async def collect() -> list[bytes]:
        return [chunk async for chunk in watch_stream(WatchEvents(source()), encoder)]

    return asyncio.run(collect())


def test_events_at_hand_together_go_out_as_one_chunk_of_lines() -> None:
    a, b = configmap("a"), configmap("b")
    got = chunks_of_batches(
        "application/json",
        [{"type": "ADDED", "object": a}, {"type": "MODIFIED", "object": b}],
        [{"type": "DELETED", "object": a}],
    )
    assert [[json.loads(line) for line in chunk.splitlines()] for chunk in got] == [
        [{"type": "ADDED", "object": a}, {"type": "MODIFIED", "object": b}],
        [{"type": "DELETED", "object": a}],
    ]


def test_every_watch_of_a_change_gets_the_same_line_in_its_own_representation() -> None:
    shared = configmap("a")
    events = [{"type": "ADDED", "object": shared}]
    json_lines = [chunks_of_batches("application/json", events) for _ in range(2)]
    assert json_lines[0] == json_lines[1] == [orjson.dumps(events[0]) + b"\n"]
    table = json.loads(chunks_of_batches(TABLE, events)[0])
    assert table["object"]["kind"] == "Table"
    assert table["object"]["rows"][0]["cells"] == ["a", 1, "0s"]


def test_a_change_goes_out_once_made_for_all_watches_of_a_version_and_apart_for_another() -> None:
    # A change reaches every watch of its kind: what each version's watches send is made
    # once for them all (100 watches of pods paid 100 conversions a change), each version's
    # its own.
    hpas = catalog.kind("autoscaling", "horizontalpodautoscalers")
    v1 = served_version("autoscaling", "v1", "horizontalpodautoscalers")
    assert v1 is not None
    converted: list[dict[str, Any]] = []

    def to_v1(obj: dict[str, Any]) -> dict[str, Any]:
        converted.append(obj)
        return {**obj, "apiVersion": "autoscaling/v1"}

    counted = dataclasses.replace(v1, from_stored=to_v1)
    stored = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a", "resourceVersion": "5"},
    }
    events = [{"type": "ADDED", "object": stored}]

    async def watch(conversion: ServedVersion | None) -> list[bytes]:
        json_media = negotiate_resource("application/json")
        encoder = Encoder(hpas, json_media, "Metadata", now=lambda: NOW, conversion=conversion)

        async def source() -> AsyncIterator[list[dict[str, Any]]]:
            yield events

        return [chunk async for chunk in watch_stream(WatchEvents(source()), encoder)]

    async def watches() -> list[list[bytes]]:
        return list(await asyncio.gather(*(watch(v) for v in (counted, counted, None, counted))))

    at_v1, again, at_v2, more = asyncio.run(watches())
    assert at_v1 == again == more
    assert json.loads(at_v1[0])["object"]["apiVersion"] == "autoscaling/v1"
    assert json.loads(at_v2[0])["object"]["apiVersion"] == "autoscaling/v2"
    assert converted == [stored]


def test_a_watch_ending_in_a_failure_keeps_its_events_and_ends_with_an_error() -> None:
    json_media = negotiate_resource("application/json")
    encoder = Encoder(CONFIGMAPS, json_media, "Metadata", now=lambda: NOW)

    async def source() -> AsyncIterator[list[dict[str, Any]]]:
        yield [{"type": "ADDED", "object": configmap("a")}]
        raise status.resource_expired("too old resource version: 1 (5)")

    async def collect() -> list[bytes]:
        return [chunk async for chunk in watch_stream(WatchEvents(source()), encoder)]

    got = [json.loads(line) for chunk in asyncio.run(collect()) for line in chunk.splitlines()]
    assert [(e["type"], e["object"]["kind"]) for e in got] == [
        ("ADDED", "ConfigMap"),
        ("ERROR", "Status"),
    ]


def test_a_quiet_watch_gets_a_bookmark_every_minute_and_before_its_timeout() -> None:
    # The cacher's bookmarkFrequency, run on the virtual clock: the stream reads the loop's
    # time, which jumps to the next timer instead of waiting for it.
    api = Harness()
    json_media = negotiate_resource("application/json")
    encoder = Encoder(CONFIGMAPS, json_media, "Metadata", now=lambda: NOW)
    start = api.server.store.revision
    options = ListOptions(resource_version=str(start), allow_watch_bookmarks=True)
    seen: list[tuple[float, str, str]] = []

    async def watch() -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        events = api.server.watch(CONFIGMAPS, "default", options)
        async for chunk in watch_stream(events, encoder, bookmarks_for=150.0):
            for line in chunk.splitlines():
                event = json.loads(line)
                rv = event["object"]["metadata"]["resourceVersion"]
                seen.append((loop.time() - began, event["type"], rv))

    async def write_later() -> str:
        await asyncio.sleep(30)
        body = {"metadata": {"name": "late"}, "data": {"a": "1"}}
        created = await api.server.create(CONFIGMAPS, "default", body)
        return str(created.obj["metadata"]["resourceVersion"])

    async def run() -> str:
        watching = asyncio.ensure_future(watch())
        written = await write_later()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watching, 149.0)  # the HTTP response's timeout ends it
        return written

    written = api.run(run())
    api.loop.close()
    assert seen == [
        (30.0, "ADDED", written),
        (60.0, "BOOKMARK", written),
        (120.0, "BOOKMARK", written),
        (148.0, "BOOKMARK", written),
    ]
