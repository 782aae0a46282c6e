"""Measures what one request costs the API server's HTTP path in CPU: the protocol `pinnace up`
serves with (uvicorn's httptools protocol as `apiserver.http.connections` limits it) over an
in-memory transport, the ASGI app, authentication, authorization, the request metrics and
the handler, in one process with no socket and no client beside it.

    python -m scripts.measure_http_floor [SHAPE ...] [--requests N] [--auth none|token|cert]

(from the repository's root: its in-memory transport is the tests' `tests.support`).

Shapes (all by default):
- version: `GET /version`, the floor every request pays;
- get: `GET` of one pod;
- create: `POST` of a pod (`pinnace bench api`'s manifest), each with its own name;
- scrape: `GET /api/v1/nodes/NAME/proxy/metrics/cadvisor` of each of `--nodes` in-process
  nodes in turn, as Prometheus scrapes through the node proxy (docs/monitoring.md).

`--auth none` is `pinnace up` without TLS (every request system:unsecured); `token` sends a
bearer token of a token-file user bound to a ClusterRole that allows what the shapes ask,
`cert` a client certificate's user in no privileged group with the same binding, as
`pinnace up --tls` authenticates and authorizes them.

The cluster runs on a virtual clock that only moves while nothing else is to be done: the
nodes' heartbeats and the controllers' periods, which take their CPU whatever the requests,
do not run while they are measured.

Printed per shape: CPU µs a request (process time over N requests after a warm-up of its
own). On a machine shared with other work the instruction count is the steadier figure: under
callgrind, started with instrumentation off, `--callgrind` switches it on for each shape's N
requests only (with callgrind_control) and prints the instructions a request:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/dev/null \\
        python -m scripts.measure_http_floor --requests 500 --callgrind
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import time
from collections.abc import Callable
from typing import Any

import orjson
import uvicorn
from tests.support import MemoryTransport
from uvicorn.server import ServerState

from pinnace.api import catalog
from pinnace.apiserver.auth.authentication import Authenticator, TokenCache
from pinnace.apiserver.auth.security import Security
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.http import connections
from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Clock, VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.store import MemoryStore

SHAPES = ("version", "get", "create", "scrape")
TOKEN = "floor-token"
USER = "floor-user"
ROLE = {
    "metadata": {"name": "floor"},
    "rules": [
        {"apiGroups": [""], "resources": ["nodes", "nodes/proxy", "pods"], "verbs": ["*"]},
        {"nonResourceURLs": ["/version"], "verbs": ["get"]},
    ],
}
BINDING = {
    "metadata": {"name": "floor"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "floor"},
    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
}
CERTIFICATE = {"subject": ((("commonName", USER),), (("organizationName", "floor"),))}
DATE = [(b"date", b"Mon, 30 Nov 2026 20:00:00 GMT")]
"""The Date header uvicorn's server loop sets once a second."""


class Connection:
    """One keep-alive client connection to the app through `pinnace up`'s HTTP protocol."""

    def __init__(self, app: APIApp, certificate: dict[str, Any] | None) -> None:
        config = uvicorn.Config(
            app, lifespan="off", log_level="warning", access_log=False, server_header=False,
            proxy_headers=False, http=connections.protocol(1000),
            ws=connections.CertifiedWSProtocol,
        )  # fmt: skip
        config.load()
        state = ServerState()
        state.default_headers = DATE
        done: list[asyncio.Future[None]] = []

        class Protocol(config.http_protocol_class):  # type: ignore[misc, name-defined]
            def on_response_complete(self) -> None:
                super().on_response_complete()
                done[0].set_result(None)

        self._done = done
        self.transport = MemoryTransport(certificate)
        self.protocol = Protocol(config=config, server_state=state, app_state={})
        self.protocol.connection_made(self.transport)

    async def request(self, data: bytes) -> bytes:
        """Send one whole request; its whole answer (status line, head and body)."""
        self._done[:] = [asyncio.get_running_loop().create_future()]
        self.transport.writes.clear()
        self.protocol.data_received(data)
        await self._done[0]
        return self.transport.written()


def request_bytes(method: str, path: str, headers: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:6443\r\n{headers}"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode() + body


def pod(name: str) -> bytes:
    container = {
        "name": "app",
        "image": "registry.k8s.io/nginx-slim:0.27",
        "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
    }
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "floor"}},
            "spec": {"containers": [container]},
        }
    )


async def measure(options: argparse.Namespace, clock: Clock) -> None:
    plane = ControlPlane(
        MemoryStore(),
        clock,
        ClusterOptions(
            nodes=node_configs(options.nodes),
            scheduler=False,
            controllers=False,
            kube_state_metrics=False,
            dashboard=False,
            seed=1,
        ),
    )
    await plane.start()
    try:
        server = plane.server
        await server.create(catalog.kind("rbac.authorization.k8s.io", "clusterroles"), "", ROLE)
        binding = catalog.kind("rbac.authorization.k8s.io", "clusterrolebindings")
        await server.create(binding, "", BINDING)
        await server.create(catalog.kind("", "pods"), "default", orjson.loads(pod("floor")))
        security = None
        if options.auth != "none":
            authenticator = Authenticator(
                {TOKEN: UserInfo(USER, "1")}, anonymous=False, cache=TokenCache(plane.clock.now)
            )
            security = Security(server.authorizer, authenticator)
        app = plane.http_app("127.0.0.1:6443", security)
        connection = Connection(app, CERTIFICATE if options.auth == "cert" else None)
        headers = "User-Agent: floor/1.0\r\nAccept: application/json\r\n"
        if options.auth == "token":
            headers += f"Authorization: Bearer {TOKEN}\r\n"
        nodes = [config.name for config in node_configs(options.nodes)]
        shapes: dict[str, Callable[[int], bytes]] = {
            "version": lambda i: request_bytes("GET", "/version", headers),
            "get": lambda i: request_bytes("GET", "/api/v1/namespaces/default/pods/floor", headers),
            "create": lambda i: request_bytes(
                "POST", "/api/v1/namespaces/default/pods", headers, pod(f"floor-{i}")
            ),
            "scrape": lambda i: request_bytes(
                "GET", f"/api/v1/nodes/{nodes[i % len(nodes)]}/proxy/metrics/cadvisor", headers
            ),
        }
        for shape in options.shapes or SHAPES:
            make = shapes[shape]
            warm = [make(-1 - i) for i in range(min(options.requests, 200))]
            requests = [make(i) for i in range(options.requests)]
            for data in warm:
                await connection.request(data)
            if options.callgrind:
                callgrind("-i", "on")
                callgrind("-z")
            started = time.process_time()
            for data in requests:
                answer = await connection.request(data)
                if not answer.startswith((b"HTTP/1.1 200", b"HTTP/1.1 201")):
                    raise SystemExit(f"{shape}: {answer[:300]!r}")
            spent = time.process_time() - started
            figure = f"{spent / options.requests * 1e6:.1f} µs CPU"
            if options.callgrind:
                counted = sum(map(int, THREAD_TOTAL.findall(callgrind("-e").replace(",", ""))))
                callgrind("-i", "off")
                figure = f"{counted / options.requests:,.0f} instructions"
            print(f"{shape}: {figure} a request ({options.requests} requests, "
                  f"auth {options.auth})")  # fmt: skip
    finally:
        await plane.stop()


THREAD_TOTAL = re.compile(r"^\s*Th \d+\s+(\d+)", re.MULTILINE)
"""A thread's instruction count in callgrind_control's totals."""


def callgrind(*arguments: str) -> str:
    """callgrind_control's answer for this process (run under callgrind)."""
    command = ["callgrind_control", *arguments, str(os.getpid())]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shapes", nargs="*", choices=[[], *SHAPES], help="what to request")
    parser.add_argument("--requests", type=int, default=5000, help="requests a shape (5000)")
    parser.add_argument("--auth", choices=("none", "token", "cert"), default="none")
    parser.add_argument("--nodes", type=int, default=20, help="in-process nodes scraped (20)")
    parser.add_argument(
        "--callgrind", action="store_true", help="count instructions (under callgrind)"
    )
    with VirtualClock() as clock:
        clock.run(measure(parser.parse_args(), clock))


if __name__ == "__main__":
    main()
