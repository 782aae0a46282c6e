"""How `pinnace up` takes connections: the limits kube-apiserver's HTTP server has (Go's
net/http as staging/src/k8s.io/apiserver/pkg/server/secure_serving.go configures it), and a
cap on open connections so the process never runs out of file descriptors.

- The request line and headers may take MaxHeaderBytes (1 MiB, plus the 4 KiB Go's reader
  allows beyond it); past that the client gets Go's plain-text 431 and the connection closes.
- A client has ReadHeaderTimeout (32 s) to send them, from the connection's start or its
  request's first byte; then the connection is closed without an answer, as Go closes it.
- A URL beyond httptools' 64 KiB parser limit is served like any other (Go has no such limit).
- The soft limit on open files is raised to the hard one at start, as Go does.
- Pinnace's own: at most `max_connections` are open at once (a cap below the open-file
  limit); one past it is answered a 503 Status with Retry-After and closed, so clients retry
  and the server keeps its descriptors; in a flood, those far past it are closed unanswered.
- An upgrade to anything but WebSocket (SPDY/3.1, kubectl's fallback for pods/exec) goes
  to the app as a plain request, with the `UPGRADE` extension in its scope: the app answers
  101 through it and then owns the connection's bytes both ways (`Upgraded`). A WebSocket's
  scope has it too, for a proxy that relays the handshake and the frames as bytes (a session
  on a `pinnace agent`'s node, which the agent's kubelet endpoint accepts).
- A response of known length goes out in one write, its head with its body: uvicorn writes
  them apart, two sends (and two wake-ups of the client) for every answer.
- An app that has its whole answer at hand sends it through the `RESPOND` extension: one call
  with the head's lines made once per content type, for the bytes uvicorn's two ASGI sends
  would have written (its per-header checks, lists and message dicts, done for every answer,
  were a fifth of a `GET /version`).
- An idle connection is closed `timeout_keep_alive` after its last answer, as uvicorn closes
  it, but with one timer per connection rather than a new one for every answer: the timer
  looks at when the connection last went idle, and waits again for what is left.
- asyncio reports a failed accept (EMFILE …) once per connection waiting in the backlog, each
  with a traceback, and retries a second later; `quiet_accept_failures` makes that one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast
from urllib.parse import unquote

import uvicorn
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.websockets.wsproto_impl import WSProtocol

from pinnace.api.status import StatusError
from pinnace.apiserver.http.responses import encode_json

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 1 << 20
"""kube-apiserver's http.Server MaxHeaderBytes."""
HEADER_READ_SLACK = 4096
"""What Go's server reads beyond MaxHeaderBytes before refusing (initialReadLimitSize)."""
READ_HEADER_TIMEOUT = 32.0
"""kube-apiserver's http.Server ReadHeaderTimeout, in seconds."""
RESERVED_FILES = 128
"""Open files kept for everything but client connections (the store, its journal, logs…)."""
_HTTPTOOLS_MAX_URL = 65535
_LINGER_SECONDS = 0.5  # Go's rstAvoidanceDelay
_ACCEPT_FAILED = "socket.accept() out of system resource"
_ACCEPT_RETRY_SECONDS = 1  # asyncio's ACCEPT_RETRY_DELAY

UPGRADE = "pinnace.upgrade"
"""The ASGI scope extension handing an upgraded connection over: `Upgrade`."""
RESPOND = "pinnace.respond"
"""The ASGI scope extension that sends a whole answer of known length at once: `Respond`."""
Respond = Callable[[int, bytes, bytes], Awaitable[None]]
"""(status, head: its header lines but uvicorn's own (Date), each `name: value\\r\\n` with the
name in lower case and Content-Length among them, body) -> sent as uvicorn's
`http.response.start` and `http.response.body` would have sent it, in one write."""

_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"431 Request Header Fields Too Large"
)


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard one, as Go programs (kube-apiserver)
    do at start: each client connection takes one. Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # an unlimited hard limit the kernel will not grant: keep the soft one
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(open_file_limit: int) -> int:
    """How many client connections may be open with `open_file_limit` descriptors."""
    return max(open_file_limit - RESERVED_FILES, open_file_limit // 2, 1)


def protocol(
    max_connections: int, read_header_timeout: float = READ_HEADER_TIMEOUT
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with these limits (for `uvicorn.Config(http=...)`)."""
    return type(
        "LimitedHttpToolsProtocol",
        (LimitedHttpToolsProtocol,),
        {"max_connections": max_connections, "read_header_timeout": read_header_timeout},
    )


class Upgraded:
    """A connection answered 101 and handed over: what the client sends, and a way to send.
    uvicorn's parser and request cycle no longer see it."""

    def __init__(
        self, transport: asyncio.Transport, drain: Callable[[], Awaitable[object]]
    ) -> None:
        self._transport, self._drain = transport, drain
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue()

    def received(self, data: bytes) -> None:
        self._incoming.put_nowait(data)

    def lost(self) -> None:
        self._incoming.put_nowait(b"")

    async def read(self) -> bytes:
        """The client's next bytes; b"" once it has closed (and from then on)."""
        data = await self._incoming.get()
        if not data:
            self._incoming.put_nowait(b"")
        return data

    async def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            raise ConnectionResetError("the client has gone away")
        self._transport.write(data)
        await self._drain()  # while the client reads slower than the session writes

    def close(self) -> None:
        self._transport.close()


Upgrade = Callable[[int, list[tuple[bytes, bytes]]], Upgraded]
"""Answers the request with `status` (101) and these headers, and hands the connection over."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    max_connections = 10_000
    read_header_timeout = READ_HEADER_TIMEOUT
    _upgraded: Upgraded | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading_headers = True
        self._header_bytes = 0
        self._header_deadline: asyncio.TimerHandle | None = None
        self._answered_early = False
        self._client_cert: dict[str, Any] | None = None
        self._idle_since: float | None = None
        """When the connection last went idle (its last answer sent); None while a request
        is read or served."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        # The client certificate the TLS handshake verified against the client CA, if any.
        self._client_cert = transport.get_extra_info("peercert") or None
        past_cap = len(self.connections) - self.max_connections
        if past_cap > RESERVED_FILES // 2:  # a flood: no descriptor to spare for answers
            self._answered_early = True
            self.transport.close()
            return
        if past_cap > 0:
            self._answer_and_close(_over_cap(self.max_connections))
            return
        self._start_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_deadline()
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        if self._upgraded is not None:
            self._upgraded.lost()
        super().connection_lost(exc)

    def _unset_keepalive_if_required(self) -> None:
        """uvicorn calls this as bytes arrive: the connection is busy, not idle."""
        self._idle_since = None

    def on_response_complete(self) -> None:
        """uvicorn's, but the keep-alive timer is only armed when none is."""
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self._idle_since = None
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self._idle_since = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self._keep_alive_after(self.timeout_keep_alive)

    def _keep_alive_after(self, seconds: float) -> None:
        self.timeout_keep_alive_task = self.loop.call_later(seconds, self._keep_alive_due)

    def _keep_alive_due(self) -> None:
        """Close the connection if it has been idle `timeout_keep_alive`; wait for the rest
        of it if it went idle later; let go while it is busy (its answer arms it again)."""
        self.timeout_keep_alive_task = None
        if self._idle_since is None:
            return
        left = self._idle_since + self.timeout_keep_alive - self.loop.time()
        if left > 0:
            self._keep_alive_after(left)
        else:
            self.timeout_keep_alive_handler()

    def data_received(self, data: bytes) -> None:
        if self._upgraded is not None:
            self._upgraded.received(data)
            return
        if self._answered_early:
            return  # read and dropped, so closing sends no reset ahead of the answer
        if self._reading_headers:
            self._header_bytes += len(data)
        super().data_received(data)
        if not self._reading_headers or self._answered_early:
            return
        if self._header_bytes > MAX_HEADER_BYTES + HEADER_READ_SLACK:
            self._answer_and_close(_TOO_LARGE)
        elif self._header_deadline is None:
            # A request whose headers came whole never needs its deadline: it is only set
            # once they are seen to take more than one read.
            self._start_header_deadline()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._client_cert is not None:
            self.scope["extensions"] = {"tls": {"client_cert": self._client_cert}}
        if not self._reading_headers:  # the next request on a kept-alive connection
            self._reading_headers, self._header_bytes = True, 0

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        self._stop_header_deadline()
        if self._answered_early:
            return
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEADER_BYTES + HEADER_READ_SLACK:
            self._answer_and_close(_TOO_LARGE)
            return
        if self.parser.should_upgrade() and not self._should_upgrade():
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[UPGRADE] = self._upgrade
        if len(self.url) <= _HTTPTOOLS_MAX_URL:
            super().on_headers_complete()
            self._write_once()
            return
        # httptools cannot split a longer URL: let it handle a short one, then give the
        # request (not started yet) the real path and query.
        url, self.url = self.url, b"/"
        super().on_headers_complete()
        raw_path, _, query = url.partition(b"#")[0].partition(b"?")
        path = raw_path.decode("latin-1")
        self.scope["path"] = unquote(path) if "%" in path else path
        self.scope["raw_path"] = raw_path
        self.scope["query_string"] = query
        self._write_once()

    def _write_once(self) -> None:
        """The new request's cycle writes through a `_HeadWithBody`, and its scope has the
        `RESPOND` extension."""
        cycle = self.cycle
        if cycle is not None and cycle.transport is self.transport:
            extensions: dict[str, Any] = self.scope.setdefault("extensions", {})
            extensions[RESPOND] = _Whole(cycle).respond
            cycle.transport = cast(asyncio.Transport, _HeadWithBody(self.transport, cycle))

    def on_body(self, body: bytes) -> None:
        if not self._answered_early:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._answered_early:
            super().on_message_complete()

    def _unsupported_upgrade_warning(self) -> None:
        """An upgrade other than WebSocket's (kubectl's SPDY fallback) goes to the app as a
        plain request (`streaming.plain`), without uvicorn's warning for each."""

    def _upgrade(self, status: int, headers: list[tuple[bytes, bytes]]) -> Upgraded:
        """Answer the request's upgrade and hand the connection over: uvicorn's cycle is
        marked answered, so it neither writes nor waits for a response of its own."""
        cycle = self.cycle
        cycle.response_started = cycle.response_complete = True
        cycle.on_response = lambda: None
        self._upgraded = _switch(self.transport, status, headers, self.flow.drain)
        return self._upgraded

    def _start_header_deadline(self) -> None:
        self._stop_header_deadline()
        self._header_deadline = self.loop.call_later(self.read_header_timeout, self._too_slow)

    def _stop_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _too_slow(self) -> None:
        self._header_deadline = None
        if self._reading_headers and not self.transport.is_closing():
            self.transport.close()

    def _answer_and_close(self, answer: bytes) -> None:
        """Answer before the request is read, as Go's closeWriteAndWait: send, half-close,
        and close a moment later, reading what the client still sends meanwhile."""
        self._answered_early, self._reading_headers = True, False
        self._stop_header_deadline()
        if self.transport.is_closing():
            return
        self.transport.write(answer)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_SECONDS, self.transport.close)


class _Whole:
    """One request's whole answer, sent as uvicorn's RequestResponseCycle.send sends a start
    and a last body message: after a drain while the client reads slowly, nothing once it is
    gone, `connection: close` when the connection is not kept alive (and closed after the
    answer), no body for a HEAD; and the cycle left as they leave it."""

    __slots__ = ("_cycle",)

    def __init__(self, cycle: RequestResponseCycle) -> None:
        self._cycle = cycle

    async def respond(self, status: int, head: bytes, body: bytes) -> None:
        cycle = self._cycle
        if cycle.flow.write_paused and not cycle.disconnected:
            await cycle.flow.drain()
        if cycle.disconnected:
            return
        if cycle.response_started:
            raise RuntimeError("Unexpected ASGI message 'http.response.start' sent.")
        cycle.response_started = True
        cycle.waiting_for_100_continue = False
        parts = [STATUS_LINE[status]]
        for name, value in cycle.default_headers:
            parts += (name, b": ", value, b"\r\n")
        parts.append(head)
        if not cycle.keep_alive:
            parts.append(b"connection: close\r\n")
        parts.append(b"\r\n")
        if cycle.scope["method"] != "HEAD":
            parts.append(body)
        transport = cycle.transport
        if isinstance(transport, _HeadWithBody):
            transport = transport.bare
        transport.write(b"".join(parts))
        cycle.response_complete = True
        cycle.message_event.set()
        if not cycle.keep_alive:
            transport.close()
        cycle.on_response()


class _HeadWithBody:
    """The transport as one request's cycle sees it: the head of a response with a body of
    known length is held back and sent with the body's first bytes. Anything else (a watch's
    head, which its client waits for, a HEAD's, a 100 Continue) is written at once."""

    __slots__ = ("_cycle", "_head", "_started", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport, self._cycle = transport, cycle
        self._head: bytes | None = None
        self._started = False
        """Whether the response's head has been written (or held)."""

    def write(self, data: bytes) -> None:
        if not self._started and self._cycle.response_started:
            self._started = True
            if _known_length_body(self._cycle):
                self._head = data
                return
        if self._head is not None:
            data, self._head = self._head + data, None
        self._transport.write(data)

    def close(self) -> None:
        if self._head is not None:  # answered without its body: the head alone, as uvicorn
            self._transport.write(self._head)
            self._head = None
        self._transport.close()

    @property
    def bare(self) -> asyncio.Transport:
        """The connection's own transport."""
        return self._transport

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _known_length_body(cycle: RequestResponseCycle) -> bool:
    """Whether the response just started has a Content-Length and a body to send."""
    return (
        cycle.chunked_encoding is False
        and cycle.expected_content_length > 0
        and cycle.scope["method"] != "HEAD"
    )


def _switch(
    transport: asyncio.Transport,
    status: int,
    headers: list[tuple[bytes, bytes]],
    drain: Callable[[], Awaitable[object]],
) -> Upgraded:
    """Answer `status` (101) with `headers` and hand the connection over."""
    lines = [f"HTTP/1.1 {status} Switching Protocols\r\n".encode()]
    lines += [name + b": " + value + b"\r\n" for name, value in headers]
    transport.write(b"".join(lines) + b"\r\n")
    return Upgraded(transport, drain)


class CertifiedWSProtocol(WSProtocol):
    """uvicorn's WebSocket protocol (pods/exec …), its scope carrying the client certificate
    as the HTTP protocol's does, for authentication, and the `UPGRADE` extension: a handshake
    answered through it is no longer uvicorn's WebSocket but the app's bytes."""

    _upgraded: Upgraded | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._client_cert: dict[str, Any] | None = transport.get_extra_info("peercert") or None

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        # The ASGI task has not run yet: it sees these.
        extensions = cast(dict[str, Any], self.scope["extensions"])
        if self._client_cert is not None:
            extensions["tls"] = {"client_cert": self._client_cert}
        extensions[UPGRADE] = self._upgrade

    def data_received(self, data: bytes) -> None:
        if self._upgraded is not None:
            self._upgraded.received(data)
            return
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._upgraded is not None:
            self._upgraded.lost()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        if self._upgraded is not None:  # no WebSocket of uvicorn's to close
            self.transport.close()
            return
        super().shutdown()

    def _upgrade(self, status: int, headers: list[tuple[bytes, bytes]]) -> Upgraded:
        """Answer the handshake with these headers (another server's, relayed) and hand the
        connection over; uvicorn takes the handshake as done, so it answers nothing more."""
        self.handshake_complete = True
        self._upgraded = _switch(self.transport, status, headers, self.writable.wait)
        return self._upgraded


def _over_cap(max_connections: int) -> bytes:
    error = StatusError(
        503,
        "ServiceUnavailable",
        f"the server has {max_connections} connections open, as many as it takes; please "
        "try again later",
        {"retryAfterSeconds": 1},
    )
    body = encode_json(error.status())
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        "Cache-Control: no-cache, private\r\nRetry-After: 1\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def quiet_accept_failures(loop: asyncio.AbstractEventLoop) -> None:
    """Log a failed accept in one line, once per retry, instead of a traceback for each
    connection waiting; everything else goes to the handler in place."""
    previous = loop.get_exception_handler()
    last_logged: list[float] = []

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != _ACCEPT_FAILED:
            if previous is None:
                loop.default_exception_handler(context)
            else:
                previous(loop, context)
            return
        now = loop.time()
        if last_logged and now - last_logged[0] < _ACCEPT_RETRY_SECONDS:
            return
        last_logged[:] = [now]
        log.warning(
            "cannot accept connections (%s): retrying in %ds",
            context.get("exception"),
            _ACCEPT_RETRY_SECONDS,
        )

    loop.set_exception_handler(handle)


class Server(uvicorn.Server):
    """uvicorn's server, with the process owning the signals: uvicorn's own handling raises
    the signal again when it stops, which would end the process before it has cleaned up
    (`pinnace up` closing its store, `pinnace agent` releasing its nodes)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        self.should_exit = True
