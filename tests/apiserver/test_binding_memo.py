"""The Bindings an in-process scheduler sends one after another: each binds or is refused
exactly as if it were the only one, though the API server remembers that its template passed
admission and validation (`pinnace.apiserver.binding.AdmittedBindings`)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from pinnace.api import catalog
from pinnace.api.options import WriteOptions
from pinnace.api.status import StatusError
from pinnace.apiserver import binding
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

NAMESPACES = catalog.kind("", "namespaces")
PODS = catalog.kind("", "pods")
OWN = WriteOptions(decoded=True)


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _binds(memo: bool) -> tuple[list[Any], bytes]:
    """Bindings alike but for their pod and node, some of which the URL, validation or the
    stored pod refuse; what each answered, and the pods stored."""
    loop = VirtualEventLoop()
    server = APIServer(MemoryStore(), Clock(loop), Randomness(7))
    if not memo:
        server.admitted_bindings.passed = lambda template: False  # type: ignore[method-assign]
    answers: list[Any] = []

    async def binds() -> None:
        await bootstrap(server)
        await server.create(NAMESPACES, "", {"metadata": {"name": "a"}})
        cases: list[tuple[str, str, str | None, str]] = []
        for i in range(3):
            uid = (await server.create(PODS, "a", pod(f"p{i}"))).obj["metadata"]["uid"]
            await server.create(PODS, "a", pod(f"q{i}"))
            cases += [
                (f"p{i}", f"p{i}", uid, f"node-{i}"),
                (f"p{i}", f"p{i}", uid, "node-x"),  # bound already
                (f"q{i}", f"q{i}", "not-its-uid", "node-1"),
                (f"q{i}", f"other{i}", None, "node-1"),  # the URL names another pod
                (f"q{i}", f"q{i}", None, ""),  # no node
                (f"r{i}", f"r{i}", None, "node-1"),  # no such pod
                ("", f"q{i}", None, "node-2"),  # POST .../bindings
            ]
        for url_name, name, uid, node in cases:
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"namespace": "a", "name": name, "uid": uid},
                "target": {"kind": "Node", "name": node},
            }
            try:
                answers.append(await binding.bind(server, "a", url_name, body, OWN))
            except StatusError as e:
                answers.append((e.code, e.reason, str(e), e.details))
            await asyncio.sleep(0.7)

    loop.run_until_complete(binds())
    stored = loop.run_until_complete(server.list(PODS, "a"))
    loop.close()
    asyncio.set_event_loop(None)
    return answers, orjson.dumps(stored)


def test_each_binding_is_taken_as_if_it_were_the_only_one(monkeypatch: pytest.MonkeyPatch) -> None:
    remembered, stored = _binds(memo=True)
    alone, alone_stored = _binds(memo=False)
    assert orjson.dumps(remembered) == orjson.dumps(alone)
    assert stored == alone_stored
    assert sum(isinstance(answer, tuple) for answer in remembered) == 3 * 5
