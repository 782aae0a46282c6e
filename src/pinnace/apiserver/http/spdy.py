"""The server side of SPDY/3.1 framing, as much of it as a port-forward session needs
(SPDY Protocol draft 3.1; kubectl speaks it through github.com/moby/spdystream, tunnelled in
WebSocket binary messages since kubectl 1.31's PortForwardWebsockets), and as much as
pods/exec and pods/attach over a plain upgraded connection need (`streaming`).

`SpdySession.feed` takes the bytes the client sends, in any pieces, and returns what they
mean: streams opened (SYN_STREAM, with their headers), data (DATA, FIN ending a stream's
client half), streams reset (RST_STREAM), pings, and the client going away (GOAWAY). The
session's methods answer: SYN_REPLY, DATA (FIN ends the server half), PING echoed, GOAWAY. SETTINGS,
WINDOW_UPDATE and HEADERS are read and ignored: a session's answers are small enough to stay
within the initial 64 KiB window of flow control.

Header blocks are zlib streams, one per direction for the whole connection, primed with
the protocol's dictionary.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1, 2, 3, 4, 6, 7, 8, 9,
)  # fmt: skip
FLAG_FIN = 0x01
CANCEL = 5
"""RST_STREAM's status for a stream the server gives up."""
_HEAD = 8


def _dictionary() -> bytes:
    """The header compression dictionary of SPDY/3: length-prefixed words, then text."""
    words = (
        "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
        "accept-encoding", "accept-language", "accept-ranges", "age", "allow",
        "authorization", "cache-control", "connection", "content-base", "content-encoding",
        "content-language", "content-length", "content-location", "content-md5",
        "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
        "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since",
        "last-modified", "location", "max-forwards", "pragma", "proxy-authenticate",
        "proxy-authorization", "range", "referer", "retry-after", "server", "te", "trailer",
        "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
        "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
        "public", "set-cookie", "keep-alive", "origin",
    )  # fmt: skip
    text = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417"
        "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
        "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
        "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
        "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
        "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,"
        "utf-,*,enq=0."
    )
    prefixed = b"".join(struct.pack(">I", len(w)) + w.encode() for w in words)
    return prefixed + text.encode()


DICTIONARY = _dictionary()


class ProtocolError(Exception):
    """The client sent something that is not SPDY/3.1."""


@dataclass(frozen=True)
class Opened:
    stream: int
    headers: dict[str, str]
    fin: bool


@dataclass(frozen=True)
class Data:
    stream: int
    data: bytes
    fin: bool


@dataclass(frozen=True)
class Reset:
    stream: int


@dataclass(frozen=True)
class Ping:
    id: int


@dataclass(frozen=True)
class GoAway:
    pass


Event = Opened | Data | Reset | Ping | GoAway
Send = Callable[[bytes], Awaitable[None]]


class SpdySession:
    def __init__(self, send: Send) -> None:
        self._send = send
        self._buffer = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zdict=DICTIONARY)

    # --- reading -----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Event]:
        """The frames `data` completes, as events (a partial frame waits for more)."""
        self._buffer += data
        events: list[Event] = []
        while len(self._buffer) >= _HEAD:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < _HEAD + length:
                break
            head, payload = self._buffer[:_HEAD], self._buffer[_HEAD : _HEAD + length]
            self._buffer = self._buffer[_HEAD + length :]
            flags = head[4]
            if head[0] & 0x80:
                event = self._control(head, flags, payload)
            else:
                stream = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
                event = Data(stream, payload, bool(flags & FLAG_FIN))
            if event is not None:
                events.append(event)
        return events

    def _control(self, head: bytes, flags: int, payload: bytes) -> Event | None:
        version, kind = struct.unpack(">HH", head[:4])
        if version & 0x7FFF != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version & 0x7FFF}")
        if kind == SYN_STREAM:
            stream = _stream_id(payload)
            return Opened(stream, self._headers(payload[10:]), bool(flags & FLAG_FIN))
        if kind == RST_STREAM:
            return Reset(_stream_id(payload))
        if kind == PING:
            return Ping(struct.unpack(">I", payload[:4])[0])
        if kind == GOAWAY:
            return GoAway()
        if kind == HEADERS:
            self._headers(payload[4:])  # read, to keep the compression context in step
        return None

    def _headers(self, block: bytes) -> dict[str, str]:
        try:
            raw = self._inflate.decompress(block)
        except zlib.error as e:
            raise ProtocolError(f"header block: {e}") from None
        count, at, headers = struct.unpack(">I", raw[:4])[0], 4, {}
        for _ in range(count):
            name, at = _string(raw, at)
            value, at = _string(raw, at)
            headers[name.decode("latin-1")] = value.decode("latin-1")
        return headers

    # --- writing -----------------------------------------------------------------------------

    async def reply(self, stream: int) -> None:
        """SYN_REPLY with no headers: the stream is taken."""
        block = self._deflate.compress(struct.pack(">I", 0)) + self._deflate.flush(
            zlib.Z_SYNC_FLUSH
        )
        await self._send(_control(SYN_REPLY, 0, struct.pack(">I", stream) + block))

    async def data(self, stream: int, data: bytes, fin: bool = False) -> None:
        flags = FLAG_FIN if fin else 0
        await self._send(struct.pack(">II", stream, (flags << 24) | len(data)) + data)

    async def reset(self, stream: int) -> None:
        await self._send(_control(RST_STREAM, 0, struct.pack(">II", stream, CANCEL)))

    async def goaway(self, last_stream: int) -> None:
        """GOAWAY (status OK): no more streams; those up to `last_stream` were taken."""
        await self._send(_control(GOAWAY, 0, struct.pack(">II", last_stream, 0)))

    async def pong(self, ping: Ping) -> None:
        await self._send(_control(PING, 0, struct.pack(">I", ping.id)))


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def _stream_id(payload: bytes) -> int:
    return int(struct.unpack(">I", payload[:4])[0]) & 0x7FFFFFFF


def _string(raw: bytes, at: int) -> tuple[bytes, int]:
    length = struct.unpack(">I", raw[at : at + 4])[0]
    return raw[at + 4 : at + 4 + length], at + 4 + length
