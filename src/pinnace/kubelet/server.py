"""The kubelet API of a `pinnace agent` process: one endpoint for all its nodes, or an address
of its own for each, where the API server (and a Prometheus) reaches them
(pkg/kubelet/server/server.go's /containerLogs, /exec, /attach and /portForward, and the
monitoring paths).

`/exec/<namespace>/<pod>/<container>`, `/attach/<namespace>/<pod>/<container>` and
`/portForward/<namespace>/<pod>` serve the streaming sessions the API server proxies to them
(its `kubelet_proxy`), with the query the client gave it: over WebSocket and over SPDY/3.1,
as `pinnace up` serves the sessions of its own nodes and with the same functions
(`pinnace.apiserver.http.streaming`, `portforward`).

A kubelet serves its node alone on port 10250 of the node's address; an agent process serves
every node it runs either on one address and port of its own, or (given each node's own
address) on one socket per node, all on one port, as kubelets on machines of their own. Each
Node publishes where (its Hostname address and `daemonEndpoints.kubeletEndpoint.Port`,
`NodeConfig.kubelet_endpoint`). A pod's path names its node: the process answers for the pods
bound to any of its nodes. The node's own paths (/stats/summary, /metrics/resource,
/metrics/cadvisor, /metrics, `kubelet.endpoints`) are answered for the node the request's
`Pinnace-Node` header names (the API server sends it), or without one, for the node whose
address the request came to (a Prometheus scraping each kubelet at its address), as is
Pinnace's own `POST /pinnace/faults/<fault>` (`pinnace node stop|start|partition|slow`,
relayed by the API server; `kubelet.faults`). Pinnace's own `GET /pinnace/summaries` answers
for every node of the process, on any of its addresses: the stats summaries their
/stats/summary serve, compact (`pinnace.api.stats.SUMMARIES_PATH`), which the API server's
usage history and metrics API read in one request.

Over TLS (the agent's kubeconfig names an https server) the endpoint serves a self-signed
certificate made at start, as a kubelet without --tls-cert-file does, and requires a client
certificate signed by the cluster's CA (the one the kubeconfig trusts), such as the API
server's kubelet client certificate. The streaming paths are authorized as the kubelet's
webhook authorizer does it (pkg/kubelet/server/auth.go): a SubjectAccessReview of the
certificate's user for `nodes/proxy` of the pod's node (get for a WebSocket, create for a
POST), its answer kept 5 min when allowed and 30 s when not (`kubelet.webhook_authorizer`),
refused with the kubelet's 403 `Forbidden (user=…, verb=…, resource=nodes, subresource=proxy)`;
kubeadm's RBAC allows it to the API server's kubelet client
(cluster-admin). The other paths trust any certificate of the cluster's CA (a kubelet asks
about nodes/log, nodes/stats … there too). With an address per node, the certificate names
the machine (localhost, 127.0.0.1, its host name), not each node's address: the API server
does not verify it, nor does kube-prometheus' kubelet scrape (`insecureSkipVerify`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import orjson
import uvicorn

from pinnace.api.objects import Object
from pinnace.api.stats import SUMMARIES_PATH, compact
from pinnace.api.status import StatusError
from pinnace.api.streams import StreamOptions
from pinnace.apiserver.auth import certs
from pinnace.apiserver.auth.authentication import certificate_user
from pinnace.apiserver.http import connections, portforward, streaming
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import TEXT_PLAIN, Response
from pinnace.apiserver.http.websocket import Refused, WebSocket
from pinnace.apiserver.logs import log_options
from pinnace.client.kubelet import FAULTS_PATH, NODE_HEADER
from pinnace.kubelet.endpoints import PATHS
from pinnace.kubelet.faults import inject
from pinnace.kubelet.pool import NodeAgentPool
from pinnace.kubelet.webhook_authorizer import WebhookAuthorizer

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
TEXT = [(b"content-type", TEXT_PLAIN.encode())]
KUBELET_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch"}
"""The kubelet's request verbs (pkg/kubelet/server/auth.go), by HTTP method."""
STREAMING = {"exec": "exec", "attach": "attach", "portForward": "portforward"}
"""The kubelet's streaming paths, and the subresource each serves."""
IDLE_TIMEOUT = 90
"""Seconds a kept-alive connection may wait for its next request: the kubelet server's
IdleTimeout, so the API server's node proxy keeps one connection a kubelet between scrapes."""
SUMMARIES_PER_SLICE = 250
"""Nodes read for a line of `SUMMARIES_PATH`, between turns of the process's other work."""


class KubeletServer:
    """The process's kubelet endpoint, on sockets bound when made (so its port is known
    before the nodes register), serving from `start` to `stop`."""

    def __init__(
        self,
        address: str,
        port: int,
        tls: ssl.SSLContext | None,
        own_addresses: Mapping[str, str] | None = None,
    ) -> None:
        """`tls`: the trust of the agent's kubeconfig, whose CAs sign the clients allowed;
        None serves plain HTTP to anyone. `own_addresses`: each node's address of its own
        (node name -> address), each served on `port` (0: the free port the first one gets)
        in place of the one endpoint at `address`. OSError, its `filename` the address and
        port, when one cannot be bound."""
        self.pool: NodeAgentPool | None = None
        """The nodes served, set once the pool is made."""
        self.address = address
        self._own = dict(own_addresses or {})
        self._nodes_at = {where: node for node, where in self._own.items()}
        self._sockets = _bind(list(self._nodes_at) or [address], port)
        self.port: int = self._sockets[0].getsockname()[1]
        self._tls = tls
        self._files: tempfile.TemporaryDirectory[str] | None = None
        self._server: connections.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._authorizer: WebhookAuthorizer | None = None
        """The streaming paths' authorizer, on the pool's client once a request needs it."""

    def endpoint(self, node: str) -> tuple[str, int]:
        """Where the API server reaches the node's kubelet (its own address, or the process's;
        the machine's name when bound to every address), for its Node to publish."""
        if node in self._own:
            return self._own[node], self.port
        unspecified = self.address in ("", "0.0.0.0", "::")
        return (socket.gethostname() if unspecified else self.address), self.port

    async def start(self) -> None:
        self._server = connections.Server(self._config())
        self._serving = asyncio.create_task(self._server.serve(sockets=self._sockets))
        while not self._server.started and not self._serving.done():
            await asyncio.sleep(0.02)
        if self._serving.done():  # it could not serve (its TLS, say): not a socket that hangs
            failed, self._serving = self._serving, None
            await self.stop()
            failed.result()

    async def stop(self) -> None:
        if self._server is not None and self._serving is not None:
            self._server.stop()
            await self._serving
        for bound in self._sockets:
            bound.close()
        if self._files is not None:
            self._files.cleanup()

    def _config(self) -> uvicorn.Config:
        options: dict[str, Any] = {}
        if self._tls is not None:
            self._files = tempfile.TemporaryDirectory(prefix="pinnace-kubelet-")
            directory = Path(self._files.name)
            named = "" if self._own else self.address  # the machine's names only
            serving = certs.issue_serving(
                certs.ensure_ca(directory), directory, certs.serving_hosts(named)
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
            http=connections.LimitedHttpToolsProtocol,  # SPDY upgrades handed to `_app`
            ws=connections.CertifiedWSProtocol,
            timeout_graceful_shutdown=1,
            timeout_keep_alive=IDLE_TIMEOUT,
            **options,
        )

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        parts = scope["path"].strip("/").split("/")
        if parts[0] in STREAMING:
            await self._spdy(scope, receive, send)
            return
        if scope["method"] == "GET" and scope["path"] in PATHS:
            await self._monitoring(scope, send)
            return
        if scope["method"] == "GET" and scope["path"] == SUMMARIES_PATH:
            await self._summaries(scope, receive, send)
            return
        fault_path, _, fault = scope["path"].rpartition("/")
        if scope["method"] == "POST" and fault_path == FAULTS_PATH:
            await self._fault(scope, send, unquote(fault))
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

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A streaming session over a WebSocket; a refusal as the kubelet's plain text."""
        ws = WebSocket(scope, receive, send)
        if not await ws.connect():
            return
        request = Request.from_scope({**scope, "method": "GET"}, receive)
        try:
            subresource, pod, options = await self._session(scope, request)
            if subresource == "portforward":
                await portforward.serve(self._pool(), ws, request.query, pod)
            else:
                await streaming.serve_session(self._pool(), ws, subresource, pod, options)
        except StatusError as e:
            refusal = Refused(e.message, e.code).response()
            await ws.refuse(refusal, _head(refusal))
        except Refused as e:
            await ws.refuse(e.response(), _head(e.response()))
        except OSError:  # the API server went away
            await ws.close(1011)

    async def _spdy(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A streaming session over SPDY/3.1: the kubelet's upgrade and the session on the
        connection handed over, or its refusal."""
        request = Request.from_scope(scope, receive)
        try:
            subresource, pod, options = await self._session(scope, request)
            if subresource == "portforward":
                response = streaming.plain_forward(self._pool(), request, pod)
            else:
                response = streaming.plain_session(self._pool(), request, subresource, pod, options)
        except StatusError as e:
            response = Refused(e.message, e.code).response()
        if response.upgraded is not None and request.upgrade is not None:
            head = [(name.encode(), value.encode()) for name, value in response.headers]
            await response.upgraded(request.upgrade(response.status, head))
            return
        start = {"type": "http.response.start", "status": response.status}
        await send({**start, "headers": _head(response)})
        await send({"type": "http.response.body", "body": response.body})

    async def _session(self, scope: Scope, request: Request) -> tuple[str, Object, StreamOptions]:
        """The subresource, pod and options the streaming path names, once the caller may
        have them (the kubelet's getExec, getAttach, getPortForward)."""
        parts = [unquote(p) for p in scope["path"].strip("/").split("/")]
        subresource = STREAMING[parts[0]]
        if len(parts) != (3 if subresource == "portforward" else 4):
            raise StatusError(404, "NotFound", "404 page not found\n")
        pod = self.pool.pod(parts[1], parts[2]) if self.pool is not None else None
        node = (pod or {}).get("spec", {}).get("nodeName", "")
        await self._authorize(scope, request.method, node)
        if pod is None:
            raise StatusError(404, "NotFound", "pod does not exist")
        options = streaming.stream_options(request.query, subresource)
        if subresource != "portforward":
            options = dataclasses.replace(options, container=parts[3])
        return subresource, pod, options

    async def _authorize(self, scope: Scope, method: str, node: str) -> None:
        """The kubelet's webhook authorization of a streaming request, over TLS: may the
        certificate's user reach `nodes/proxy` of the node?"""
        if self._tls is None or self.pool is None:
            return
        certificate = ((scope.get("extensions") or {}).get("tls") or {}).get("client_cert")
        found = certificate_user(certificate or {})
        if found is None:
            raise StatusError(401, "Unauthorized", "Unauthorized")
        user = found.with_authenticated_group()
        verb = KUBELET_VERBS.get(method, "*")
        attributes = {"verb": verb, "version": "v1", "resource": "nodes", "name": node}
        spec = {
            "user": user.name,
            "groups": list(user.groups),
            "resourceAttributes": {**attributes, "subresource": "proxy"},
        }
        what = f"user={user.name}, verb={verb}, resource=nodes, subresource=proxy"
        if self._authorizer is None:
            self._authorizer = WebhookAuthorizer(self.pool.client)
        try:
            answer = await self._authorizer.review(spec)
        except StatusError:
            raise StatusError(500, "InternalError", f"Authorization error ({what})") from None
        if not answer.get("allowed"):
            raise StatusError(403, "Forbidden", f"Forbidden ({what})")

    def _pool(self) -> NodeAgentPool:
        assert self.pool is not None  # a pod was found in it
        return self.pool

    async def _fault(self, scope: Scope, send: Send, fault: str) -> None:
        """`pinnace node FAULT` of the request's node (`node_of`), relayed by the API server:
        the node's state, or the Status of the refusal, as JSON."""
        node = node_of(scope, self._nodes_at)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        code, answer = 200, {}
        try:
            if self.pool is None or not node:
                raise StatusError(400, "BadRequest", f"no {NODE_HEADER} header: which node")
            answer = await inject(self.pool, node, fault, query)
        except StatusError as e:
            code, answer = e.code, e.status()
        await _json(send, code, answer)

    async def _monitoring(self, scope: Scope, send: Send) -> None:
        """/stats/summary and the metrics of the request's node (`node_of`)."""
        node = node_of(scope, self._nodes_at)
        if self.pool is None or not node:
            await _answer(send, 400, f"no {NODE_HEADER} header: which node's {scope['path']}")
            return
        try:
            body, content_type = self.pool.proxy(node, scope["path"])
        except StatusError as e:
            await _answer(send, e.code, e.message)
            return
        # Its length given, as Go's server gives a body written at once: the API server's node
        # proxy then relays it whole, in one write.
        head = [(b"content-type", content_type.encode()), _length(body)]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": body})

    async def _summaries(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The summaries of the nodes the query names (`node=`), or of all (SUMMARIES_PATH): a
        line a slice of nodes, each sent once read, the process's other work going on between;
        no more once the API server has gone (it waited long enough)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        head = [(b"content-type", b"application/x-ndjson")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        pool = self.pool
        nodes = [] if pool is None else query.get("node") or list(pool.agents)
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            for start in range(0, len(nodes), SUMMARIES_PER_SLICE):
                if gone.done() or pool is None:
                    return
                line = _summaries_line(pool, nodes[start : start + SUMMARIES_PER_SLICE])
                await send({"type": "http.response.body", "body": line, "more_body": True})
                await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b""})
        finally:
            gone.cancel()

    def _container_log(
        self, namespace: str, name: str, container: str, query: dict[str, list[str]]
    ) -> AsyncIterator[str]:
        """The kubelet's getContainerLogs."""
        pod = self.pool.pod(namespace, name) if self.pool is not None else None
        if pod is None:
            raise StatusError(404, "NotFound", f'pod "{name}" does not exist\n')
        return self.pool.read_log(pod, container, log_options(query))  # type: ignore[union-attr]


def _summaries_line(pool: NodeAgentPool, nodes: list[str]) -> bytes:
    """A line of SUMMARIES_PATH: the nodes' summaries, or why the API server cannot reach
    them; a node the process does not run (404) is in neither."""
    summaries, unreachable = {}, {}
    for node in nodes:
        try:
            summaries[node] = compact(pool.served_summary(node))
        except StatusError as e:
            if e.code == 503:
                unreachable[node] = e.message
    return orjson.dumps({"summaries": summaries, "unreachable": unreachable}) + b"\n"


def node_of(scope: Scope, nodes_at: Mapping[str, str]) -> str:
    """The node the request is for: the one its Pinnace-Node header names, else the one whose
    own address it came to (`nodes_at`: address -> node); "" when neither says."""
    headers = dict(scope.get("headers") or [])
    named = headers.get(NODE_HEADER.lower().encode())
    if named is not None:
        return named.decode("latin-1")
    local = scope.get("server") or ("", None)
    return nodes_at.get(local[0], "")


def _bind(addresses: list[str], port: int) -> list[socket.socket]:
    """A listening socket on each address, all on one port: `port`, or when it is 0 the free
    one the first socket gets. OSError, its `filename` where, for one that cannot be bound."""
    bound: list[socket.socket] = []
    try:
        for address in addresses:
            try:
                bound.append(socket.create_server((address, port)))
            except OSError as e:
                raise OSError(e.errno, e.strerror, f"{address}:{port}") from None
            port = bound[0].getsockname()[1]
    except BaseException:
        for done in bound:
            done.close()
        raise
    return bound


def _head(response: Response) -> list[tuple[bytes, bytes]]:
    """A refusal's header lines."""
    head = [(b"content-type", response.content_type.encode())]
    head += [(name.lower().encode(), value.encode()) for name, value in response.headers]
    return [*head, (b"content-length", str(len(response.body)).encode())]


async def _json(send: Send, code: int, answer: dict[str, Any]) -> None:
    head = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": code, "headers": head})
    await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


async def _answer(send: Send, code: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": code, "headers": [*TEXT, _length(body)]})
    await send({"type": "http.response.body", "body": body})


def _length(body: bytes) -> tuple[bytes, bytes]:
    return (b"content-length", str(len(body)).encode())


async def _stream(send: Send, receive: Receive, chunks: AsyncIterator[str]) -> None:
    """Send the log as it comes, until it ends or the API server goes away."""

    async def copy() -> None:
        await send({"type": "http.response.start", "status": 200, "headers": TEXT})
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    copying = asyncio.ensure_future(copy())
    gone = asyncio.ensure_future(_disconnected(receive))
    await asyncio.wait((copying, gone), return_when=asyncio.FIRST_COMPLETED)
    for task in (copying, gone):
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _disconnected(receive: Receive) -> None:
    """Until the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass
