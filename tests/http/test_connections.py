"""How `pinnace up` takes connections: kube-apiserver's HTTP server limits (headers of at
most 1 MiB, 32 s to send them), a cap on open connections below the open-file limit, and
quiet retries when accepting fails."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from tests.http.conftest import Cluster, launch, stop
from tests.support import MemoryTransport, eventually
from uvicorn.server import ServerState

from pinnace.apiserver.http import connections
from pinnace.clock import VirtualEventLoop


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A `pinnace up` started with a soft limit of 256 open files and a hard limit of 512."""
    running = launch(tmp_path_factory.mktemp("limited"), limits={"RLIMIT_NOFILE": (256, 512)})
    yield running
    stop(running)


def address(cluster: Cluster) -> tuple[str, int]:
    host, port = cluster.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(cluster: Cluster, request: bytes) -> bytes:
    """Send `request` on a new connection; everything the server answers until it closes."""
    with socket.create_connection(address(cluster), timeout=20) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: conn.recv(65536), b""))


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()


def status_body(answer: bytes) -> dict[str, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower()
    return json.loads(body)


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(limited: Cluster) -> None:
    limits = Path(f"/proc/{limited.process.pid}/limits").read_text()
    line = next(row for row in limits.splitlines() if row.startswith("Max open files"))
    assert line.split()[3:5] == ["512", "512"]


def test_headers_past_1_mib_are_refused_with_go_s_431(limited: Cluster) -> None:
    big = b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1024 * 1024 + 8192) + b"\r\n\r\n"
    answer = exchange(limited, big)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert answer.endswith(b"\r\n\r\n431 Request Header Fields Too Large")


def test_a_long_url_is_served_and_one_past_1_mib_is_a_431(limited: Cluster) -> None:
    name = "a" * 100_000
    answer = exchange(limited, get(f"/api/v1/namespaces/default/configmaps/{name}?x=1"))
    assert answer.startswith(b"HTTP/1.1 404 ")
    status = status_body(answer)
    assert (status["reason"], status["message"]) == (
        "NotFound",
        f'configmaps "{name}" not found',
    )
    answer = exchange(limited, get("/api/v1/namespaces/default/configmaps/" + "a" * 1_100_000))
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_connections_past_the_cap_get_a_503_until_some_close(limited: Cluster) -> None:
    cap = connections.connection_cap(512)
    idle = [socket.create_connection(address(limited), timeout=20) for _ in range(cap)]
    try:
        # Connections are taken in order: those past the cap are answered at once.
        for _ in range(3):
            with socket.create_connection(address(limited), timeout=20) as past:
                answer = b"".join(iter(lambda: past.recv(65536), b""))
                assert answer.startswith(b"HTTP/1.1 503 ")
        answer = exchange(limited, get("/readyz"))
        assert answer.startswith(b"HTTP/1.1 503 ")
        status = status_body(answer)
        assert (status["reason"], status["code"]) == ("ServiceUnavailable", 503)
        assert b"\r\nretry-after: 1\r\n" in answer.lower()
    finally:
        for conn in idle:
            conn.close()
    eventually(lambda: exchange(limited, get("/readyz")).startswith(b"HTTP/1.1 200 "))
    assert "Traceback" not in (limited.workdir / "server.log").read_text()


async def serve_impatiently(app: Any) -> tuple[uvicorn.Server, asyncio.Task[None], Any]:
    """`app` served on 127.0.0.1 by a server that waits 50 ms for a request's headers: the
    server, its task and its address, once it accepts."""
    protocol = connections.protocol(max_connections=10, read_header_timeout=0.05)
    config = uvicorn.Config(app, lifespan="off", http=protocol, log_level="warning")
    server = uvicorn.Server(config)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return server, serving, sock.getsockname()


def test_a_client_that_does_not_finish_its_headers_is_disconnected() -> None:
    async def scenario() -> bytes:
        async def app(scope: object, receive: object, send: object) -> None:
            raise AssertionError("no request should reach the app")

        server, serving, address = await serve_impatiently(app)
        reader, writer = await asyncio.open_connection(*address)
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
        answer = await asyncio.wait_for(reader.read(), 20)  # b"": the server hung up
        writer.close()
        server.should_exit = True
        await serving
        return answer

    assert asyncio.run(scenario()) == b""


def test_a_kept_alive_client_that_does_not_finish_its_next_headers_is_disconnected() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        async def app(scope: dict[str, Any], receive: object, send: Any) -> None:
            headers = [(b"content-length", b"2")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"ok"})

        server, serving, address = await serve_impatiently(app)
        reader, writer = await asyncio.open_connection(*address)
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = await asyncio.wait_for(reader.readuntil(b"ok"), 20)
        writer.write(b"GET /readyz HTTP/1.1\r\nHo")
        rest = await asyncio.wait_for(reader.read(), 20)  # b"": the server hung up
        writer.close()
        server.should_exit = True
        await serving
        return first, rest

    first, rest = asyncio.run(scenario())
    assert first.startswith(b"HTTP/1.1 200 OK\r\n")
    assert rest == b""


def test_accept_failures_are_one_line_each_retry(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        connections.quiet_accept_failures(loop)
        for _ in range(2048):  # asyncio reports each of a backlog's failed accepts
            loop.call_exception_handler(
                {
                    "message": "socket.accept() out of system resource",
                    "exception": OSError(24, "Too many open files"),
                }
            )

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records] == [
        "cannot accept connections ([Errno 24] Too many open files): retrying in 1s"
    ]
    assert caplog.records[0].exc_info is None


def _writes_of(request: bytes, body_sent: asyncio.Event | None = None) -> list[bytes]:
    """The writes answering `request` on one connection; the app answers `/stream` with a
    chunked body sent only once `body_sent` is set, everything else with a 2-byte JSON body
    (on `/whole` through the RESPOND extension, elsewhere with two sends)."""

    async def app(scope: dict[str, Any], receive: object, send: Any) -> None:
        if scope["path"] == "/whole":
            head = b"content-type: application/json\r\ncontent-length: 2\r\n"
            await scope["extensions"][connections.RESPOND](201, head, b"{}")
            return
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            assert body_sent is not None
            await body_sent.wait()
            await send({"type": "http.response.body", "body": b"{}\n", "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    async def scenario() -> list[bytes]:
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
        config.load()
        protocol = connections.protocol(max_connections=10)(config, ServerState(), {})
        transport = MemoryTransport()
        protocol.connection_made(transport)
        protocol.data_received(request)
        while protocol.tasks:
            await asyncio.sleep(0)
            if body_sent is not None and not body_sent.is_set() and transport.writes:
                writes_before_body = list(transport.writes)
                body_sent.set()
                assert len(writes_before_body) == 1  # the head, at once
        protocol.connection_lost(None)
        return transport.writes

    return asyncio.run(scenario())


def test_an_answer_of_known_length_is_one_write_of_head_and_body() -> None:
    writes = _writes_of(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 201 Created\r\n")
    assert writes[0].endswith(b"content-length: 2\r\n\r\n{}")


def test_a_head_request_and_a_stream_get_their_head_at_once() -> None:
    head = _writes_of(b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n")
    assert len(head) == 1
    assert head[0].startswith(b"HTTP/1.1 201 Created\r\n") and head[0].endswith(b"\r\n\r\n")
    streamed = _writes_of(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", asyncio.Event())
    assert streamed[0].startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"".join(streamed[1:]) == b"3\r\n{}\n\r\n0\r\n\r\n"


def test_an_answer_sent_whole_is_written_as_the_two_sends_write_it() -> None:
    for request in (
        b"GET {} HTTP/1.1\r\nHost: x\r\n\r\n",
        b"HEAD {} HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET {} HTTP/1.0\r\nHost: x\r\n\r\n",
    ):
        sent = _writes_of(request.replace(b"{}", b"/x"))
        whole = _writes_of(request.replace(b"{}", b"/whole"))
        assert whole == sent
        assert len(whole) == 1
    assert b"\r\nconnection: close\r\n" in whole[0]


def test_an_idle_connection_is_closed_the_keep_alive_timeout_after_its_last_answer() -> None:
    async def app(scope: dict[str, object], receive: object, send: Any) -> None:
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    async def scenario() -> list[tuple[float, bool]]:
        loop = asyncio.get_running_loop()
        config = uvicorn.Config(app, lifespan="off", access_log=False, timeout_keep_alive=90)
        config.load()
        protocol = connections.protocol(max_connections=10)(config, ServerState(), {})
        transport = MemoryTransport()
        protocol.connection_made(transport)
        start, seen = loop.time(), []

        async def request_at(elapsed: float) -> None:
            await asyncio.sleep(start + elapsed - loop.time())
            protocol.data_received(b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
            while protocol.tasks:
                await asyncio.sleep(0)

        async def closed_at(elapsed: float) -> None:
            await asyncio.sleep(start + elapsed - loop.time())
            seen.append((elapsed, transport.closed))

        await request_at(0)
        await request_at(60)  # within the first answer's 90 s: its wait starts again
        await closed_at(149)
        await closed_at(151)
        protocol.connection_lost(None)
        return seen

    loop = VirtualEventLoop()
    try:
        assert loop.run_until_complete(scenario()) == [(149, False), (151, True)]
    finally:
        loop.close()
