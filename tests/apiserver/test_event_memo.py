"""The Events a recorder creates one after another: each is stored and refused exactly as if
it were the only one of its kind, though the API server remembers what its pipeline made of
the first (`pinnace.apiserver.event_memo`)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from pinnace.api import catalog
from pinnace.api.events import EVENT_V1
from pinnace.api.status import StatusError
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.server import APIServer
from pinnace.client.local import LocalClient
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

NAMESPACES = catalog.kind("", "namespaces")
EVENTS = catalog.kind("", "events")
_NOW = "the time of the create"


def event(name: str, note: str | None, regarding: str = "web-1", **more: Any) -> dict[str, Any]:
    """An Event as `pinnace.client.events_v1` builds it."""
    made: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "a"},
        "eventTime": "2026-01-01T00:00:00.000001Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-pinnace",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {
            "kind": "Pod",
            "namespace": "a",
            "name": regarding,
            "uid": f"uid-{regarding}",
            "apiVersion": "v1",
            "resourceVersion": "7",
        },
        "type": "Normal",
        **more,
    }
    if note is not None:
        made["note"] = note
    return made


def legacy(name: str, host: str, stamp: str, **more: Any) -> dict[str, Any]:
    """A core/v1 Event as `pinnace.client.events` builds it, for a kubelet on `host`."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "a"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "a",
            "name": name.split(".")[0],
            "uid": f"uid-{name}",
            "apiVersion": "v1",
            "resourceVersion": "9",
            "fieldPath": "spec.containers{app}",
        },
        "reason": "Started",
        "message": "Started container app",
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": "Normal",
        "source": {"component": "kubelet", "host": host},
        "reportingComponent": "kubelet",
        "reportingInstance": host,
        **more,
    }


def _writes(memo: bool) -> tuple[list[Any], bytes]:
    """Creates of Events alike but for their own values, some of which validation refuses,
    with the clock moving on; what each answered, and the Events stored."""
    loop = VirtualEventLoop()
    server = APIServer(MemoryStore(), Clock(loop), Randomness(7))
    if not memo:
        server._event_memo.recall = lambda template: None  # type: ignore[method-assign]
    client = LocalClient(server)
    answers: list[Any] = []

    async def writes() -> None:
        await bootstrap(server)
        await server.create(NAMESPACES, "", {"metadata": {"name": "a"}})
        bodies = []
        for i in range(3):
            bodies += [
                event(f"web-{i}.1{i}", f"Successfully assigned a/web-{i} to node-{i}"),
                event(f"web-{i}.2{i}", "n" * 1024),
                event(f"web-{i}.3{i}", "n" * 1025),  # too long
                event(f"web-{i}.4{i}", "é" * 512),
                event(f"web-{i}.5{i}", "é" * 513),  # too long in UTF-8
                event(f"web-{i}.6{i}", None, regarding=f"web-{i}"),
                event(f"Web-{i}.7{i}", "bad name"),
                event(f"web-{i}.8{i}", "the same name as its pod", regarding=f"web-{i}.8{i}"),
                event(f"web-{i}.1{i}", "taken"),
                event(f"web-{i}.9{i}", "no time", eventTime=""),
                event(f"web-{i}.a{i}", "unknown type", type="Odd"),
                {**event(f"web-{i}.b{i}", "other namespace"), "metadata": {"name": "b.1"}},
            ]
            now = _NOW  # the time of the create
            earlier = "2025-12-31T23:59:59Z"
            bodies += [
                legacy(f"web-{i}.c{i}", f"node-{i}", now),
                legacy(f"web-{i}.d{i}", f"node-{i}", earlier),
                legacy(f"web-{i}.e{i}", f"node-{i}", earlier, lastTimestamp=now),
                legacy(f"web-{i}.f{i}", "n" * 129, earlier),  # any instance without eventTime
                legacy(f"web-{i}.g{i}", "n" * 129, earlier, eventTime=now),  # too long
                legacy(f"web-{i}.h{i}", f"node-{i}", earlier, source={"component": "kubelet"}),
                legacy(f"web-{i}.i{i}", f"web-{i}.i{i}", earlier),  # the host is the name
                legacy(f"web-{i}.j{i}", f"node-{i}", earlier, metadata={"namespace": "a"}),
                legacy(f"web-{i}.k{i}", f"node-{i}", earlier, message=""),
            ]
        for body in bodies:
            stamp = orjson.dumps(server.clock.now_rfc3339())
            body = orjson.loads(orjson.dumps(body).replace(orjson.dumps(_NOW), stamp))
            namespace = body["metadata"].get("namespace", "b")
            kind = EVENTS if body["apiVersion"] == "v1" else EVENT_V1
            try:
                answers.append(await client.create_own(kind, namespace, body))
            except StatusError as e:
                answers.append((e.code, e.reason, str(e), e.details))
            await asyncio.sleep(0.7)

    loop.run_until_complete(writes())
    stored = loop.run_until_complete(server.list(EVENTS, "a"))
    loop.close()
    asyncio.set_event_loop(None)
    return answers, orjson.dumps(stored)


def test_each_event_is_made_as_if_it_were_the_only_one() -> None:
    remembered, stored = _writes(memo=True)
    alone, alone_stored = _writes(memo=False)
    # as JSON text: the same fields in the same order
    assert orjson.dumps(remembered) == orjson.dumps(alone)
    assert stored == alone_stored
    assert sum(isinstance(answer, tuple) for answer in remembered) == 3 * 9


def test_the_memo_serves_a_recorders_events(monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[bool] = []
    recall = APIServer._create_event_from

    async def counted(self: APIServer, *args: Any) -> Any:
        served.append(True)
        return await recall(self, *args)

    monkeypatch.setattr(APIServer, "_create_event_from", counted)
    _writes(memo=True)
    assert len(served) >= 16
