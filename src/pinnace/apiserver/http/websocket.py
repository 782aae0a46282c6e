"""One WebSocket connection over ASGI (uvicorn's wsproto protocol): answered with an HTTP
response before it is accepted (an error, as kube-apiserver answers a failed upgrade), or
accepted with a subprotocol and then messages both ways."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pinnace.apiserver.http.bodies import Receive
from pinnace.apiserver.http.responses import TEXT_PLAIN, Response

Send = Callable[[dict[str, Any]], Awaitable[None]]
Message = bytes | str


class Refused(Exception):
    """The kubelet answered the upgrade with an error of its own, in plain text, which
    kube-apiserver's proxy relays as it is."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code

    def response(self) -> Response:
        return Response(self.code, str(self.args[0]).encode(), TEXT_PLAIN)


class Relayed(Refused):
    """The kubelet's answer to an upgrade it refused, relayed as it is."""

    def __init__(self, answer: Response) -> None:
        super().__init__(answer.body.decode("utf-8", "replace"), answer.status)
        self.answer = answer

    def response(self) -> Response:
        return self.answer


class WebSocket:
    def __init__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        self.subprotocols: list[str] = list(scope.get("subprotocols") or ())
        """What the client offered, in its order."""
        self._receive, self._send = receive, send
        self.accepted = False
        self.answered = False
        """Accepted, or answered with an HTTP response."""
        self.closed = False
        self.status = 0
        """The HTTP status answered: 101 once accepted."""

    async def connect(self) -> bool:
        """Wait for the client's handshake; False when it went away first."""
        return (await self._receive())["type"] == "websocket.connect"

    async def accept(self, subprotocol: str) -> None:
        self.accepted = self.answered = True
        self.status = 101
        await self._send({"type": "websocket.accept", "subprotocol": subprotocol or None})

    def handed_over(self) -> None:
        """The handshake was answered with the connection handed over (relayed as bytes):
        nothing more goes through this WebSocket."""
        self.accepted = self.answered = self.closed = True
        self.status = 101

    async def answer(self, response: Response, headers: list[tuple[bytes, bytes]]) -> None:
        """Refuse the upgrade with an HTTP response (`headers` its encoded header lines)."""
        self.answered = True
        self.status = response.status
        start = {"type": "websocket.http.response.start", "status": response.status}
        await self._send({**start, "headers": headers})
        await self._send({"type": "websocket.http.response.body", "body": response.body})

    async def refuse(self, response: Response, headers: list[tuple[bytes, bytes]]) -> None:
        """Answer a failed upgrade with `response`, or end the session with an internal error
        when it had started."""
        try:
            if not self.answered:
                await self.answer(response, headers)
            else:
                await self.close(1011)
        except OSError:
            pass  # the client went away

    async def receive(self) -> Message | None:
        """The client's next message; None once the connection has closed."""
        while not self.closed:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                self.closed = True
            elif message["type"] == "websocket.receive":
                data = message.get("bytes")
                return data if data is not None else message.get("text") or ""
        return None

    async def send(self, data: Message) -> None:
        if isinstance(data, bytes):
            await self._send({"type": "websocket.send", "bytes": data})
        else:
            await self._send({"type": "websocket.send", "text": data})

    async def close(self, code: int = 1000) -> None:
        if not self.closed:
            self.closed = True
            await self._send({"type": "websocket.close", "code": code})
