"""pods/portforward over WebSockets, as kube-apiserver v1.32 serves it:

- kubectl 1.31+ asks for `SPDY/3.1+portforward.k8s.io` (PortForwardWebsockets): the
  WebSocket's binary messages carry a SPDY/3.1 session (`spdy`), as kube-apiserver's
  tunneling handler relays it to the kubelet. Each local connection is a pair of streams
  (headers `streamtype` error or data, `port`, `requestid`); the kubelet connects the pair to
  the port, relays the data both ways, writes any error on the error stream, then ends both.
- The Python client asks for `v4.channel.k8s.io` with `?ports=80,8080`, proxied to the
  kubelet's WebSocket server: port i has a data channel 2i and an error channel 2i+1, each
  starting with the port as two little-endian bytes; one connection per port, and the
  WebSocket closes when they have all ended.
- Without a WebSocket (kubectl's fallback, KUBECTL_PORT_FORWARD_WEBSOCKETS=false), the same
  SPDY session on the connection itself, upgraded with `portforward.k8s.io` as the kubelet's
  port-forward server does (pkg/kubelet/cri/streaming/portforward/httpstream.go).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.streams import Forward, StreamError
from pinnace.apiserver.http import spdy
from pinnace.apiserver.http.channels import PORT_FORWARD, Framing, Inbox, negotiate, unsupported
from pinnace.apiserver.http.request import Query
from pinnace.apiserver.http.websocket import Refused, WebSocket
from pinnace.apiserver.streams import StreamSource

if TYPE_CHECKING:
    from pinnace.apiserver.http.connections import Upgraded

TUNNEL = "SPDY/3.1+portforward.k8s.io"
SPDY_PROTOCOL = "portforward.k8s.io"
"""The kubelet's port-forward protocol over a plain SPDY/3.1 upgrade (`plain`)."""


def ports(query: Query) -> list[int]:
    """PodPortForwardOptions' ports: repeated or comma-separated, each a uint16 (kube-apiserver
    decodes them; the kubelet then needs at least one, above 0)."""
    found = []
    for text in query.get("ports") or ():
        for word in text.split(","):
            if not word.isdigit() or int(word) > 0xFFFF:
                raise status.bad_request(
                    f'cannot convert to []int32: strconv.ParseUint: parsing "{word}": '
                    + ("value out of range" if word.isdigit() else "invalid syntax")
                )
            found.append(int(word))
    return found


def forwarding_error(pod: Object, port: int, why: str) -> str:
    """How the kubelet's streaming server reports a failed connection (the pod is named by
    its sandbox, which CRI gives no uid)."""
    return f"error forwarding port {port} to pod {pod['metadata'].get('uid', '')}, uid : {why}"


async def serve(node: StreamSource, ws: WebSocket, query: Query, pod: Object) -> None:
    if TUNNEL in ws.subprotocols:
        await _tunnel(node, ws, pod)
        return
    wanted = ports(query)
    if not wanted:
        raise Refused('query parameter "port" is required', 400)
    if any(port < 1 for port in wanted):
        raise Refused(f'port "{",".join(query.get("ports") or ())}" must be > 0', 400)
    protocol = negotiate(ws.subprotocols, PORT_FORWARD, translated=False)
    if protocol is None:
        raise unsupported(ws.subprotocols)
    await _channels(node, ws, Framing(protocol), pod, wanted)


# --- the kubelet's WebSocket protocol ---------------------------------------------------


class _Connection(Inbox):
    """One connection to a port, as a StreamIO: what the client sends it, and its answers
    through `send`."""

    def __init__(self, send: spdy.Send) -> None:
        super().__init__()
        self.send = send

    async def write(self, stream: int, data: bytes) -> None:
        if data:
            await self.send(data)


async def _forward(pod: Object, port: int, forward: Forward | str, io: _Connection) -> str:
    """Run one connection; the error to report, "" when none."""
    if isinstance(forward, str):
        return forwarding_error(pod, port, forward)
    await forward(io)
    return ""


def _open(node: StreamSource, pod: Object, port: int) -> Forward | str:
    """The node's connection to the port, or why there is none."""
    try:
        return node.port_forward(pod, port)
    except StreamError as e:  # Unreachable among them: the tunnel's dial failed
        return str(e)


async def _channels(
    node: StreamSource, ws: WebSocket, framing: Framing, pod: Object, wanted: list[int]
) -> None:
    await ws.accept(framing.protocol)
    connections = []
    for i, port in enumerate(wanted):
        prefix = port.to_bytes(2, "little")
        await ws.send(framing.encode(2 * i, prefix))
        await ws.send(framing.encode(2 * i + 1, prefix))

        async def send(data: bytes, channel: int = 2 * i) -> None:
            await ws.send(framing.encode(channel, data))

        connections.append(_Connection(send))

    async def one(i: int, port: int) -> None:
        error = await _forward(pod, port, _open(node, pod, port), connections[i])
        if error:
            await ws.send(framing.encode(2 * i + 1, error.encode()))

    async def receive() -> None:
        while (message := await ws.receive()) is not None:
            decoded = framing.decode(message)
            if decoded is not None and decoded[0] % 2 == 0 and decoded[0] // 2 < len(wanted):
                connections[decoded[0] // 2].put(decoded[1])
        for connection in connections:
            connection.put(b"")

    async def every_port() -> None:
        await asyncio.gather(*(one(i, port) for i, port in enumerate(wanted)))

    receiving = asyncio.ensure_future(receive())
    forwarding = asyncio.ensure_future(every_port())
    try:
        await asyncio.wait({receiving, forwarding}, return_when=asyncio.FIRST_COMPLETED)
        if forwarding.done() and forwarding.exception() is None:
            await ws.close()
    finally:
        receiving.cancel()
        forwarding.cancel()
        await asyncio.gather(receiving, forwarding, return_exceptions=True)


# --- SPDY tunnelled through the WebSocket -------------------------------------------------


@dataclass
class _Pair:
    """A local connection's error and data streams, as they arrive."""

    port: int
    error: int = 0
    data: int = 0
    connection: _Connection | None = None


async def _tunnel(node: StreamSource, ws: WebSocket, pod: Object) -> None:
    await ws.accept(TUNNEL)

    async def receive() -> bytes | None:
        message = await ws.receive()
        return message.encode() if isinstance(message, str) else message

    try:
        await _pairs(node, pod, ws.send, receive)
    except spdy.ProtocolError:
        await ws.close(1002)
    await ws.close()


async def plain(node: StreamSource, pod: Object, connection: Upgraded) -> None:
    """Port-forward over a plain SPDY/3.1 connection (kubectl with
    KUBECTL_PORT_FORWARD_WEBSOCKETS=false, older clients): the same stream pairs."""

    async def receive() -> bytes | None:
        return await connection.read() or None  # b"": the client has closed

    try:
        await _pairs(node, pod, connection.write, receive)
    except (spdy.ProtocolError, OSError):
        pass  # the client spoke something else, or went away: nothing to tell it
    finally:
        connection.close()


async def _pairs(
    node: StreamSource,
    pod: Object,
    send: spdy.Send,
    receive: Callable[[], Awaitable[bytes | None]],
) -> None:
    """Serve a SPDY session's stream pairs until the client closes (`receive` gives None)."""
    session = spdy.SpdySession(send)
    pairs: dict[str, _Pair] = {}
    by_stream: dict[int, _Pair] = {}
    tasks: set[asyncio.Task[None]] = set()

    async def run(pair: _Pair) -> None:
        assert pair.connection is not None
        error = ""
        try:
            error = await _forward(pod, pair.port, _open(node, pod, pair.port), pair.connection)
        finally:
            with contextlib.suppress(OSError):
                if error:
                    await session.data(pair.error, error.encode())
                await session.data(pair.data, b"", fin=True)
                await session.data(pair.error, b"", fin=True)

    async def opened(event: spdy.Opened) -> None:
        await session.reply(event.stream)
        headers = event.headers
        port_text, kind = headers.get("port", ""), headers.get("streamtype", "")
        if not port_text.isdigit() or kind not in ("error", "data"):
            await session.reset(event.stream)
            return
        pair = pairs.setdefault(headers.get("requestid", ""), _Pair(int(port_text)))
        setattr(pair, kind, event.stream)
        by_stream[event.stream] = pair
        if pair.error and pair.data and pair.connection is None:

            async def send(data: bytes, stream: int = pair.data) -> None:
                await session.data(stream, data)

            pair.connection = _Connection(send)
            task = asyncio.ensure_future(run(pair))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    def ended(stream: int) -> None:
        pair = by_stream.get(stream)
        if pair is not None and stream == pair.data and pair.connection is not None:
            pair.connection.put(b"")

    try:
        while (data := await receive()) is not None:
            for event in session.feed(data):
                if isinstance(event, spdy.Opened):
                    await opened(event)
                elif isinstance(event, spdy.Data):
                    pair = by_stream.get(event.stream)
                    if pair is not None and event.stream == pair.data and pair.connection:
                        if event.data:
                            pair.connection.put(event.data)
                        if event.fin:
                            ended(event.stream)
                elif isinstance(event, spdy.Reset):
                    ended(event.stream)
                elif isinstance(event, spdy.Ping):
                    await session.pong(event)
                else:
                    break
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
