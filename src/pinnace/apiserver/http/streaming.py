"""The streaming subresources over WebSockets: pods/exec and pods/attach, as kube-apiserver
v1.32 serves them, and pods/portforward (`portforward`).

- A client offering `v5.channel.k8s.io` (kubectl 1.30+) is served by kube-apiserver's own
  stream translator (TranslateStreamCloseWebsocketRequests): the upgrade succeeds once the
  pod and container are found, and a failure to start the session on the node comes as an
  InternalError Status on the error channel (`unable to upgrade connection: container not
  found ("app")`).
- Any other (the Python client's `v4.channel.k8s.io`) is proxied to the kubelet's WebSocket
  server: a failure to start is the kubelet's plain-text HTTP 500 instead of the upgrade.

Either way the session ends with the command's Status on the error channel and a close.
SPDY (kubectl's fallback when the WebSocket upgrade fails, older clients) is not served: a
request that is not a WebSocket one is answered after the same checks with a 400.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.streams import (
    ERROR,
    STDERR,
    STDIN,
    STDOUT,
    Session,
    StreamError,
    StreamOptions,
    Unreachable,
)
from pinnace.apiserver.http import params, portforward
from pinnace.apiserver.http.channels import (
    REMOTE_COMMAND,
    STREAM_CLOSE,
    SUCCESS,
    V5,
    Framing,
    exit_status,
    internal_error,
    negotiate,
    unsupported,
)
from pinnace.apiserver.http.request import Query, Request
from pinnace.apiserver.http.responses import Response
from pinnace.apiserver.http.routes import ResourceTarget, method_not_allowed
from pinnace.apiserver.http.websocket import Refused, WebSocket
from pinnace.apiserver.streams import source, stream_pod

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

STREAMING = ("exec", "attach", "portforward")
"""The subresources of pods served here."""
SPDY_NOT_SERVED = (
    "unable to upgrade: Pinnace serves streams over WebSockets only "
    "(kubectl 1.30 and later, the Python client), not SPDY"
)
Status = dict[str, Any]


def is_streaming(target: ResourceTarget) -> bool:
    kind = target.kind
    return not kind.group and kind.plural == "pods" and target.subresource in STREAMING


async def serve(server: APIServer, ws: WebSocket, query: Query, target: ResourceTarget) -> None:
    """A WebSocket request for `target`, one of the streaming subresources."""
    if not is_streaming(target):
        raise status.bad_request(
            "WebSocket requests are served for pods/exec, pods/attach and pods/portforward only"
        )
    if target.subresource == "portforward":
        pod, _ = await stream_pod(server, target.namespace, target.name, None)
        await portforward.serve(server, ws, query, pod)
        return
    options = _options(query, target.subresource)
    pod, container = await stream_pod(server, target.namespace, target.name, options.container)
    options = dataclasses.replace(options, container=container)
    protocol = negotiate(ws.subprotocols, REMOTE_COMMAND, translated=True)
    if protocol is None:
        raise unsupported(ws.subprotocols)
    framing = Framing(protocol)
    translated = protocol == V5
    if translated:
        await _open(ws, framing, options)
    session = _start(server, target.subresource, pod, options, translated)
    if not translated:
        await _open(ws, framing, options)
    if isinstance(session, dict):
        outcome = session
    else:
        code = await _run(ws, framing, options, session)
        if code is None:
            return  # the client went away
        outcome = SUCCESS if code == 0 else exit_status(options.command, code, translated)
    data = framing.status(outcome)
    if data:
        await ws.send(framing.encode(ERROR, data))
    await ws.close()


def _start(
    server: APIServer, subresource: str, pod: Object, options: StreamOptions, translated: bool
) -> Session | Status:
    """The node's session; when it cannot start one, the Status kube-apiserver's translator
    sends instead (`translated`), or the kubelet's refusal of the upgrade (raised)."""
    node = source(server)
    start = node.exec if subresource == "exec" else node.attach
    try:
        return start(pod, options)
    except Unreachable as e:
        if not translated:  # the proxy's dial, as kube-apiserver reports it
            raise StatusError(500, "", f"error dialing backend: {e}") from None
        return internal_error(str(e))
    except StreamError as e:
        if not translated:
            raise Refused(str(e), 500) from None
        return internal_error(f"unable to upgrade connection: {e}")


async def refuse(server: APIServer, request: Request, target: ResourceTarget) -> Response:
    """A streaming subresource asked for without a WebSocket upgrade: kube-apiserver's checks
    first (a missing pod or container is what the client should hear of), then 400."""
    if request.method not in ("GET", "POST"):
        raise method_not_allowed()
    if target.subresource == "portforward":
        portforward.ports(request.query)
        await stream_pod(server, target.namespace, target.name, None)
    else:
        options = _options(request.query, target.subresource)
        await stream_pod(server, target.namespace, target.name, options.container)
    raise status.bad_request(SPDY_NOT_SERVED)


def _options(query: Query, subresource: str) -> StreamOptions:
    """PodExecOptions or PodAttachOptions from the query, as kube-apiserver converts them
    (booleans as Go's query conversion reads them: anything but 0 and false is true)."""
    tty = bool(params.go_bool(query, "tty"))
    return StreamOptions(
        container=params.first(query, "container") or "",
        command=tuple(query.get("command") or ()) if subresource == "exec" else (),
        stdin=bool(params.go_bool(query, "stdin")),
        stdout=bool(params.go_bool(query, "stdout")),
        # The kubelet drops stderr with a tty: the terminal is one stream.
        stderr=bool(params.go_bool(query, "stderr")) and not tty,
        tty=tty,
    )


async def _open(ws: WebSocket, framing: Framing, options: StreamOptions) -> None:
    """Accept, and tell the client the streams are there with an empty message on the
    lowest channel it reads."""
    await ws.accept(framing.protocol)
    lowest = STDOUT if options.stdout else STDERR if options.stderr else ERROR
    await ws.send(framing.encode(lowest, b""))


class _Channels:
    """The session's streams over the WebSocket's channels."""

    def __init__(self, ws: WebSocket, framing: Framing, options: StreamOptions) -> None:
        self.ws, self.framing, self.options = ws, framing, options
        self._stdin: asyncio.Queue[bytes] = asyncio.Queue()
        self._stdin_ended = not options.stdin

    async def read(self) -> bytes:
        if self._stdin_ended and self._stdin.empty():
            return b""
        data = await self._stdin.get()
        self._stdin_ended = self._stdin_ended or not data
        return data

    async def write(self, stream: int, data: bytes) -> None:
        wanted = self.options.stdout if stream == STDOUT else self.options.stderr
        if wanted and data:
            await self.ws.send(self.framing.encode(stream, data))

    async def receive(self) -> None:
        """Take the client's messages until it closes: stdin's data and end (resizes are
        read and dropped: a simulated terminal has no size)."""
        while (message := await self.ws.receive()) is not None:
            decoded = self.framing.decode(message)
            if decoded is None:
                continue
            channel, data = decoded
            if channel == STREAM_CLOSE and self.framing.closes and data[:1] == bytes([STDIN]):
                self._stdin.put_nowait(b"")
            elif channel == STDIN and self.options.stdin and data:
                self._stdin.put_nowait(data)
        self._stdin.put_nowait(b"")


async def _run(
    ws: WebSocket, framing: Framing, options: StreamOptions, session: Session
) -> int | None:
    """Run the session until it ends (its exit status) or the client goes away (None)."""
    channels = _Channels(ws, framing, options)
    running = asyncio.ensure_future(session(channels))
    receiving = asyncio.ensure_future(channels.receive())
    try:
        await asyncio.wait({running, receiving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (running, receiving):
            task.cancel()
        await asyncio.gather(running, receiving, return_exceptions=True)
    if running.cancelled():
        return None
    error = running.exception()
    if isinstance(error, OSError):  # uvicorn's ClientDisconnected: it went away mid-write
        return None
    if error is not None:
        raise error
    return running.result()
