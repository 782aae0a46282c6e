"""The corked transport under uvicorn's protocol: what one loop iteration writes leaves as one
send, in order, and nothing held is lost when the connection closes."""

from __future__ import annotations

import asyncio

from pinnace.apiserver.http.protocol import _CorkedTransport


class _Transport:
    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.sent.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"extra {name}"


def test_writes_of_one_iteration_leave_together() -> None:
    asyncio.run(_writes_of_one_iteration_leave_together())


async def _writes_of_one_iteration_leave_together() -> None:
    inner = _Transport()
    corked = _CorkedTransport(inner)  # type: ignore[arg-type]
    corked.write(b"HTTP/1.1 201 Created\r\n\r\n")
    corked.write(b"")
    corked.write(b'{"kind":"Pod"}')
    assert inner.sent == []
    await asyncio.sleep(0)
    assert inner.sent == [b'HTTP/1.1 201 Created\r\n\r\n{"kind":"Pod"}']
    corked.write(b"next")
    await asyncio.sleep(0)
    assert inner.sent[1:] == [b"next"]


def test_close_sends_what_is_held_first() -> None:
    asyncio.run(_close_sends_what_is_held_first())


async def _close_sends_what_is_held_first() -> None:
    inner = _Transport()
    corked = _CorkedTransport(inner)  # type: ignore[arg-type]
    corked.write(b"last answer")
    corked.close()
    assert inner.sent == [b"last answer"]
    assert inner.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left to send
    assert inner.sent == [b"last answer"]


def test_everything_else_is_the_transports() -> None:
    asyncio.run(_everything_else_is_the_transports())


async def _everything_else_is_the_transports() -> None:
    corked = _CorkedTransport(_Transport())  # type: ignore[arg-type]
    assert corked.get_extra_info("peername") == "extra peername"
    assert not corked.is_closing()
