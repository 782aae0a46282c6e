"""pods/proxy and services/proxy, as kube-apiserver v1.32 serves them (ProxyREST of
pkg/registry/core/pod/rest and pkg/registry/core/service, with apimachinery's
UpgradeAwareHandler): `/api/v1/namespaces/NS/pods/NAME[:PORT]/proxy[/PATH]` carries one HTTP
request to the pod's IP, at PORT or the first port its containers declare (80 when none
does); `/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy[/PATH]` to one of the
Service's ready endpoints, picked at random, for the service port named (by name or number;
the unnamed one when none is). The answer is relayed as it is.

The simulated pod has no network: the request goes, as one port-forward connection would, to
what listens on that port in the pod (`pinnace.kubelet.listeners`), and its answer is read
back. kube-apiserver's own refusals are Status objects: a pod without an IP is 400 `address
not allowed`, a port nothing listens on 503 `error trying to reach service: dial tcp
IP:PORT: connect: connection refused`, a Service without a ready endpoint 503 `no endpoints
available for service "web"`.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from pinnace.api import catalog, status
from pinnace.api.objects import Object
from pinnace.api.streams import STDOUT, StreamError, Unreachable
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import Response
from pinnace.apiserver.logs import remote_node
from pinnace.apiserver.server import APIServer
from pinnace.apiserver.streams import source

_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/(pods|services)/([^/]+)/proxy(/.*)?$")
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te")
)
DEFAULT_PORT = 80
"""http's port: where the proxy dials when neither the URL nor the pod names one."""


def is_proxy(path: str) -> bool:
    return _PATH.match(path) is not None


async def relay(server: APIServer, request: Request, rand: random.Random) -> Response:
    """The pod's answer to the request, or kube-apiserver's refusal; `rand` picks a
    Service's endpoint."""
    found = _PATH.match(request.path)
    assert found is not None
    namespace, resource, named, rest = found.groups()
    name, port = _name_and_port(named, resource)
    if resource == "pods":
        pod = await server.get(catalog.kind("", "pods"), namespace, name)
    else:
        pod, port = await _service_endpoint(server, namespace, name, port, rand)
    address = (pod.get("status") or {}).get("podIP") or ""
    if not address:
        raise status.bad_request("address not allowed")
    if rest is None:
        # UpgradeAwareHandler's redirect of an empty path to one that ends in "/".
        query = request.scope.get("query_string", b"").decode("latin-1")
        location = request.path + "/" + (f"?{query}" if query else "")
        return Response(301, b"", "text/html; charset=utf-8", [("Location", location)])
    port = port or _first_declared_port(pod)
    reached = f"{address}:{port}"
    if not port.isdigit():
        raise _unreachable(f"dial tcp: lookup tcp/{port}: unknown port")
    sent = _request_bytes(request, rest, reached) + await request.body()
    try:
        answer = await _exchange(server, pod, int(port), sent)
    except Unreachable:
        # The pod's node is down: its IP does not answer at all.
        raise _unreachable(f"dial tcp {reached}: i/o timeout") from None
    if answer is None:
        raise _unreachable(f"dial tcp {reached}: connect: connection refused")
    return _response(answer)


def _name_and_port(named: str, resource: str) -> tuple[str, str]:
    """The name and port of a URL's `name`, `name:port` or `scheme:name:port` (http, https),
    as apimachinery's SplitSchemeNamePort reads them; the proxy dials the pod in plain HTTP
    whatever the scheme."""
    parts = named.split(":")
    if len(parts) == 3:
        scheme, name, port = parts
    else:
        scheme, name, port = "", parts[0], ":".join(parts[1:])
    if len(parts) > 3 or not name or scheme not in ("", "http", "https"):
        raise status.bad_request(f'invalid {resource.removesuffix("s")} request "{named}"')
    return name, port


async def _service_endpoint(
    server: APIServer, namespace: str, name: str, port: str, rand: random.Random
) -> tuple[Object, str]:
    """The pod behind one ready endpoint of the Service at its service `port` (a name, a
    number or ""), and the endpoint's port, as the service registry's ResourceLocation finds
    them in the Service's Endpoints."""
    if port.isdigit():
        service = await server.get(catalog.kind("", "services"), namespace, name)
        declared = [
            p for p in (service.get("spec") or {}).get("ports") or () if p.get("port") == int(port)
        ]
        if not declared:
            raise status.StatusError(
                503, "ServiceUnavailable", f'no service port {port} found for service "{name}"'
            )
        port = str(declared[0].get("name") or "")
    endpoints = await server.get(catalog.kind("", "endpoints"), namespace, name)
    subsets: list[Any] = endpoints.get("subsets") or []
    start = rand.randrange(len(subsets)) if subsets else 0
    for subset in subsets[start:] + subsets[:start]:
        addresses = subset.get("addresses") or []
        for endpoint_port in subset.get("ports") or ():
            if str(endpoint_port.get("name") or "") != port or not addresses:
                continue
            first = rand.randrange(len(addresses))
            for address in addresses[first:] + addresses[:first]:
                pod = await _pod_at(server, address)
                if pod is not None:
                    return pod, str(endpoint_port.get("port"))
    raise status.StatusError(
        503, "ServiceUnavailable", f'no endpoints available for service "{name}"'
    )


async def _pod_at(server: APIServer, address: dict[str, Any]) -> Object | None:
    """The pod an endpoint address names, if it still has that IP (isValidAddress)."""
    target = address.get("targetRef") or {}
    if target.get("kind") != "Pod":
        return None
    try:
        pods = catalog.kind("", "pods")
        pod = await server.get(pods, str(target.get("namespace", "")), str(target.get("name")))
    except status.StatusError:
        return None
    pod_ips = [ip.get("ip") for ip in (pod.get("status") or {}).get("podIPs") or ()]
    return pod if address.get("ip") in pod_ips else None


def _first_declared_port(pod: Object) -> str:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for declared in container.get("ports") or ():
            return str(declared.get("containerPort"))
    return str(DEFAULT_PORT)


def _request_bytes(request: Request, path: str, host: str) -> bytes:
    query = request.scope.get("query_string", b"").decode("latin-1")
    head = [f"{request.method} {path}{'?' + query if query else ''} HTTP/1.1", f"Host: {host}"]
    head += [
        f"{name}: {value}"
        for name, value in request.header_lines()
        if name.lower() not in _HOP_BY_HOP and name.lower() not in ("host", "authorization")
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")


async def _exchange(server: APIServer, pod: Object, port: int, sent: bytes) -> bytes | None:
    """What the listener at `port` in the pod answers `sent` (None: the connection was
    refused); Unreachable when the pod's node is down."""
    if await remote_node(server, pod) is not None:
        raise _unreachable("pods/proxy reaches pods of in-process nodes only")
    try:
        forward = source(server).port_forward(pod, port)
    except Unreachable:
        raise
    except StreamError:
        return None
    connection = _Connection(sent)
    await forward(connection)
    return bytes(connection.answer)


class _Connection:
    """One TCP connection as the listener sees it: the request, then its end."""

    def __init__(self, sent: bytes) -> None:
        self.unread = sent
        self.answer = bytearray()

    async def read(self) -> bytes:
        data, self.unread = self.unread, b""
        await asyncio.sleep(0)
        return data

    async def write(self, stream: int, data: bytes) -> None:
        if stream == STDOUT:
            self.answer += data


def _response(answer: bytes) -> Response:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split(" ", 2)
    code = int(words[1]) if len(words) > 1 and words[1].isdigit() else 502
    content_type, headers = "text/plain; charset=utf-8", []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        value = value.strip()
        if name.lower() == "content-type":
            content_type = value
        elif name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
            headers.append((name, value))
    return Response(code, body, content_type, headers)


def _unreachable(why: str) -> status.StatusError:
    return status.StatusError(503, "ServiceUnavailable", f"error trying to reach service: {why}")
