"""The SPDY/3.1 framing kubectl's port-forward tunnels through its WebSocket: frames as a
spdystream client writes them, fed in arbitrary pieces, and the server's answers as such a
client reads them."""

from __future__ import annotations

import asyncio
import struct
import zlib

from pinnace.apiserver.http.spdy import (
    DICTIONARY,
    FLAG_FIN,
    Data,
    GoAway,
    Opened,
    Ping,
    Reset,
    SpdySession,
)


class Client:
    """A spdystream client's framer: one zlib stream for its header blocks, one to read the
    server's."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zdict=DICTIONARY)
        self.inflate = zlib.decompressobj(zdict=DICTIONARY)

    def control(self, kind: int, payload: bytes, flags: int = 0) -> bytes:
        return struct.pack(">HHI", 0x8003, kind, (flags << 24) | len(payload)) + payload

    def syn_stream(self, stream: int, headers: dict[str, str]) -> bytes:
        block = struct.pack(">I", len(headers))
        for name, value in headers.items():
            block += struct.pack(">I", len(name)) + name.encode()
            block += struct.pack(">I", len(value)) + value.encode()
        compressed = self.deflate.compress(block) + self.deflate.flush(zlib.Z_SYNC_FLUSH)
        return self.control(1, struct.pack(">IIBB", stream, 0, 0, 0) + compressed)

    def read(self, frame: bytes) -> tuple[str, int, int, bytes]:
        """(kind, stream or ping id, flags, data or headers' pair count) of one frame."""
        flags, length = frame[4], int.from_bytes(frame[5:8], "big")
        payload = frame[8 : 8 + length]
        if not frame[0] & 0x80:
            return "data", int.from_bytes(frame[:4], "big"), flags, payload
        kind = struct.unpack(">H", frame[2:4])[0]
        ident = struct.unpack(">I", payload[:4])[0]
        if kind == 2:  # SYN_REPLY: the header block must inflate in the shared stream
            return "reply", ident, flags, self.inflate.decompress(payload[4:])[:4]
        return {3: "rst", 6: "ping"}[kind], ident, flags, payload[4:]


def test_a_port_forward_pair_is_read_from_pieces_and_answered() -> None:
    client, sent = Client(), []

    async def send(data: bytes) -> None:
        sent.append(data)

    async def scenario() -> list[object]:
        session = SpdySession(send)
        wire = client.syn_stream(1, {"streamtype": "error", "port": "80", "requestid": "0"})
        wire += client.syn_stream(3, {"streamtype": "data", "port": "80", "requestid": "0"})
        wire += struct.pack(">II", 1, FLAG_FIN << 24)  # the client closes its error stream
        wire += struct.pack(">II", 3, 5) + b"GET /"
        wire += client.control(6, struct.pack(">I", 7))
        wire += client.control(3, struct.pack(">II", 3, 5))
        wire += client.control(7, struct.pack(">II", 3, 0))
        events: list[object] = []
        for i in range(0, len(wire), 5):  # WebSocket messages cut frames anywhere
            events += session.feed(wire[i : i + 5])
        await session.reply(1)
        await session.reply(3)
        await session.data(3, b"HTTP/1.1 200 OK\r\n")
        await session.data(3, b"", fin=True)
        await session.pong(Ping(7))
        await session.reset(1)
        return events

    events = asyncio.run(scenario())
    assert events == [
        Opened(1, {"streamtype": "error", "port": "80", "requestid": "0"}, False),
        Opened(3, {"streamtype": "data", "port": "80", "requestid": "0"}, False),
        Data(1, b"", True),
        Data(3, b"GET /", False),
        Ping(7),
        Reset(3),
        GoAway(),
    ]
    assert [client.read(frame) for frame in sent] == [
        ("reply", 1, 0, b"\x00\x00\x00\x00"),
        ("reply", 3, 0, b"\x00\x00\x00\x00"),
        ("data", 3, 0, b"HTTP/1.1 200 OK\r\n"),
        ("data", 3, FLAG_FIN, b""),
        ("ping", 7, 0, b""),
        ("rst", 1, 0, struct.pack(">I", 5)),
    ]
