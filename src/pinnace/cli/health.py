"""The endpoints of a component process (`pinnace scheduler`, `pinnace controller-manager`) on
its --secure-port, as kube-scheduler and kube-controller-manager serve them (v1.32): HTTPS
with a self-signed certificate made at each start, as theirs is without --tls-cert-file, and
k8s.io/apiserver's healthz answers (`pinnace.apiserver.http.nonresource`).

kube-scheduler serves /healthz (its leaderElection check with leader election, else ping),
/livez (ping), /readyz (leaderElection, shutdown, sched-handler-sync), /metrics (its
scheduler_* families) and /configz (its configuration as configz marshals it, under
"componentconfig"); kube-controller-manager serves /healthz. A --secure-port of 0 serves
nothing.

Every caller is anonymous, as to theirs without --authentication-kubeconfig (no client
certificate or token is checked), and authorized as theirs authorize one without
--authorization-kubeconfig: a path of --authorization-always-allow-paths (kube-scheduler's
/healthz, /readyz and /livez, kube-controller-manager's /healthz; an exact path, or a prefix
ending in `*`) is served, any other is refused with a 403 (`forbidden: User
"system:anonymous" cannot get path "/metrics"`), /healthz/ping and /metrics included.
"""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from pinnace.api.goquote import quote
from pinnace.apiserver.auth import certs
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.security import forbidden_error
from pinnace.apiserver.auth.user import ANONYMOUS_USER
from pinnace.apiserver.http import connections
from pinnace.apiserver.http.app import PROMETHEUS_TEXT
from pinnace.apiserver.http.nonresource import health, health_endpoint
from pinnace.apiserver.http.responses import Response, status_response, text_response

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Endpoints = Mapping[str, Sequence[str]]
"""Each endpoint's checks, in the order they are listed."""
SCHEDULER_ALWAYS_ALLOW = ("/healthz", "/readyz", "/livez")
"""NewDelegatingAuthorizationOptions' AlwaysAllowPaths, which kube-scheduler keeps."""
CONTROLLER_MANAGER_ALWAYS_ALLOW = ("/healthz",)
"""kube-controller-manager's AlwaysAllowPaths."""
METRICS_PATH = "/metrics"
CONFIGZ_PATH = "/configz"
LEADER_ELECTION = "leaderElection"
WATCHDOG_TOLERANCE = 20.0
"""How long past its lease a leader that has not renewed is still healthy
(NewLeaderHealthzAdaptor's timeout, 20 s in both components)."""


def scheduler_endpoints(elected: bool) -> Endpoints:
    election = (LEADER_ELECTION,) if elected else ()
    return {
        "/healthz": election or ("ping",),
        "/livez": ("ping",),
        "/readyz": (*election, "shutdown", "sched-handler-sync"),
    }


def controller_manager_endpoints(elected: bool) -> Endpoints:
    return {"/healthz": (LEADER_ELECTION,) if elected else ("ping",)}


def always_allowed(paths: Sequence[str]) -> Callable[[str], bool]:
    """The path authorizer of --authorization-always-allow-paths (apiserver's
    authorization/path): whether it allows a path; ValueError for a `*` not at the end."""
    exact, prefixes = set(), []
    for path in paths:
        path = path.removeprefix("/")
        if "*" in path[:-1]:
            raise ValueError(f"only trailing * allowed in {quote(path)}")
        if path.endswith("*"):
            prefixes.append(path[:-1])
        else:
            exact.add(path)
    starts = tuple(prefixes)

    def allowed(path: str) -> bool:
        path = path.removeprefix("/")
        return path in exact or path.startswith(starts)

    return allowed


class HealthServer:
    """The endpoints on a socket bound when made (OSError when it cannot be), serving from
    `start` to `stop`; `failing()` says which checks fail now, and why; `allowed(path)`
    whether an anonymous caller may have a path."""

    def __init__(
        self,
        address: str,
        port: int,
        endpoints: Endpoints,
        failing: Callable[[], Mapping[str, str]],
        allowed: Callable[[str], bool],
    ) -> None:
        self._endpoints = endpoints
        self._failing = failing
        self._allowed = allowed
        self._metrics: CollectorRegistry | None = None
        self._configz: bytes | None = None
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((address, port))
        except OSError:
            self._socket.close()
            raise
        self.port: int = self._socket.getsockname()[1]
        self._files = tempfile.TemporaryDirectory(prefix="pinnace-serving-")
        directory = Path(self._files.name)
        serving = certs.issue_serving(
            certs.ensure_ca(directory), directory, certs.serving_hosts(address)
        )
        self._server = connections.Server(
            uvicorn.Config(
                self._app,
                interface="asgi3",
                lifespan="off",
                log_level="warning",
                access_log=False,
                server_header=False,
                ssl_certfile=str(serving.cert),
                ssl_keyfile=str(serving.key),
            )
        )
        self._serving: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._serving = asyncio.create_task(self._server.serve(sockets=[self._socket]))

    async def stop(self) -> None:
        if self._serving is not None:
            self._server.stop()
            await self._serving
        self._socket.close()
        self._files.cleanup()

    def serve_metrics(self, collectors: Sequence[Collector]) -> None:
        """Serve /metrics: these collectors' families."""
        self._metrics = CollectorRegistry()
        for collector in collectors:
            self._metrics.register(collector)

    def serve_configz(self, configs: Mapping[str, Any]) -> None:
        """Serve /configz: each named configuration (k8s.io/component-base/configz), as Go's
        encoding/json writes it."""
        self._configz = go_json(configs)

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await _send(send, self._answer(scope["method"], scope["path"], scope))

    def _answer(self, method: str, path: str, scope: Scope) -> Response:
        if not self._allowed(path):
            # The request's attributes are RequestInfoFactory's for a non-resource path.
            verb = method.lower()
            anonymous = Attributes(ANONYMOUS_USER, verb, resource_request=False, path=path)
            return status_response(forbidden_error(anonymous, ""))
        if path == METRICS_PATH and self._metrics is not None:
            return Response(200, generate_latest(self._metrics), PROMETHEUS_TEXT)
        if path == CONFIGZ_PATH and self._configz is not None:
            return Response(200, self._configz, "application/json")
        endpoint = health_endpoint(path, self._endpoints)
        if endpoint is None:
            return text_response("404 page not found\n", 404)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), True)
        return health(endpoint, path, query, self._failing(), self._endpoints)


def go_json(value: Any) -> bytes:
    """`value` as Go's json.Marshal writes it: compact, keys in the order given, UTF-8, with
    <, >, &, U+2028 and U+2029 escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for c in "<>&\u2028\u2029":
        text = text.replace(c, f"\\u{ord(c):04x}")
    return text.encode()


async def _send(send: Send, response: Response) -> None:
    headers = [
        (b"content-type", response.content_type.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"content-length", str(len(response.body)).encode()),
    ]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})
