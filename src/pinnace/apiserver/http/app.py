"""The HTTP front end: an ASGI application over the API server's pipeline.

Every failure answers as a Kubernetes Status with kube-apiserver's HTTP code; anything
unexpected is logged here and answers a generic 500, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from pinnace.api.kind import Kind
from pinnace.api.objects import Remembered
from pinnace.api.openapi.documents import PublishedDocuments
from pinnace.api.status import StatusError
from pinnace.apiserver import custom_metrics, metrics
from pinnace.apiserver.auth.authentication import Authenticator, TokenCache
from pinnace.apiserver.auth.security import Security
from pinnace.apiserver.auth.user import REQUESTER, Requester
from pinnace.apiserver.http import custom_metrics as custom_metric_paths
from pinnace.apiserver.http import metrics as metrics_paths
from pinnace.apiserver.http import negotiation, nonresource, proxy, streaming
from pinnace.apiserver.http.bodies import ClientDisconnected, Receive
from pinnace.apiserver.http.connections import RESPOND, Respond
from pinnace.apiserver.http.instrumentation import RequestLabels, RequestMetrics, request_labels
from pinnace.apiserver.http.openapi_protobuf import PublishedProtobuf
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.resources import ComponentChecks, ResourceHandler
from pinnace.apiserver.http.responses import (
    TEXT_PLAIN,
    Response,
    indented,
    json_response,
    raw_json_response,
    status_response,
)
from pinnace.apiserver.http.routes import (
    ROUTES_REMEMBERED,
    Discovery,
    Routes,
    method_not_allowed,
    not_found,
)
from pinnace.apiserver.http.websocket import Refused, WebSocket
from pinnace.apiserver.kubelets import Relayed
from pinnace.apiserver.server import APIServer
from pinnace.clock import Randomness
from pinnace.store import StorageError

log = logging.getLogger(__name__)

Send = Any
"""The ASGI send callable."""

INTERNAL_ERROR = StatusError(
    500, "InternalError", "Internal error occurred: an error on the server"
)
TOO_DEEP = StatusError(400, "BadRequest", "the request is nested too deeply to process")
RESPONSE_HEADERS = [(b"cache-control", b"no-cache, private")]
EXPLAIN_PATH = "/pinnace/scheduler/explain"
"""`<EXPLAIN_PATH>/namespaces/<namespace>/pods/<name>`: the scheduler's explanation of a pod,
where one is registered (Pinnace's own path; `pinnace scheduler explain` reads it)."""
PodExplainer = Callable[[str, str], Awaitable[dict[str, Any]]]
"""(namespace, pod name) -> the explanation's plain data."""
NODES_PATH = "/pinnace/nodes"
"""`POST <NODES_PATH>/<node>/<fault>` (stop, start, partition, slow?factor=F): a fault of a
simulated node, where a handler is registered (Pinnace's own path; `pinnace node` posts to
it)."""
NodeFaults = Callable[[str, str, Mapping[str, Sequence[str]]], Awaitable[dict[str, Any]]]
"""(node, fault, query parameters) -> the node's state afterwards."""
METRICS_PATH = "/metrics"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
NodeProxy = Callable[[str, str, str, str, list[tuple[bytes, bytes]]], Awaitable[Relayed]]
"""(node, method, path below `proxy`, query, the client's headers) -> the kubelet's answer
there, as the node proxy relays it (`/api/v1/nodes/<node>/proxy/metrics/cadvisor` …); a
StatusError when the node is not found or its kubelet cannot be reached."""
NODE_PROXY_PREFIX = "/api/v1/nodes/"
NODE_PROXY_LABELS = ("CONNECT", "", "", "v1", "nodes", "proxy", "resource")
"""`request_labels` of a node-proxy request without dryRun."""
HISTORY_PATH = "/pinnace/history"
"""`<HISTORY_PATH>/namespaces/<namespace>/pods/<name>[/containers/<container>]`: the usage of
the pod (its containers' sum) or of one of its containers in the cluster's usage history
(`metrics.history`), `{"time": [...], "cpu": [...], "memory": [...]}` oldest first, where the
cluster keeps one (Pinnace's own path; the VPA recommender of a `pinnace controller-manager`
reads it with --vpa-storage prometheus, as upstream's reads Prometheus)."""
PodHistory = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]
"""(namespace, pod name, container name or "" for the whole pod) -> the series; None for
what the history does not hold."""
DASHBOARD_PATH = "/dashboard"
DashboardPages = Callable[[str], Awaitable[Response]]
"""(path below DASHBOARD_PATH) -> the web dashboard's answer there (`pinnace.dashboard`)."""


class APIApp:
    """`APIApp(server)` is an ASGI app; serve it with uvicorn (see `pinnace up`)."""

    def __init__(
        self,
        server: APIServer,
        rand: Randomness | None = None,
        server_address: str = "",
        explainer: PodExplainer | None = None,
        node_faults: NodeFaults | None = None,
        metrics: Mapping[str, CollectorRegistry] | None = None,
        metrics_ready: Callable[[str], Awaitable[None]] | None = None,
        node_proxy: NodeProxy | None = None,
        dashboard: DashboardPages | None = None,
        security: Security | None = None,
        history: PodHistory | None = None,
        components: ComponentChecks | None = None,
    ) -> None:
        self.server = server
        self.security = security or Security(server.authorizer)
        """Who may do what: without authentication, every request is trusted (loopback)."""
        self.server_address = server_address
        """host:port clients reach the server at, for /api's serverAddressByClientCIDRs."""
        self.explainer = explainer
        """The cluster's scheduler's explanations, served at EXPLAIN_PATH."""
        self.node_faults = node_faults
        """The cluster's simulated nodes' faults, served at NODES_PATH."""
        self.metrics = dict(metrics or {})
        """Path -> the registry served there in the Prometheus text format; the request
        metrics join METRICS_PATH's."""
        self.metrics_ready = metrics_ready
        """Awaited with a metrics path before its registry is collected (caches a scrape
        starts)."""
        self.openapi = PublishedDocuments(server.kinds)
        """The OpenAPI documents served, its CRDs' schemas included."""
        self.openapi_protobuf = PublishedProtobuf(self.openapi)
        self.requests = RequestMetrics()
        if METRICS_PATH in self.metrics:
            self.metrics[METRICS_PATH].register(self.requests)
        self.node_proxy = node_proxy
        self.dashboard = dashboard
        self.history = history
        """The cluster's usage history of pods, served at HISTORY_PATH."""
        generator: random.Random = (rand or Randomness()).child("http").random
        tokens = self.security.authenticator or Authenticator(
            anonymous=False,
            service_accounts=server.authenticate_service_account,
            api_audiences=server.service_account_tokens.audiences,
            cache=TokenCache(server.clock.now),
        )
        self.resources = ResourceHandler(server, generator, tokens, components)
        self.routes = Routes(server.kinds)
        self._resource_paths: Remembered[bool] = Remembered(ROUTES_REMEMBERED)
        """Paths that name a resource, none of the paths served before the resources
        (`_before_resources`): their requests go to the resources at once."""
        self.proxy_random = (rand or Randomness()).child("proxy").random
        """Picks the endpoint a services/proxy request goes to."""
        self._ending = asyncio.Event()

    def end_streams(self) -> None:
        """End every open watch and followed log, as kube-apiserver ends them when it shuts
        down (clients see their stream end and reconnect), and those started later at once."""
        self._ending.set()

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] == "websocket":
            await self.websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request.from_scope(scope, receive)
        request.routes = self.routes
        proxied = request.method in ("GET", "HEAD") and _is_node_proxy(request.path)
        if proxied and self.node_proxy is not None:
            await self.proxy_node(request, send, receive)
            return
        started, request_kind = self.server.clock.now(), self.requests.started(request)
        acting, filtered = None, False
        try:
            filtered = True
            user = await self.security.admit(request)
            filtered = False
            acting = REQUESTER.set(Requester(user))
            response = await self.respond(request)
        except StatusError as e:
            response = status_response(e)
        except StorageError as e:
            # Relayed as kube-apiserver relays etcd's errors (ErrorToAPIStatus: a 500 with
            # the error as its message); the store has logged it.
            response = status_response(StatusError(500, "", str(e)))
        except ClientDisconnected:
            return
        except RecursionError:
            # Only input can nest this deep (bodies are parsed to 1,024 levels).
            log.warning("%s %s: request nested too deeply", request.method, request.path)
            response = status_response(TOO_DEEP)
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            response = status_response(INTERNAL_ERROR)
        finally:
            self.requests.finished(request_kind)
            if acting is not None:
                REQUESTER.reset(acting)
        if _pretty(request, filtered):
            response = indented(response)
        labels = request_labels(request)
        if response.upgraded is not None and request.upgrade is not None:
            self.requests.streaming(labels, 1)
            try:
                head = [(name.encode(), value.encode()) for name, value in response.headers]
                connection = request.upgrade(response.status, head)
                await response.upgraded(connection)
            finally:
                self.requests.streaming(labels, -1)
            self.requests.record(labels, response.status, self.server.clock.now() - started)
        else:
            await self._send_counted(response, labels, started, send, receive, request)

    async def _send_counted(
        self,
        response: Response,
        labels: RequestLabels,
        started: float,
        send: Send,
        receive: Receive,
        request: Request,
    ) -> None:
        """Send `response` (a stream counted as streaming while it lasts) and record it in the
        request metrics."""
        if response.stream is None:
            respond: Respond | None = request.scope.get("extensions", {}).get(RESPOND)
            if respond is not None:
                await respond(response.status, _head(response), response.body)
            else:
                await _send(response, send, receive, self._ending)
        else:
            self.requests.streaming(labels, 1)
            try:
                await _send(response, send, receive, self._ending)
            finally:
                self.requests.streaming(labels, -1)
        self.requests.record(labels, response.status, self.server.clock.now() - started)

    async def proxy_node(self, request: Request, send: Send, receive: Receive) -> None:
        """A GET or HEAD through the node proxy (a scrape of a kubelet): authenticated and
        authorized as any request (`nodes/proxy`), counted in the request metrics, then
        relayed; none of the resource handlers' work (routing, bodies, negotiation) applies,
        and the kubelet's answer is relayed as it is: only the API server's own refusals are
        negotiated Status objects."""
        started, request_kind = self.server.clock.now(), self.requests.started(request)
        filtered = True
        try:
            await self.security.admit(request)
            filtered = False
            node, _, rest = request.path[len(NODE_PROXY_PREFIX) :].partition("/proxy")
            raw_query = request.scope.get("query_string", b"").decode("latin-1")
            assert self.node_proxy is not None
            relayed = await self.node_proxy(
                node, request.method, rest or "/", raw_query, request.scope.get("headers", [])
            )
            response = _relayed(relayed)
        except StatusError as e:
            response = status_response(e)
            if _pretty(request, filtered):
                response = indented(response)
        except StorageError as e:  # as `__call__` relays the store's errors
            response = status_response(StatusError(500, "", str(e)))
        except Exception:
            log.exception("%s %s failed", request.method, request.path)
            response = status_response(INTERNAL_ERROR)
        finally:
            self.requests.finished(request_kind)
        labels = request_labels(request) if "dryRun" in request.query else NODE_PROXY_LABELS
        await self._send_counted(response, labels, started, send, receive, request)

    async def websocket(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        """A WebSocket upgrade (a GET): the streaming subresources (`streaming`); anything
        that fails before the upgrade is answered as an HTTP response instead."""
        ws = WebSocket(scope, receive, send)
        if not await ws.connect():
            return
        request = Request.from_scope({**scope, "method": "GET"}, receive)
        request.routes = self.routes
        started, labels = self.server.clock.now(), request_labels(request)
        self.requests.streaming(labels, 1)  # long-running, as kube-apiserver counts it
        acting = None
        try:
            user = await self.security.admit(request)
            acting = REQUESTER.set(Requester(user))
            target = request.route()  # worked out once, as request_labels found it
            if isinstance(target, Discovery):
                raise method_not_allowed()
            await streaming.serve(self.server, ws, request, target)
        except StatusError as e:
            await _refuse(ws, status_response(e))
        except Refused as e:
            await _refuse(ws, e.response())
        except (StorageError, OSError):  # the store, or the client gone: nothing to tell it
            await ws.close(1011)
        except Exception:
            log.exception("%s (WebSocket) failed", request.path)
            await _refuse(ws, status_response(INTERNAL_ERROR))
        finally:
            if acting is not None:
                REQUESTER.reset(acting)
            self.requests.streaming(labels, -1)
        if ws.status:
            self.requests.record(labels, ws.status, self.server.clock.now() - started)

    async def respond(self, request: Request) -> Response:
        path = request.path
        remembered = self._resource_paths.get(path)
        if not remembered:
            response = await self._before_resources(request)
            if response is not None:
                return response
        target = request.route()
        if isinstance(target, Discovery):
            _only_get(request)
            address = self.server_address or request.header("host")
            kinds = self.served_kinds() + await custom_metrics.discovery_kinds(self.server)
            return nonresource.discovery_document(target, request.header("accept"), address, kinds)
        if not remembered and metrics_paths.route(path) is None:
            self._resource_paths.put(path, True)  # a metrics API path: not while it is served
        return await self.resources.handle(request, target)

    async def _before_resources(self, request: Request) -> Response | None:
        """The answer of a path served before the resources' (`/version`, health, OpenAPI,
        metrics, proxies …, each decided by the path alone but for the metrics API, served
        while a metrics source is registered); None for any other path."""
        path = request.path
        if path in ("/version", "/version/"):
            _only_get(request)
            return nonresource.version()
        health_path = path.rstrip("/") or "/"
        endpoint = nonresource.health_endpoint(health_path)
        if endpoint is not None:
            _only_get(request)
            failing = await self._failing_checks(endpoint)
            return nonresource.health(endpoint, health_path, request.query, failing)
        openapi = nonresource.openapi(
            path.rstrip("/"),
            request.header("accept"),
            request.query,
            self.server.clock.now(),
            self.openapi,
            self.openapi_protobuf,
        )
        if openapi is not None:
            _only_get(request)
            return openapi
        if path == "/":
            return raw_json_response({"paths": self.paths()})
        registry = self.metrics.get(path)
        if registry is not None:
            _only_get(request)
            if self.metrics_ready is not None:
                await self.metrics_ready(path)
            return Response(200, generate_latest(registry), PROMETHEUS_TEXT)
        if self.node_proxy is not None and _is_node_proxy(path):
            raise method_not_allowed()  # GET and HEAD go to `proxy_node`
        if proxy.is_proxy(path):
            return await proxy.relay(self.server, request, self.proxy_random)
        if self.dashboard is not None and _is_below(path, DASHBOARD_PATH):
            _only_get(request)
            return await self.dashboard(path[len(DASHBOARD_PATH) :])
        if self.explainer is not None and path.startswith(EXPLAIN_PATH + "/"):
            _only_get(request)
            return json_response(await self.explainer(*_pod_of(path[len(EXPLAIN_PATH) :])))
        if self.history is not None and path.startswith(HISTORY_PATH + "/"):
            _only_get(request)
            return json_response(await _pod_history(self.history, path[len(HISTORY_PATH) :]))
        if self.node_faults is not None and path.startswith(NODES_PATH + "/"):
            if request.method != "POST":
                raise method_not_allowed()
            node, fault = _node_fault_of(path[len(NODES_PATH) :])
            return json_response(await self.node_faults(node, fault, request.query))
        if self.server.metrics_source is not None:
            metrics_target = metrics_paths.route(path)
            if metrics_target is not None:
                return await metrics_paths.handle(self.server, request, metrics_target)
        custom_target = custom_metric_paths.route(path)
        if custom_target is not None:
            return await custom_metric_paths.handle(self.server, request, custom_target)
        return None

    async def _failing_checks(self, endpoint: str) -> dict[str, str]:
        """The checks of the health `endpoint` that fail now, with why: etcd's (and on /readyz
        etcd-readiness) when the store's storage cannot be read, as kube-apiserver's probe of
        etcd finds; on /readyz also etcd's when the store cannot write (SQLite's full disk),
        and shutdown's once the server is stopping."""
        store = self.server.store
        failing = {}
        unhealthy = await store.health()
        if unhealthy is not None:
            failing["etcd"] = unhealthy
        if endpoint == "/readyz":
            if unhealthy is not None:
                failing["etcd-readiness"] = unhealthy
            elif (unwritable := await store.write_failure()) is not None:
                failing["etcd"] = unwritable
            if self._ending.is_set():
                failing["shutdown"] = "process is shutting down"
        return failing

    def paths(self) -> list[str]:
        """The paths `/` lists, as kube-apiserver lists those it serves."""
        paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2", "/openapi/v3"]
        paths += ["/readyz", "/version"]
        paths += [EXPLAIN_PATH] if self.explainer is not None else []
        paths += [NODES_PATH] if self.node_faults is not None else []
        paths += [HISTORY_PATH] if self.history is not None else []
        paths += list(self.metrics)
        paths += [DASHBOARD_PATH] if self.dashboard is not None else []
        return sorted(paths)

    def served_kinds(self) -> tuple[Kind, ...]:
        """The catalog's kinds (without the subresources the feature gates leave off), those
        served at a second version, the established CRDs' kinds, and the metrics API's while a
        metrics source is registered."""
        kinds = tuple(map(self.server.served, self.server.kinds.discovery_kinds()))
        return kinds if self.server.metrics_source is None else kinds + metrics.KINDS


async def _pod_history(history: PodHistory, path: str) -> Mapping[str, Any]:
    pod, _, container = path.partition("/containers/")
    namespace, name = _pod_of(pod)
    if "/containers/" in path and (not container or "/" in container):
        raise not_found()
    found = await history(namespace, name, container)
    if found is None:
        what = f'container "{container}" of pod "{name}"' if container else f'pod "{name}"'
        raise StatusError(
            404,
            "NotFound",
            f'the usage history holds no {what} in namespace "{namespace}"',
            {"name": name, "kind": "pods"},
        )
    return found


def _pod_of(path: str) -> tuple[str, str]:
    """(namespace, name) of `/namespaces/<namespace>/pods/<name>`."""
    parts = path.split("/")
    shape = len(parts) == 5 and parts[:2] == ["", "namespaces"] and parts[3] == "pods"
    if not shape or not parts[2] or not parts[4]:
        raise not_found()
    return parts[2], parts[4]


def _node_fault_of(path: str) -> tuple[str, str]:
    """(node, fault) of `/<node>/<fault>`."""
    parts = path.split("/")
    if len(parts) != 3 or parts[0] or not parts[1] or not parts[2]:
        raise not_found()
    return parts[1], parts[2]


def _relayed(relayed: Relayed) -> Response:
    """A kubelet's answer as the node proxy relays it."""
    content_type, headers = TEXT_PLAIN, []
    for name, value in relayed.headers:
        if name.lower() == "content-type":
            content_type = value
        else:
            headers.append((name, value))
    return Response(relayed.status, relayed.body, content_type, headers, relayed.stream, None)


def _is_node_proxy(path: str) -> bool:
    """`/api/v1/nodes/<node>/proxy[/<path>]`: the node proxy subresource with a path."""
    if not path.startswith(NODE_PROXY_PREFIX):
        return False
    parts = path[len(NODE_PROXY_PREFIX) :].split("/", 2)
    return len(parts) >= 2 and bool(parts[0]) and parts[1] == "proxy"


def _is_below(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def _pretty(request: Request, filtered: bool = False) -> bool:
    """Whether the answer is negotiated as pretty JSON: the API's paths only, not the OpenAPI
    documents (kube-openapi's own handler) nor Pinnace's dashboard and tools; on any path, a
    refusal of the authentication or authorization filter (`filtered`), which kube-apiserver
    writes negotiated (responsewriters.ErrorNegotiated) before a handler is chosen."""
    path, pretty = request.path, request.query.get("pretty")
    if not filtered and proxy.is_proxy(path):
        return False  # a pod's own answer, relayed as it is
    return (filtered or _is_below(path, "/api") or _is_below(path, "/apis")) and (
        negotiation.pretty(
            pretty[0] if pretty else None, request.header("user-agent"), request.header("accept")
        )
    )


def _only_get(request: Request) -> None:
    if request.method not in ("GET", "HEAD"):
        raise method_not_allowed()


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _refuse(ws: WebSocket, response: Response) -> None:
    await ws.refuse(response, _headers(response))


def _headers(response: Response) -> list[tuple[bytes, bytes]]:
    headers = [(b"content-type", response.content_type.encode())]
    own = [(k.lower().encode(), v.encode()) for k, v in response.headers]
    # WithCacheControl's default, unless the handler set its own (as kube-openapi's does).
    headers += [h for h in RESPONSE_HEADERS if h[0] not in {k for k, _ in own}]
    headers += own
    if response.stream is None:
        headers.append((b"content-length", str(len(response.body)).encode()))
    return headers


_INVALID_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")
"""What uvicorn refuses in a header value (a RuntimeError: its generic 500)."""
_PLAIN_HEADS: dict[str, bytes] = {}
"""Content type -> the head of an answer with no headers of its own, but its length."""
_PLAIN_HEADS_HELD = 64


def _head(response: Response) -> bytes:
    """`_headers(response)` as the lines of a head (`connections.Respond`); that of a content
    type with no headers of the handler's own is made once."""
    if not response.headers:
        plain = _PLAIN_HEADS.get(response.content_type)
        if plain is not None:
            return b"%scontent-length: %d\r\n" % (plain, len(response.body))
    lines: list[bytes] = []
    for name, value in _headers(response):
        if _INVALID_VALUE.search(value):
            raise RuntimeError("Invalid HTTP header value.")
        lines += (name, b": ", value, b"\r\n")
    head = b"".join(lines)
    if not response.headers and len(_PLAIN_HEADS) < _PLAIN_HEADS_HELD:
        _PLAIN_HEADS[response.content_type] = head[: head.rindex(b"content-length: ")]
    return head


async def _send(response: Response, send: Send, receive: Receive, ending: asyncio.Event) -> None:
    await send(
        {"type": "http.response.start", "status": response.status, "headers": _headers(response)}
    )
    if response.stream is None:
        await send({"type": "http.response.body", "body": response.body})
        return
    await _stream(response, send, receive, ending)


async def _stream(response: Response, send: Send, receive: Receive, ending: asyncio.Event) -> None:
    """Send a watch's chunks until it ends, its timeout passes, the client goes away or the
    server ends its streams."""
    assert response.stream is not None
    chunks = response.stream

    async def pump() -> None:
        async for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

    pumping = asyncio.ensure_future(pump())
    disconnected = asyncio.ensure_future(_disconnect(receive))
    ended = asyncio.ensure_future(ending.wait())
    try:
        done, _ = await asyncio.wait(
            {pumping, disconnected, ended},
            timeout=response.timeout,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for task in (pumping, disconnected, ended):
            task.cancel()
        await asyncio.gather(pumping, disconnected, ended, return_exceptions=True)
    if pumping in done and pumping.exception() is not None:
        error = pumping.exception()
        if not isinstance(error, OSError):
            log.error("watch stream failed", exc_info=error)
    if disconnected not in done:
        await send({"type": "http.response.body", "body": b""})


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
