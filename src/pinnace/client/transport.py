"""A minimal HTTP/1.1 transport over asyncio streams, under `HTTPClient` and the API
benchmark's load generator: one keep-alive connection per client, requests with a body, and
the line stream of a chunked watch response; over TLS for an `https://` server (with the
client certificate its SSL context holds), with headers of the caller's (a bearer token,
impersonation) on each request.

General clients (httpx, aiohttp) spend more CPU per request than the server they measure
would; this one does only what the API clients need: no redirects, no pooling.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

JSON = "application/json"


class HTTPError(Exception):
    """The connection failed or the answer was not HTTP/1.1 as this client reads it."""


class NotStreamed(HTTPError):
    """A streamed answer asked for (`Connection.stream`) and another given: its status and
    body (an error's, most often)."""

    def __init__(self, path: str, status: int, body: bytes) -> None:
        super().__init__(f"GET {path} answered {status}: {body[:200]!r}")
        self.status = status
        self.body = body


class Connection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._host = host
        self.content_type = ""
        """The Content-Type of the last answer read."""
        self.retry_after = 0
        """The Retry-After seconds of the last answer read (0: none)."""

    @classmethod
    async def open(cls, url: str, tls: ssl.SSLContext | None = None) -> Connection:
        """A connection to `url`: `http://host:port`, or `https://host:port` verified and
        authenticated with `tls` (the system's trust when None)."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or parts.hostname is None or parts.port is None:
            raise HTTPError(f"expected http://host:port or https://host:port, not {url!r}")
        secure: ssl.SSLContext | None = None
        if parts.scheme == "https":
            secure = tls or ssl.create_default_context()
        try:
            reader, writer = await asyncio.open_connection(parts.hostname, parts.port, ssl=secure)
        except OSError as e:  # refused, unreachable, or the TLS handshake failed
            raise HTTPError(f"cannot connect to {url}: {e}") from None
        return cls(reader, writer, parts.netloc)

    def send(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        content_type: str = JSON,
        headers: str = "",
    ) -> None:
        """Write one request (`headers`: more header lines, each ending in CRLF); read its
        answer with `response`."""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\nAccept: {JSON}\r\n{headers}"
            f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self._writer.write(head.encode() + body)

    async def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        content_type: str = JSON,
        headers: str = "",
    ) -> tuple[int, bytes]:
        """The status and whole body of one request's answer."""
        self.send(method, path, body, content_type, headers)
        return await self.response()

    async def response(self) -> tuple[int, bytes]:
        status, length = await self._head()
        if length is not None:
            return status, await self._read(length)
        return status, b"".join([chunk async for chunk in self._chunks()])

    async def stream(self, path: str, headers: str = "") -> None:
        """GET a streamed (chunked) answer, such as a watch, and read its head; NotStreamed
        if the answer is not a 200 or not streamed. Its lines then come from `lines`."""
        self.send("GET", path, headers=headers)
        status, length = await self._head()
        if status != 200 or length is not None:
            if length is None:  # a refusal sent in chunks
                body = b"".join([chunk async for chunk in self._chunks()])
            else:
                body = await self._read(length)
            raise NotStreamed(path, status, body)

    async def body(self, path: str, headers: str = "") -> tuple[int, AsyncIterator[bytes]]:
        """GET `path`: the answer's status once its head is read, and its body as it arrives
        (one piece, or the chunks of a streamed answer)."""
        self.send("GET", path, headers=headers)
        status, length = await self._head()
        return status, (self._chunks() if length is None else self._whole(length))

    async def _whole(self, length: int) -> AsyncIterator[bytes]:
        yield await self._read(length)

    async def lines(self) -> AsyncIterator[bytes]:
        """The lines of the streamed answer opened with `stream`, as they arrive."""
        pending = b""
        async for chunk in self._chunks():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line

    def close(self) -> None:
        self._writer.close()

    async def _head(self) -> tuple[int, int | None]:
        """The status, and the Content-Length (None for a chunked body)."""
        try:
            head = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as e:
            raise HTTPError(f"no answer from the server: {e}") from None
        status_line, *fields = head.decode("latin-1").split("\r\n")
        try:
            status = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            raise HTTPError(f"not an HTTP status line: {status_line!r}") from None
        length: int | None = 0
        self.content_type, self.retry_after = "", 0
        for field in fields:
            name, _, value = field.partition(":")
            name = name.strip().lower()
            if name == "content-type":
                self.content_type = value.strip()
            elif name == "retry-after" and value.strip().isdigit():
                self.retry_after = int(value)
            elif name == "content-length":
                if not value.strip().isdigit():
                    raise HTTPError(f"not a Content-Length: {value!r}")
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                length = None
        return status, length

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            size_line = await self._read_line()
            try:
                size = int(size_line.split(b";", 1)[0], 16)
            except ValueError:
                raise HTTPError(f"not a chunk size: {size_line!r}") from None
            if size == 0:
                await self._read_line()  # the empty trailer section
                return
            chunk = await self._read(size + 2)
            yield chunk[:-2]

    async def _read(self, count: int) -> bytes:
        try:
            return await self._reader.readexactly(count)
        except (asyncio.IncompleteReadError, OSError) as e:
            raise HTTPError(f"the server closed the connection: {e}") from None

    async def _read_line(self) -> bytes:
        try:
            return await self._reader.readuntil(b"\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as e:
            raise HTTPError(f"the server closed the connection: {e}") from None
