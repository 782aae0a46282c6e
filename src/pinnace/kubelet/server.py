"""The kubelet API of a `pinnace agent` process: one endpoint for all its nodes, where the API
server reaches them (pkg/kubelet/server/server.go's /containerLogs).

`POST /run/<namespace>/<pod>/<container>?command=…` runs a command in a pod's container as the
kubelet's /run does, answering with its stdout, stderr and exit code as JSON (Pinnace's form:
the kubelet's answer is the combined output alone; `pinnace.apiserver.kubelets.RUN_PATH`).

A kubelet serves its node alone on port 10250; an agent process serves every node it runs on
one port of its own, which each Node publishes (its Hostname address and
`daemonEndpoints.kubeletEndpoint.Port`, `NodeConfig.kubelet_endpoint`). A pod's path names its
node: the process answers for the pods bound to any of its nodes. The node's own paths
(/stats/summary, /metrics/resource, /metrics/cadvisor, /metrics, `kubelet.endpoints`) are
answered for the node the request's `Pinnace-Node` header names, as is Pinnace's own
`POST /pinnace/faults/<fault>` (`pinnace node stop|start|partition|slow`, relayed by the API
server; `kubelet.faults`).

Over TLS (the agent's kubeconfig names an https server) the endpoint serves a self-signed
certificate made at start, as a kubelet without --tls-cert-file does, and requires a client
certificate signed by the cluster's CA (the one the kubeconfig trusts), such as the API
server's kubelet client certificate. A kubelet would also ask the API server whether the
certificate's user may read the node's logs (SubjectAccessReview on nodes/log); this endpoint
trusts any certificate of the cluster's CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import uvicorn

from pinnace.api import status
from pinnace.api.status import StatusError
from pinnace.api.streams import STDERR, STDOUT, StreamError, StreamOptions
from pinnace.apiserver.auth import certs
from pinnace.apiserver.http.connections import Server
from pinnace.apiserver.kubelets import RUN_PATH
from pinnace.apiserver.logs import log_options
from pinnace.client.kubelet import FAULTS_PATH, NODE_HEADER
from pinnace.kubelet.endpoints import PATHS
from pinnace.kubelet.faults import inject
from pinnace.kubelet.pool import NodeAgentPool

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
TEXT = [(b"content-type", b"text/plain; charset=utf-8")]


class KubeletServer:
    """The process's kubelet endpoint, on a socket bound when made (so its port is known
    before the nodes register), serving from `start` to `stop`."""

    def __init__(self, address: str, port: int, tls: ssl.SSLContext | None) -> None:
        """`tls`: the trust of the agent's kubeconfig, whose CAs sign the clients allowed;
        None serves plain HTTP to anyone."""
        self.pool: NodeAgentPool | None = None
        """The nodes served, set once the pool is made."""
        self.address = address
        self._socket = socket.create_server((address, port))
        self.port: int = self._socket.getsockname()[1]
        self._tls = tls
        self._files: tempfile.TemporaryDirectory[str] | None = None
        self._server: Server | None = None
        self._serving: asyncio.Task[None] | None = None

    @property
    def endpoint(self) -> tuple[str, int]:
        """Where the API server reaches the process (the machine's name when bound to every
        address), for the Nodes to publish."""
        unspecified = self.address in ("", "0.0.0.0", "::")
        return (socket.gethostname() if unspecified else self.address), self.port

    async def start(self) -> None:
        self._server = Server(self._config())
        self._serving = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started and not self._serving.done():
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self._server is not None and self._serving is not None:
            self._server.stop()
            await self._serving
        self._socket.close()
        if self._files is not None:
            self._files.cleanup()

    def _config(self) -> uvicorn.Config:
        options: dict[str, Any] = {}
        if self._tls is not None:
            self._files = tempfile.TemporaryDirectory(prefix="pinnace-kubelet-")
            directory = Path(self._files.name)
            serving = certs.issue_serving(
                certs.ensure_ca(directory), directory, certs.serving_hosts(self.address)
            )
            clients = directory / "client-ca.crt"
            clients.write_text(
                "".join(ssl.DER_cert_to_PEM_cert(c) for c in self._tls.get_ca_certs(True))
            )
            options = {
                "ssl_certfile": str(serving.cert),
                "ssl_keyfile": str(serving.key),
                "ssl_ca_certs": str(clients),
                "ssl_cert_reqs": ssl.CERT_REQUIRED,
            }
        return uvicorn.Config(
            self._app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=1,
            **options,
        )

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"].strip("/").split("/")
        if scope["method"] == "GET" and scope["path"] in PATHS:
            await self._monitoring(scope, send)
            return
        fault_path, _, fault = scope["path"].rpartition("/")
        if scope["method"] == "POST" and fault_path == FAULTS_PATH:
            await self._fault(scope, send, unquote(fault))
            return
        if scope["method"] == "POST" and len(parts) == 4 and f"/{parts[0]}" == RUN_PATH:
            await self._run(scope, send, *(unquote(p) for p in parts[1:]))
            return
        if scope["method"] != "GET" or len(parts) != 4 or parts[0] != "containerLogs":
            await _answer(send, 404, "404 page not found\n")
            return
        namespace, name, container = (unquote(p) for p in parts[1:])
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        try:
            chunks = self._container_log(namespace, name, container, query)
        except StatusError as e:
            await _answer(send, e.code, e.message)
            return
        await _stream(send, receive, chunks)

    async def _fault(self, scope: Scope, send: Send, fault: str) -> None:
        """`pinnace node FAULT` of the node the Pinnace-Node header names, relayed by the API
        server: the node's state, or the Status of the refusal, as JSON."""
        node = _node_of(scope)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        code, answer = 200, {}
        try:
            if self.pool is None or not node:
                raise StatusError(400, "BadRequest", f"no {NODE_HEADER} header: which node")
            answer = await inject(self.pool, node, fault, query)
        except StatusError as e:
            code, answer = e.code, e.status()
        await _json(send, code, answer)

    async def _run(
        self, scope: Scope, send: Send, namespace: str, name: str, container: str
    ) -> None:
        """The kubelet's getRun: the command run to its end in the container; its output and
        exit code, or the Status of the refusal, as JSON."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        command = tuple(query.get("command") or ())
        pod = self.pool.pod(namespace, name) if self.pool is not None else None
        code, answer = 200, {}
        try:
            if self.pool is None or pod is None:
                raise StatusError(404, "NotFound", f'pod "{name}" does not exist')
            options = StreamOptions(container, command, stdout=True, stderr=True)
            try:
                session = self.pool.exec(pod, options)
            except StreamError as e:
                raise status.internal_error(str(e)) from None
            output = _Output()
            exit_code = await session(output)
            answer = {
                "stdout": output.text(STDOUT),
                "stderr": output.text(STDERR),
                "exitCode": exit_code,
            }
        except StatusError as e:
            code, answer = e.code, e.status()
        await _json(send, code, answer)

    async def _monitoring(self, scope: Scope, send: Send) -> None:
        """/stats/summary and the metrics of the node the Pinnace-Node header names."""
        node = _node_of(scope)
        if self.pool is None or not node:
            await _answer(send, 400, f"no {NODE_HEADER} header: which node's {scope['path']}")
            return
        try:
            body, content_type = self.pool.proxy(node, scope["path"])
        except StatusError as e:
            await _answer(send, e.code, e.message)
            return
        head = [(b"content-type", content_type.encode())]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": body})

    def _container_log(
        self, namespace: str, name: str, container: str, query: dict[str, list[str]]
    ) -> AsyncIterator[str]:
        """The kubelet's getContainerLogs."""
        pod = self.pool.pod(namespace, name) if self.pool is not None else None
        if pod is None:
            raise StatusError(404, "NotFound", f'pod "{name}" does not exist\n')
        return self.pool.read_log(pod, container, log_options(query))  # type: ignore[union-attr]


def _node_of(scope: Scope) -> str:
    """The node the request's Pinnace-Node header names ("" when none)."""
    headers = dict(scope.get("headers") or [])
    return headers.get(NODE_HEADER.lower().encode(), b"").decode("latin-1")


class _Output:
    """A /run command's streams: no stdin, its stdout and stderr kept."""

    def __init__(self) -> None:
        self.written = {STDOUT: bytearray(), STDERR: bytearray()}

    async def read(self) -> bytes:
        return b""

    async def write(self, stream: int, data: bytes) -> None:
        self.written[stream] += data

    def text(self, stream: int) -> str:
        """What went to `stream`, bytes that are not UTF-8 kept as surrogates (JSON carries
        them as escapes, and the API server's encoding gives them back)."""
        return self.written[stream].decode("utf-8", "surrogateescape")


async def _json(send: Send, code: int, answer: dict[str, Any]) -> None:
    head = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": code, "headers": head})
    await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


async def _answer(send: Send, code: int, text: str) -> None:
    await send({"type": "http.response.start", "status": code, "headers": TEXT})
    await send({"type": "http.response.body", "body": text.encode()})


async def _stream(send: Send, receive: Receive, chunks: AsyncIterator[str]) -> None:
    """Send the log as it comes, until it ends or the API server goes away."""

    async def copy() -> None:
        await send({"type": "http.response.start", "status": 200, "headers": TEXT})
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    copying = asyncio.ensure_future(copy())
    gone = asyncio.ensure_future(disconnected())
    await asyncio.wait((copying, gone), return_when=asyncio.FIRST_COMPLETED)
    for task in (copying, gone):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
