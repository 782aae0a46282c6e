"""The health endpoints of a component process (`pinnace scheduler`, `pinnace
controller-manager`) on its --secure-port, as kube-scheduler and kube-controller-manager serve
them (v1.32): HTTPS with a self-signed certificate made at each start, as theirs is without
--tls-cert-file, and k8s.io/apiserver's healthz answers (`pinnace.apiserver.http.nonresource`).

kube-scheduler serves /healthz (its leaderElection check with leader election, else ping),
/livez (ping) and /readyz (leaderElection, shutdown, sched-handler-sync);
kube-controller-manager serves /healthz only. They are open to anyone, as their
--authorization-always-allow-paths let them be. A --secure-port of 0 serves nothing.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn

from pinnace.apiserver.auth import certs
from pinnace.apiserver.http import connections
from pinnace.apiserver.http.nonresource import health, health_endpoint
from pinnace.apiserver.http.responses import Response, text_response

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Endpoints = Mapping[str, Sequence[str]]
"""Each endpoint's checks, in the order they are listed."""
SCHEDULER_PORT = 10259
CONTROLLER_MANAGER_PORT = 10257
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


class HealthServer:
    """The endpoints on a socket bound when made (OSError when it cannot be), serving from
    `start` to `stop`; `failing()` says which checks fail now, and why."""

    def __init__(
        self,
        address: str,
        port: int,
        endpoints: Endpoints,
        failing: Callable[[], Mapping[str, str]],
    ) -> None:
        self._endpoints = endpoints
        self._failing = failing
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

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        endpoint = health_endpoint(path, self._endpoints)
        if endpoint is None:
            response = text_response("404 page not found\n", 404)
        else:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"), True)
            response = health(endpoint, path, query, self._failing(), self._endpoints)
        await _send(send, response)


async def _send(send: Send, response: Response) -> None:
    headers = [
        (b"content-type", response.content_type.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"content-length", str(len(response.body)).encode()),
    ]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})
