"""The node proxy's connections to kubelets (`pinnace.client.kubelet_relay`), against a small
HTTP server: scrapes in a row share one connection, a kept connection the kubelet closed is
replaced without the client seeing it, a chunked answer comes piece by piece, and a kubelet
that cannot be dialled is the proxy transport's 503."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable

import pytest

from pinnace.api.status import StatusError
from pinnace.api.streams import Unreachable
from pinnace.client.kubelet_relay import IDLE_TIMEOUT, KubeletConnections, forwarded

BODY = b"# TYPE container_cpu_usage_seconds_total counter\n"


class Kubelet:
    """Answers each GET with BODY (its length given), or in two chunks for /chunked; closes a
    connection after its answer when `closing`."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[bytes] = []
        self.closing = False
        self.second_chunk = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                if head.startswith(b"GET /chunked "):
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n"
                    )
                    await writer.drain()
                    await self.second_chunk.wait()
                    writer.write(b"6\r\nsecond\r\n0\r\n\r\n")
                else:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                        b"X-Kubelet: yes\r\nDate: now\r\n"
                        + f"Content-Length: {len(BODY)}\r\n\r\n".encode()
                        + BODY
                    )
                await writer.drain()
                if self.closing:
                    break
        writer.close()


@contextlib.asynccontextmanager
async def kubelet(
    now: Callable[[], float] = time.monotonic,
) -> AsyncIterator[tuple[Kubelet, KubeletConnections, str]]:
    served = Kubelet()
    server = await asyncio.start_server(served.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def dial(host_port: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, _, port = host_port.rpartition(":")
        try:
            return await asyncio.open_connection(host, int(port))
        except ConnectionRefusedError:
            raise Unreachable(host_port, "connect: connection refused") from None

    connections = KubeletConnections(dial, now)
    try:
        yield served, connections, f"127.0.0.1:{port}"
    finally:
        connections.close()
        server.close()


def test_scrapes_in_a_row_share_one_connection_and_headers_are_relayed() -> None:
    async def main() -> None:
        async with kubelet() as (served, connections, address):
            for _ in range(3):
                answer = await connections.relay(address, "GET", "/metrics/cadvisor", b"")
                assert (answer.status, answer.body, answer.stream) == (200, BODY, None)
                assert answer.headers == [
                    ("Content-Type", "text/plain; version=0.0.4"),
                    ("X-Kubelet", "yes"),
                ]
            assert served.connections == 1

    asyncio.run(main())


def test_a_connection_idle_past_go_s_idle_timeout_is_not_reused() -> None:
    clock = [0.0]

    async def main() -> None:
        async with kubelet(lambda: clock[0]) as (served, connections, address):
            await connections.relay(address, "GET", "/metrics", b"")
            clock[0] += IDLE_TIMEOUT - 1
            await connections.relay(address, "GET", "/metrics", b"")
            assert served.connections == 1
            clock[0] += IDLE_TIMEOUT
            answer = await connections.relay(address, "GET", "/metrics", b"")
            assert (answer.status, answer.body, served.connections) == (200, BODY, 2)

    asyncio.run(main())


def test_a_kept_connection_the_kubelet_closed_is_replaced_unseen() -> None:
    async def main() -> None:
        async with kubelet() as (served, connections, address):
            served.closing = True
            for _ in range(3):
                answer = await connections.relay(address, "GET", "/metrics", b"")
                assert (answer.status, answer.body) == (200, BODY)
            assert served.connections == 3

    asyncio.run(main())


def test_a_chunked_answer_comes_piece_by_piece_then_the_connection_is_kept() -> None:
    async def main() -> None:
        async with kubelet() as (served, connections, address):
            answer = await connections.relay(address, "GET", "/chunked", b"")
            assert answer.stream is not None
            assert await anext(answer.stream) == b"first"  # before the kubelet sends more
            served.second_chunk.set()
            assert [piece async for piece in answer.stream] == [b"second"]
            await connections.relay(address, "GET", "/metrics", b"")
            assert served.connections == 1

    asyncio.run(main())


def test_an_unreachable_kubelet_is_the_proxy_transports_503() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]

    async def main() -> None:
        async with kubelet() as (_, connections, _):
            with pytest.raises(StatusError) as refused:
                await connections.relay(f"127.0.0.1:{port}", "GET", "/metrics", b"")
        assert (refused.value.code, refused.value.reason) == (503, "ServiceUnavailable")
        assert refused.value.message == (
            f"error trying to reach service: dial tcp 127.0.0.1:{port}: connect: connection refused"
        )

    asyncio.run(main())


def test_the_clients_credentials_and_hop_by_hop_headers_stay_behind() -> None:
    headers = [
        (b"Host", b"apiserver:6443"),
        (b"Authorization", b"Bearer secret"),
        (b"Impersonate-User", b"eve"),
        (b"Connection", b"keep-alive"),
        (b"Accept", b"text/plain"),
        (b"X-Prometheus-Scrape-Timeout-Seconds", b"10"),
    ]
    assert forwarded(headers) == (
        b"Accept: text/plain\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n"
    )
