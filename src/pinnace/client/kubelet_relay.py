"""The API server's node proxy to the kubelets of `pinnace agent` processes: a request relayed
over kept-alive connections, as kube-apiserver's UpgradeAwareHandler relays it (a reverse
proxy over the kubelet transport, Go's http.Transport; k8s.io/apimachinery/pkg/util/proxy).

- A connection is kept once its answer has been read to the end, at most MAX_IDLE_PER_HOST
  per kubelet address (utilnet.SetTransportDefaults' MaxIdleConnsPerHost), and dropped once
  idle for IDLE_TIMEOUT (Go's IdleConnTimeout); a kubelet keeps it as long (its server's
  IdleTimeout), so a scrape every 15 s reuses one connection a kubelet.
- A kept connection the kubelet closed meanwhile fails before any byte of its answer: the
  request (a GET or HEAD, which may be sent twice) goes again on a new connection, as Go's
  transport retries it.
- The client's headers go on, less the hop-by-hop ones and the credentials the API server took
  (Authorization and Impersonate-*: its authentication filter removes them); the kubelet's
  come back less the hop-by-hop ones.
- A body of known length is read whole and sent with the head in one write; any other (a
  followed log) piece by piece as it comes, each passed on at once, as Go's reverse proxy
  flushes an answer of unknown length.
- A kubelet that cannot be dialled, or closes without an answer, is the proxy transport's
  503 (`error trying to reach service: dial tcp …: connect: connection refused`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from pinnace.api.status import StatusError
from pinnace.api.streams import Unreachable
from pinnace.apiserver.kubelets import Relayed

MAX_IDLE_PER_HOST = 25
IDLE_TIMEOUT = 90.0
"""Seconds a kept connection may stay idle."""
WHOLE_BYTES = 4 << 20
"""A body of known length up to this is relayed whole; a larger one in pieces."""
READ_SIZE = 64 * 1024
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
NOT_FORWARDED = HOP_BY_HOP | {"host", "authorization", "content-length"}
NOT_RELAYED = HOP_BY_HOP | {"content-length", "date"}
"""The kubelet's headers the API server's HTTP server writes itself."""

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Taken = tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]
"""A connection, and whether it was kept from an earlier request."""
Dial = Callable[[str], Awaitable[Streams]]
"""host:port -> a new connection; Unreachable when it cannot be dialled."""


def unreachable(why: str) -> StatusError:
    """The proxy transport's error for a kubelet it could not get an answer from."""
    return StatusError(503, "ServiceUnavailable", f"error trying to reach service: {why}")


def forwarded(headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The client's header lines that go on to the kubelet."""
    lines = []
    for raw_name, value in headers:
        name = raw_name.lower()
        if name.decode("latin-1") in NOT_FORWARDED or name.startswith(b"impersonate-"):
            continue
        lines.append(raw_name + b": " + value + b"\r\n")
    return b"".join(lines)


class KubeletConnections:
    """Kept-alive connections to kubelets, by host:port."""

    def __init__(self, dial: Dial, now: Callable[[], float] = time.monotonic) -> None:
        """`now`: the clock idle connections are timed by."""
        self._dial = dial
        self._now = now
        self._idle: dict[str, list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]]] = {}

    async def relay(self, host_port: str, method: str, path: str, headers: bytes) -> Relayed:
        """Send `method path` (with the query) and these header lines to the kubelet at
        `host_port`, and read its answer's head; its body is read whole or relayed as it
        comes (Relayed)."""
        request = f"{method} {path} HTTP/1.1\r\nHost: {host_port}\r\n".encode("latin-1")
        request += headers + b"\r\n"
        while True:
            reader, writer, reused = await self._take(host_port)
            writer.write(request)
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as e:
                writer.close()
                if reused and not e.partial:
                    continue  # it closed the kept connection: once more on a new one
                raise unreachable("unexpected EOF" if e.partial else "EOF") from None
            except (OSError, asyncio.LimitOverrunError) as e:
                writer.close()
                if reused and isinstance(e, ConnectionError):
                    continue
                raise unreachable(str(e) or type(e).__name__) from None
            return await self._answer(host_port, method, head, reader, writer)

    async def _answer(
        self,
        host_port: str,
        method: str,
        head: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> Relayed:
        status_line, *lines = head[:-4].decode("latin-1").split("\r\n")
        try:
            code = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            writer.close()
            raise unreachable(f"malformed HTTP response {status_line!r}") from None
        relayed: list[tuple[str, str]] = []
        length: int | None = None
        chunked = closing = False
        for line in lines:
            name, _, value = line.partition(":")
            name, value = name.strip(), value.strip()
            lower = name.lower()
            if lower == "content-length" and value.isdigit():
                length = int(value)
            elif lower == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif lower == "connection":
                closing = "close" in value.lower()
            if lower not in NOT_RELAYED:
                relayed.append((name, value))
        keep = not closing and status_line.startswith("HTTP/1.1")
        if method == "HEAD" or code in (204, 304) or code < 200:
            self._done(host_port, reader, writer, keep)
            return Relayed(code, relayed)
        if length is not None and not chunked and length <= WHOLE_BYTES:
            try:
                body = await reader.readexactly(length)
            except asyncio.IncompleteReadError as e:  # it went away mid-answer
                writer.close()
                return Relayed(code, relayed, e.partial)
            except OSError:
                writer.close()
                return Relayed(code, relayed)
            self._done(host_port, reader, writer, keep)
            return Relayed(code, relayed, body)
        if length is not None and not chunked:
            relayed.append(("Content-Length", str(length)))
        pieces = self._pieces(host_port, reader, writer, chunked, length, keep)
        return Relayed(code, relayed, stream=pieces)

    async def _pieces(
        self,
        host_port: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        chunked: bool,
        length: int | None,
        keep: bool,
    ) -> AsyncIterator[bytes]:
        """The body as it comes; the connection kept when it was read to its end."""
        ended = False
        try:
            if chunked:
                async for piece in _chunks(reader):
                    yield piece
            elif length is not None:
                while length > 0 and (piece := await reader.read(min(READ_SIZE, length))):
                    length -= len(piece)
                    yield piece
                keep = keep and length == 0
            else:
                keep = False  # its end is the connection's
                while piece := await reader.read(READ_SIZE):
                    yield piece
            ended = True
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError, ValueError):
            return  # the kubelet went away mid-answer: the relay ends, as Go's copy does
        finally:
            self._done(host_port, reader, writer, keep and ended)

    async def _take(self, host_port: str) -> Taken:
        """A kept connection to `host_port` (most recently used first), else a new one."""
        idle = self._idle.get(host_port)
        now = self._now()
        while idle:
            reader, writer, since = idle.pop()
            if now - since < IDLE_TIMEOUT and not reader.at_eof() and not writer.is_closing():
                return reader, writer, True
            writer.close()
        try:
            reader, writer = await self._dial(host_port)
        except Unreachable as e:
            raise unreachable(str(e)) from None
        return reader, writer, False

    def _done(
        self,
        host_port: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keep: bool,
    ) -> None:
        idle = self._idle.setdefault(host_port, [])
        if keep and len(idle) < MAX_IDLE_PER_HOST and not writer.is_closing():
            idle.append((reader, writer, self._now()))
        else:
            writer.close()

    def close(self) -> None:
        """Close every kept connection."""
        for idle in self._idle.values():
            for _, writer, _ in idle:
                writer.close()
        self._idle.clear()


async def _chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The pieces of a chunked body, to its last chunk and trailer."""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass  # trailer fields, which a reverse proxy does not relay here
            return
        piece = await reader.readexactly(size + 2)
        yield piece[:-2]
