"""pods/exec, pods/attach and pods/portforward of a pod on a `pinnace agent` process's node:
proxied to the process's kubelet endpoint as kube-apiserver's UpgradeAwareHandler proxies
them (k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go, with the locations of
pkg/registry/core/pod/strategy.go).

The API server dials the kubelet's `/exec/<namespace>/<pod>/<container>`,
`/attach/<namespace>/<pod>/<container>` or `/portForward/<namespace>/<pod>` with the client's
query, sends it the client's upgrade request (without the credentials the API server took:
Authorization and the Impersonate-* headers; under TLS it presents its kubelet client
certificate instead) and reads the answer. A 101 is answered to the client with the kubelet's
headers, and from then on the bytes are copied both ways as they come, until either side
closes; any other answer is relayed as it is. A kubelet that cannot be dialled is the
proxy's error (`error dialing backend: dial tcp …: connect: connection refused`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from pinnace.api.objects import Object
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import TEXT_PLAIN, Headers, Response
from pinnace.apiserver.kubelets import Upgrading

if TYPE_CHECKING:
    from pinnace.apiserver.http.connections import Upgraded
    from pinnace.apiserver.server import APIServer

KUBELET_PATHS = {"exec": "exec", "attach": "attach", "portforward": "portForward"}
"""Each streaming subresource's path on the kubelet."""
READ_SIZE = 64 * 1024
NOT_RELAYED = {"content-type", "content-length", "transfer-encoding", "connection", "date"}
"""Headers of a refusal the API server writes itself."""


def location(subresource: str, pod: Object, container: str, request: Request) -> str:
    """The kubelet's path for the session, with the client's query."""
    meta = pod["metadata"]
    parts = [meta["namespace"], meta["name"]] + ([container] if container else [])
    path = "/".join([KUBELET_PATHS[subresource], *(quote(p, safe="") for p in parts)])
    query = urlencode(request.query, doseq=True)
    return f"/{path}" + (f"?{query}" if query else "")


async def dial(server: APIServer, node: Object, path: str, request: Request) -> Upgrading:
    """Send the client's request to the node's kubelet and read its answer (Unreachable when
    it cannot be dialled)."""
    assert server.kubelets is not None  # the node is remote
    headers = [(name, value) for name, value in request.headers.items() if _forwarded(name)]
    return await server.kubelets.upgrade(node, request.method, path, headers)


def switching(headers: Headers) -> list[tuple[bytes, bytes]]:
    """The kubelet's 101 headers, for the client."""
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]


def refusal(answer: Upgrading) -> Response:
    """The kubelet's answer when it did not upgrade, relayed as it is."""
    answer.writer.close()
    fields = {name.lower(): value for name, value in answer.headers}
    headers = [(n, v) for n, v in answer.headers if n.lower() not in NOT_RELAYED]
    content_type = fields.get("content-type", TEXT_PLAIN)
    return Response(answer.status, answer.body, content_type, headers)


async def relay(answer: Upgrading, client: Upgraded) -> None:
    """Copy the bytes both ways until either side closes, then close both."""

    async def upstream() -> None:
        while data := await client.read():
            answer.writer.write(data)
            await answer.writer.drain()

    async def downstream() -> None:
        while data := await answer.reader.read(READ_SIZE):
            await client.write(data)

    copies = {asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())}
    try:
        await asyncio.wait(copies, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for copy in copies:
            copy.cancel()
        await asyncio.gather(*copies, return_exceptions=True)
        answer.writer.close()
        with contextlib.suppress(OSError):
            client.close()


def _forwarded(header: str) -> bool:
    """Whether a client's header goes to the kubelet: not the host, nor the credentials the
    API server's authentication took from the request."""
    return header not in ("host", "authorization") and not header.startswith("impersonate-")
