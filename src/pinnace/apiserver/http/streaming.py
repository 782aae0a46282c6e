"""The streaming subresources over WebSockets: pods/exec and pods/attach, as kube-apiserver
v1.32 serves them, and pods/portforward (`portforward`).

- A client offering `v5.channel.k8s.io` (kubectl 1.30+) is served by kube-apiserver's own
  stream translator (TranslateStreamCloseWebsocketRequests): the upgrade succeeds once the
  pod and container are found, and a failure to start the session on the node comes as an
  InternalError Status on the error channel (`unable to upgrade connection: container not
  found ("app")`).
- Any other (the Python client's `v4.channel.k8s.io`) is proxied to the kubelet's WebSocket
  server: a failure to start is the kubelet's plain-text HTTP 500 instead of the upgrade.

Either way the session ends with the command's Status on the error channel and a close: its
exit code, or the internal error of a command the runtime could not start (a program its
image lacks: `pinnace.kubelet.image_files`), wrapped once more by the translator.

A request for exec or attach that is not a WebSocket one is SPDY/3.1 (kubectl's fallback when
the WebSocket upgrade fails, `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`, older clients), which
kube-apiserver proxies to the kubelet's remotecommand server
(pkg/kubelet/cri/streaming/remotecommand/httpstream.go): after the same checks, the
X-Stream-Protocol-Version handshake (v4, v3, v2 or the first `channel.k8s.io`), a 101, then
one SPDY stream per `streamType` the client opens (error, stdin, stdout, stderr, resize); the
command runs once all it should open are there, and its Status (JSON from v4, the error's
text before) goes on the error stream. Port-forward over plain SPDY (`portforward.k8s.io`) is
the kubelet's too: the client's stream pairs, as in the tunnelled kind (`portforward`).

The API server serves the sessions of the nodes it runs itself (`serve_session`, `plain_session`,
`plain_forward`, with the node pool as the `StreamSource`); a pod on a node of a `pinnace
agent` process is proxied to the process's kubelet endpoint (`kubelet_proxy`), which serves
the same sessions with the same functions (`pinnace.kubelet.server`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.streams import (
    ERROR,
    STDERR,
    STDIN,
    STDOUT,
    ExecFailed,
    Session,
    StreamError,
    StreamIO,
    StreamOptions,
    Unreachable,
)
from pinnace.apiserver.http import kubelet_proxy, params, portforward, spdy
from pinnace.apiserver.http.channels import (
    REMOTE_COMMAND,
    STREAM_CLOSE,
    SUCCESS,
    V1,
    V2,
    V3,
    V4,
    V5,
    Framing,
    Inbox,
    exec_failed,
    exit_status,
    internal_error,
    negotiate,
    unsupported,
)
from pinnace.apiserver.http.request import Query, Request
from pinnace.apiserver.http.responses import TEXT_PLAIN, Response
from pinnace.apiserver.http.routes import ResourceTarget, method_not_allowed
from pinnace.apiserver.http.websocket import Refused, Relayed, WebSocket
from pinnace.apiserver.logs import remote_node
from pinnace.apiserver.streams import StreamSource, source, stream_pod

if TYPE_CHECKING:
    from pinnace.apiserver.http.connections import Upgraded
    from pinnace.apiserver.server import APIServer

STREAMING = ("exec", "attach", "portforward")
"""The subresources of pods served here."""
SPDY_NOT_SERVED = (
    "unable to upgrade: this server cannot hand a connection over to SPDY "
    "(`pinnace up`'s can); use WebSockets"
)
PROXY_NOT_SERVED = (
    "unable to upgrade: this server cannot hand a connection over to the node's kubelet "
    "(`pinnace up`'s can)"
)
SPDY_REMOTE_COMMAND = (V4, V3, V2, V1)
"""What the kubelet's remotecommand server speaks over SPDY, in its order."""
Status = dict[str, Any]
SESSION_START = 0.05
"""Seconds between the 101 and a session's first frame. kube-apiserver accepts the client's
WebSocket before it dials the kubelet, whose runtime then starts the process: tens of
milliseconds pass before any output. client-go's executor (kubectl's) relies on that gap
without knowing it: its read loop starts before it has made its streams and drops a frame for
a stream not yet made ("Unknown stream id 1, discarding message", then "error: closed all
streams"), so a session that answered at once lost its output whenever kubectl's goroutine was
descheduled for a moment."""


def is_streaming(target: ResourceTarget) -> bool:
    kind = target.kind
    return not kind.group and kind.plural == "pods" and target.subresource in STREAMING


async def serve(server: APIServer, ws: WebSocket, request: Request, target: ResourceTarget) -> None:
    """A WebSocket request for `target`, one of the streaming subresources."""
    if not is_streaming(target):
        raise status.bad_request(
            "WebSocket requests are served for pods/exec, pods/attach and pods/portforward only"
        )
    subresource = target.subresource
    if subresource == "portforward":
        pod, _ = await stream_pod(server, target.namespace, target.name, None)
        node = await remote_node(server, pod)
        if node is None:
            await portforward.serve(source(server), ws, request.query, pod)
            return
        await _proxy_websocket(server, ws, request, node, subresource, pod, StreamOptions())
        return
    options = stream_options(request.query, subresource)
    pod, container = await stream_pod(server, target.namespace, target.name, options.container)
    options = dataclasses.replace(options, container=container)
    node = await remote_node(server, pod)
    if node is None:
        await serve_session(source(server), ws, subresource, pod, options)
    else:
        await _proxy_websocket(server, ws, request, node, subresource, pod, options)


async def serve_session(
    node: StreamSource, ws: WebSocket, subresource: str, pod: Object, options: StreamOptions
) -> None:
    """An exec or attach session over a WebSocket, served by `node`."""
    protocol = negotiate(ws.subprotocols, REMOTE_COMMAND, translated=True)
    if protocol is None:
        raise unsupported(ws.subprotocols)
    framing = Framing(protocol)
    translated = protocol == V5
    if translated:
        await _open(ws, framing, options)
    started = _start(node, subresource, pod, options, translated)
    if not translated:
        await _open(ws, framing, options)
    outcome = (
        started
        if isinstance(started, dict)
        else await _outcome(_Channels(ws, framing, options), started, options, translated)
    )
    if outcome is not None:  # else the client went away
        await _end(ws, framing, outcome)


async def _outcome(
    channels: _Channels | _SpdyStreams, session: Session, options: StreamOptions, translated: bool
) -> Status | None:
    """Run the session (`_run`); the Status it ends with, None when the client went away."""
    try:
        code = await _run(channels, session)
    except ExecFailed as e:
        return exec_failed(str(e), translated)
    if code is None:
        return None
    return SUCCESS if code == 0 else exit_status(options.command, code, translated)


async def _end(ws: WebSocket, framing: Framing, outcome: Status) -> None:
    """The session's outcome on the error channel, and the close."""
    data = framing.status(outcome)
    if data:
        await ws.send(framing.encode(ERROR, data))
    await ws.close()


async def _proxy_websocket(
    server: APIServer,
    ws: WebSocket,
    request: Request,
    node: Object,
    subresource: str,
    pod: Object,
    options: StreamOptions,
) -> None:
    """Relay the WebSocket to the node's kubelet endpoint (`_proxied`). A kubelet that
    cannot be dialled is, to a client kube-apiserver's translator serves (v5), the dial's
    error on the error channel; to any other, the proxy's."""
    try:
        answer = await _proxied(server, request, node, subresource, pod, options)
    except Unreachable as e:
        protocol = negotiate(ws.subprotocols, REMOTE_COMMAND, translated=True)
        if subresource == "portforward" or protocol != V5:
            raise _dial_error(e) from None
        framing = Framing(protocol)
        await _open(ws, framing, options)
        await _end(ws, framing, internal_error(str(e)))
        return
    if answer.upgraded is None:
        raise Relayed(answer)
    assert request.upgrade is not None  # `_proxied` answers a 101 to an upgradable request only
    connection = request.upgrade(answer.status, kubelet_proxy.switching(answer.headers))
    ws.handed_over()
    await answer.upgraded(connection)


def _dial_error(e: Unreachable) -> StatusError:
    """The proxy's dial, as kube-apiserver reports it."""
    return StatusError(500, "", f"error dialing backend: {e}")


def _start(
    node: StreamSource,
    subresource: str,
    pod: Object,
    options: StreamOptions,
    translated: bool,
) -> Session | Status:
    """The node's session; when it cannot start one, the Status kube-apiserver's translator
    sends instead (`translated`), or the kubelet's refusal of the upgrade (raised)."""
    start = node.exec if subresource == "exec" else node.attach
    try:
        return start(pod, options)
    except Unreachable as e:
        if not translated:
            raise _dial_error(e) from None
        return internal_error(str(e))
    except StreamError as e:
        if not translated:
            raise Refused(str(e), 500) from None
        return internal_error(f"unable to upgrade connection: {e}")


async def plain(server: APIServer, request: Request, target: ResourceTarget) -> Response:
    """A streaming subresource asked for without a WebSocket upgrade: kube-apiserver's checks
    first (a missing pod or container is what the client should hear of), then the upgrade
    to SPDY/3.1 the kubelet's streaming server makes (`_spdy_upgrade`); a 400 where the
    server cannot hand the connection over (in process)."""
    if request.method not in ("GET", "POST"):
        raise method_not_allowed()
    subresource = target.subresource
    if subresource == "portforward":
        portforward.ports(request.query)
        pod, _ = await stream_pod(server, target.namespace, target.name, None)
        options = StreamOptions()
    else:
        options = stream_options(request.query, subresource)
        pod, container = await stream_pod(server, target.namespace, target.name, options.container)
        options = dataclasses.replace(options, container=container)
    node = await remote_node(server, pod)
    _require_upgrade(request)
    if node is not None:
        return await _proxy_plain(server, request, node, subresource, pod, options)
    if subresource == "portforward":
        return plain_forward(source(server), request, pod)
    return plain_session(source(server), request, subresource, pod, options)


def plain_session(
    node: StreamSource, request: Request, subresource: str, pod: Object, options: StreamOptions
) -> Response:
    """An exec or attach session over SPDY, served by `node`: the 101 that starts it, or the
    kubelet's refusal."""
    try:
        started = _start(node, subresource, pod, options, False)
    except Refused as e:
        return e.response()
    assert not isinstance(started, dict)  # untranslated: a failure to start raised

    async def execute(protocol: str, connection: Upgraded) -> None:
        await _spdy_session(connection, protocol, options, started)

    return _spdy_upgrade(request, SPDY_REMOTE_COMMAND, execute)


def plain_forward(node: StreamSource, request: Request, pod: Object) -> Response:
    """Port-forward over SPDY, served by `node`."""

    async def forward(protocol: str, connection: Upgraded) -> None:
        await portforward.plain(node, pod, connection)

    return _spdy_upgrade(request, (portforward.SPDY_PROTOCOL,), forward)


async def _proxy_plain(
    server: APIServer,
    request: Request,
    node: Object,
    subresource: str,
    pod: Object,
    options: StreamOptions,
) -> Response:
    """The SPDY upgrade proxied to the node's kubelet endpoint (`_proxied`)."""
    try:
        return await _proxied(server, request, node, subresource, pod, options)
    except Unreachable as e:
        raise _dial_error(e) from None


async def _proxied(
    server: APIServer,
    request: Request,
    node: Object,
    subresource: str,
    pod: Object,
    options: StreamOptions,
) -> Response:
    """The client's upgrade request (a WebSocket or SPDY one) sent on to the node's kubelet
    endpoint (`kubelet_proxy`): the kubelet's 101, whose `upgraded` relays the connection
    both ways, or its refusal as it is; Unreachable when the kubelet cannot be dialled."""
    if request.upgrade is None:
        raise status.bad_request(PROXY_NOT_SERVED)
    path = kubelet_proxy.location(subresource, pod, options.container, request)
    answer = await kubelet_proxy.dial(server, node, path, request)
    if answer.status != 101:
        return kubelet_proxy.refusal(answer)

    async def relay(connection: Upgraded) -> None:
        await kubelet_proxy.relay(answer, connection)

    return Response(101, headers=answer.headers, upgraded=relay)


def _require_upgrade(request: Request) -> None:
    """kube-apiserver's proxy to the kubelet takes upgrade requests only (UpgradeRequired:
    httpstream.IsUpgradeRequest, a Connection header naming Upgrade)."""
    if "upgrade" not in request.header("connection").lower():
        raise status.bad_request("Upgrade request required")


def _spdy_upgrade(
    request: Request,
    supported: tuple[str, ...],
    speak: Callable[[str, Upgraded], Awaitable[None]],
) -> Response:
    """The kubelet's handshake (httpstream.Handshake: the client's first protocol the server
    speaks) and SPDY upgrade (the 101 `speak`s the protocol), or their plain-text refusals."""
    offered = [p.strip() for p in request.header("x-stream-protocol-version").split(",")]
    offered = [p for p in offered if p]
    if not offered:
        return _plain_error(400, "unable to upgrade: X-Stream-Protocol-Version is required")
    protocol = next((p for p in offered if p in supported), None)
    if protocol is None:
        message = (
            "unable to upgrade: unable to negotiate protocol: client supports "
            f"[{' '.join(offered)}], server accepts [{' '.join(supported)}]"
        )
        accepted = [("X-Accepted-Stream-Protocol-Versions", p) for p in supported]
        return dataclasses.replace(_plain_error(403, message), headers=accepted)
    connection = [t.strip().lower() for t in request.header("connection").split(",")]
    if "upgrade" not in connection or request.header("upgrade").lower() != "spdy/3.1":
        return _plain_error(400, "unable to upgrade: missing upgrade headers in request")
    if request.upgrade is None:
        raise status.bad_request(SPDY_NOT_SERVED)
    headers = [
        ("X-Stream-Protocol-Version", protocol),
        ("Connection", "Upgrade"),
        ("Upgrade", "SPDY/3.1"),
    ]

    async def upgraded(connection: Upgraded) -> None:
        await speak(protocol, connection)

    return Response(101, headers=headers, upgraded=upgraded)


def _plain_error(code: int, message: str) -> Response:
    """Go's http.Error, as the kubelet answers a failed handshake."""
    return Response(code, message.encode() + b"\n", TEXT_PLAIN)


async def _spdy_session(
    connection: Upgraded, protocol: str, options: StreamOptions, session: Session
) -> None:
    """Take the client's streams, run the session once all it should open are there, then
    send the outcome on the error stream, end every stream and go away."""
    streams = _SpdyStreams(connection, options, protocol)
    try:
        outcome = await _outcome(streams, streams.started(session), options, False)
        if outcome is not None:
            await streams.finish(Framing(protocol).status(outcome))
    except (OSError, spdy.ProtocolError):
        pass  # the client went away, or spoke something else: nothing to tell it
    finally:
        connection.close()


class _SpdyStreams:
    """The session's streams as SPDY streams, each opened by the client with a `streamType`
    header (remotecommand's httpstream.go: waitForStreams)."""

    def __init__(self, connection: Upgraded, options: StreamOptions, protocol: str) -> None:
        self.connection, self.options = connection, options
        self.spdy = spdy.SpdySession(connection.write)
        self.ids: dict[str, int] = {}
        self.expected = {"error"} | {
            name
            for name, wanted in (
                ("stdin", options.stdin),
                ("stdout", options.stdout),
                ("stderr", options.stderr),
                # v2 and the first protocol have no resize stream.
                ("resize", options.tty and protocol in (V4, V3)),
            )
            if wanted
        }
        self.ready = asyncio.Event()
        self.stdin = Inbox(ended=not options.stdin)

    def started(self, session: Session) -> Session:
        async def once_ready(io: StreamIO) -> int:
            await self.ready.wait()
            return await session(io)

        return once_ready

    async def read(self) -> bytes:
        return await self.stdin.read()

    async def write(self, stream: int, data: bytes) -> None:
        name = "stdout" if stream == STDOUT else "stderr"
        if data and name in self.ids:
            await self.spdy.data(self.ids[name], data)

    async def receive(self) -> None:
        """Take the client's frames until it closes: streams opened (each answered at once),
        stdin's data and end; a resize stream's sizes are read and dropped."""
        while data := await self.connection.read():
            for event in self.spdy.feed(data):
                await self._take(event)
        self.stdin.put(b"")

    async def _take(self, event: spdy.Event) -> None:
        stdin_id = self.ids.get("stdin")
        if isinstance(event, spdy.Opened):
            kind = {k.lower(): v for k, v in event.headers.items()}.get("streamtype", "")
            await self.spdy.reply(event.stream)
            if kind in self.expected:
                self.ids[kind] = event.stream
            if self.expected <= self.ids.keys():
                self.ready.set()
        elif isinstance(event, spdy.Data) and event.stream == stdin_id:
            if event.data:
                self.stdin.put(event.data)
            if event.fin:
                self.stdin.put(b"")
        elif isinstance(event, spdy.Reset) and event.stream == stdin_id:
            self.stdin.put(b"")
        elif isinstance(event, spdy.Ping):
            await self.spdy.pong(event)

    async def finish(self, status: bytes) -> None:
        """The outcome on the error stream, the server's half of each stream ended, GOAWAY
        (spdystream's Close, as the kubelet closes the connection)."""
        if status:
            await self.spdy.data(self.ids["error"], status)
        for stream in sorted(self.ids.values()):
            await self.spdy.data(stream, b"", fin=True)
        await self.spdy.goaway(max(self.ids.values(), default=0))


def stream_options(query: Query, subresource: str) -> StreamOptions:
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
    lowest channel it reads; then give it `SESSION_START` to set its streams up."""
    await ws.accept(framing.protocol)
    lowest = STDOUT if options.stdout else STDERR if options.stderr else ERROR
    await ws.send(framing.encode(lowest, b""))
    await asyncio.sleep(SESSION_START)


class _Channels:
    """The session's streams over the WebSocket's channels."""

    def __init__(self, ws: WebSocket, framing: Framing, options: StreamOptions) -> None:
        self.ws, self.framing, self.options = ws, framing, options
        self.stdin = Inbox(ended=not options.stdin)

    async def read(self) -> bytes:
        return await self.stdin.read()

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
                self.stdin.put(b"")
            elif channel == STDIN and self.options.stdin and data:
                self.stdin.put(data)
        self.stdin.put(b"")


async def _run(channels: _Channels | _SpdyStreams, session: Session) -> int | None:
    """Run the session until it ends (its exit status) or the client goes away (None)."""
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
