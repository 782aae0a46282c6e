"""uvicorn's HTTP/1.1 protocol, with the writes of one loop iteration leaving in one send.

uvicorn writes a response's head and its body separately, and with TCP_NODELAY each write is a
send of its own: two system calls and two segments per answer, which over loopback cost the
server about as much CPU as the rest of a small request. Held until the loop has run what is
ready, they leave together.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """Pass as uvicorn.Config(http=...)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_CorkedTransport(transport))  # type: ignore[arg-type]


class _CorkedTransport:
    """A transport whose writes are joined until the end of the loop iteration; everything
    else is the wrapped transport's."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._held: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(data)

    def _flush(self) -> None:
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
