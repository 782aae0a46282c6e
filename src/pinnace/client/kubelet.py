"""The API server's connection to kubelets it does not run itself (kube-apiserver's
pkg/kubelet/client and the pods/log proxy of pkg/registry/core/pod/rest/log.go), its
`pinnace.apiserver.kubelets.Kubelets`.

A `pinnace agent` process serves the kubelet API of its nodes (`pinnace.kubelet.server`) and
publishes where in each Node's status: the address chosen by kube-apiserver's default
--kubelet-preferred-address-types (Hostname, InternalDNS, InternalIP, ExternalDNS,
ExternalIP) and `daemonEndpoints.kubeletEndpoint.Port`. Over TLS the API server presents its
kubelet client certificate (--kubelet-client-certificate) and, as kube-apiserver without
--kubelet-certificate-authority, does not verify the kubelet's serving certificate.

The streaming subresources are upgraded connections: the request goes to the kubelet as the
client sent it (`upgrade`), and the API server relays its answer. The node proxy's requests
go over kept-alive connections (`relay`, `kubelet_relay`).

A kubelet's error answer is relayed as GenericHttpResponseChecker relays it (400 BadRequest and
500 InternalError with the kubelet's text); a kubelet that cannot be dialled is the error of
the Go client's Get (`Get "https://…/containerLogs/…": dial tcp …: connect: connection
refused`).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.streams import Unreachable
from pinnace.apiserver.kubelets import Relayed, Upgrading
from pinnace.client.http import SUCCESS, status_error
from pinnace.client.kubelet_relay import KubeletConnections, forwarded
from pinnace.client.transport import Connection, HTTPError

PREFERRED_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")
DEFAULT_KUBELET_PORT = 10250
DIAL_TIMEOUT = 30.0
"""Seconds the dial of a kubelet may take (the kubelet client's dialer)."""
MAX_ERROR_BYTES = 1 << 20
NODE_HEADER = "Pinnace-Node"
"""Which of an agent process's nodes a request is for, where the path does not say (a
kubelet serves one node; the process all of its own on one port)."""
FAULTS_PATH = "/pinnace/faults"
"""`POST <FAULTS_PATH>/<fault>` (stop, start, partition, slow?factor=F) of an agent process:
the fault of its node the Pinnace-Node header names (Pinnace's own path, where the API server
relays `pinnace node` for an agent's nodes); the node's state, or a Status, as JSON."""


class KubeletClient:
    def __init__(self, remote: Callable[[Object], bool]) -> None:
        """`remote`: whether a Node's kubelet runs outside this process (the nodes of the
        process's own pool are asked in-process)."""
        self.remote = remote
        self.tls: ssl.SSLContext | None = None
        """Set by `pinnace up --tls`: the kubelet client certificate; None dials over HTTP."""
        self.connections = KubeletConnections(self._open)
        """The node proxy's kept-alive connections."""

    def location(self, node: Object) -> str:
        """The node's kubelet as `scheme://host:port`."""
        node_status = node.get("status") or {}
        addresses = {a.get("type"): a.get("address") for a in node_status.get("addresses") or []}
        host = next((addresses[t] for t in PREFERRED_ADDRESS_TYPES if addresses.get(t)), "")
        if not host:
            name = node["metadata"]["name"]
            raise status.bad_request(f'node "{name}" has no addresses')
        endpoints = node_status.get("daemonEndpoints") or {}
        port = (endpoints.get("kubeletEndpoint") or {}).get("Port") or DEFAULT_KUBELET_PORT
        scheme = "http" if self.tls is None else "https"
        return f"{scheme}://{host if ':' not in host else f'[{host}]'}:{port}"

    async def get(self, node: Object, path: str) -> AsyncIterator[bytes]:
        """GET `path` of the node's kubelet: its body as it comes, once the answer is a 2xx."""
        return (await self._get(node, path))[1]

    async def relay(
        self,
        address: str,
        node: str,
        method: str,
        path: str,
        headers: Iterable[tuple[bytes, bytes]],
    ) -> Relayed:
        """The node proxy's request (`method path` with the query, the client's headers) sent
        to the kubelet of `node` at `address` (`address_of`), over a kept-alive connection;
        its answer as it is relayed (`kubelet_relay`)."""
        lines = forwarded(headers) + f"{NODE_HEADER}: {node}\r\n".encode("latin-1")
        return await self.connections.relay(address, method, path, lines)

    def address_of(self, node: Object) -> str:
        """host:port of the node's kubelet (`location` less its scheme)."""
        return self.location(node).split("://", 1)[1]

    async def post(self, node: Object, path: str) -> dict[str, Any]:
        """POST `path` of the node's agent process (FAULTS_PATH): its JSON answer; a refusal
        as the StatusError its Status (or, for a body that is none, its code) describes."""
        base = self.location(node)
        url = base + path
        connection = await self._dial(base, url)
        try:
            code, body = await connection.request("POST", path, headers=_node_header(node))
        except HTTPError as e:
            raise status.internal_error(f'Post "{url}": {e}') from None
        finally:
            connection.close()
        if code not in SUCCESS:
            raise status_error(code, body, "POST", connection.content_type, connection.retry_after)
        answer: dict[str, Any] = json.loads(body)
        return answer

    async def _get(self, node: Object, path: str) -> tuple[Connection, AsyncIterator[bytes]]:
        base = self.location(node)
        url = base + path
        connection = await self._dial(base, url)
        try:
            code, body = await connection.body(path, _node_header(node))
        except HTTPError as e:
            connection.close()
            raise status.internal_error(f'Get "{url}": {e}') from None
        if code not in SUCCESS:  # GenericHttpResponseChecker's 200 to 206
            text = b"".join([chunk async for chunk in body])[:MAX_ERROR_BYTES]
            connection.close()
            raise _relayed(code, text.decode("utf-8", "replace"))
        return connection, _closing(connection, body)

    async def upgrade(
        self, node: Object, method: str, path: str, headers: list[tuple[str, str]]
    ) -> Upgrading:
        """Send `method path` with these headers to the node's kubelet, as kube-apiserver's
        UpgradeAwareHandler forwards an upgrade request, and read the answer's head (and a
        refusal's body)."""
        host_port = self.location(node).split("://", 1)[1]
        reader, writer = await self._open(host_port)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {host_port}"]
        lines += [f"{name}: {value}" for name, value in headers]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        try:
            code, fields = _head(await reader.readuntil(b"\r\n\r\n"))
            body = b""
            if code != 101:
                length = next((v for n, v in fields if n.lower() == "content-length"), "")
                if length.isdigit():
                    body = await reader.readexactly(min(int(length), MAX_ERROR_BYTES))
                else:
                    body = await _until_closed(reader)
        except asyncio.IncompleteReadError:  # it closed without an answer, as Go reports it
            writer.close()
            raise StatusError(500, "", "unexpected EOF") from None
        except (asyncio.LimitOverrunError, OSError, ValueError, IndexError) as e:
            writer.close()
            raise StatusError(500, "", str(e)) from None
        return Upgrading(code, fields, body, reader, writer)

    async def _dial(self, base: str, url: str) -> Connection:
        host_port = base.split("://", 1)[1]
        try:
            reader, writer = await self._open(host_port)
        except Unreachable as e:
            raise StatusError(500, "", f'Get "{url}": {e}') from None
        return Connection(reader, writer, host_port)

    async def _open(self, host_port: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the kubelet; Unreachable with the dial's error."""
        host, _, port = host_port.rpartition(":")
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), int(port), ssl=self.tls), DIAL_TIMEOUT
            )
        except TimeoutError:
            raise Unreachable(host_port, "i/o timeout") from None
        except ConnectionRefusedError:
            raise Unreachable(host_port, "connect: connection refused") from None
        except OSError as e:
            raise Unreachable(host_port, f"connect: {e.strerror or e}") from None


def _node_header(node: Object) -> str:
    return f"{NODE_HEADER}: {node['metadata']['name']}\r\n"


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    """An answer's body without a Content-Length: what comes until the kubelet closes."""
    body = b""
    while len(body) < MAX_ERROR_BYTES and (chunk := await reader.read(MAX_ERROR_BYTES)):
        body += chunk
    return body[:MAX_ERROR_BYTES]


def _head(head: bytes) -> tuple[int, list[tuple[str, str]]]:
    """The status and header fields of an answer's head (ValueError when it is none)."""
    status_line, *lines = head.decode("latin-1").split("\r\n")
    code = int(status_line.split(" ", 2)[1])
    fields = [line.partition(":") for line in lines if line]
    return code, [(name.strip(), value.strip()) for name, _, value in fields]


def _relayed(code: int, text: str) -> StatusError:
    """GenericHttpResponseChecker: the kubelet's refusal as the API server's error."""
    if code == 400:
        return status.bad_request(text)
    if code == 500:
        return status.internal_error(text)
    return StatusError(code, "NotFound" if code == 404 else "", text)


async def _closing(connection: Connection, body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    try:
        async for chunk in body:
            yield chunk
    except HTTPError:
        return  # the kubelet went away mid-answer: the stream ends, as kube-apiserver's copy
    finally:
        connection.close()
