"""The API server's connection to kubelets it does not run itself (kube-apiserver's
pkg/kubelet/client and the pods/log proxy of pkg/registry/core/pod/rest/log.go), its
`pinnace.apiserver.kubelets.Kubelets`.

A `pinnace agent` process serves the kubelet API of its nodes (`pinnace.kubelet.server`) and
publishes where in each Node's status: the address chosen by kube-apiserver's default
--kubelet-preferred-address-types (Hostname, InternalDNS, InternalIP, ExternalDNS,
ExternalIP) and `daemonEndpoints.kubeletEndpoint.Port`. Over TLS the API server presents its
kubelet client certificate (--kubelet-client-certificate) and, as kube-apiserver without
--kubelet-certificate-authority, does not verify the kubelet's serving certificate.

A kubelet's error answer is relayed as GenericHttpResponseChecker relays it (400 BadRequest and
500 InternalError with the kubelet's text); a kubelet that cannot be dialled is the error of
the Go client's Get (`Get "https://…/containerLogs/…": dial tcp …: connect: connection
refused`).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Callable
from typing import Any

from pinnace.api import status
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
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
        """GET `path` of the node's kubelet: its body as it comes, once the answer is a 200."""
        return (await self._get(node, path))[1]

    async def fetch(self, node: Object, path: str) -> tuple[bytes, str]:
        """GET `path` of the node's kubelet whole: (body, content type), as the API server's
        node proxy relays it."""
        connection, body = await self._get(node, path)
        return b"".join([chunk async for chunk in body]), connection.content_type

    async def post(self, node: Object, path: str) -> dict[str, Any]:
        """POST `path` of the node's agent process (FAULTS_PATH, RUN_PATH): its JSON answer;
        its Status answer as the API server's StatusError."""
        base = self.location(node)
        url = base + path
        connection = await self._dial(base, url)
        try:
            code, body = await connection.request("POST", path, headers=_node_header(node))
        except HTTPError as e:
            raise status.internal_error(f'Post "{url}": {e}') from None
        finally:
            connection.close()
        answer: dict[str, Any] = json.loads(body)
        if code != 200:
            reason, message = answer.get("reason", ""), answer.get("message", "")
            raise StatusError(code, reason, message, answer.get("details"))
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
        if code != 200:
            text = b"".join([chunk async for chunk in body])[:MAX_ERROR_BYTES]
            connection.close()
            raise _relayed(code, text.decode("utf-8", "replace"))
        return connection, _closing(connection, body)

    async def _dial(self, base: str, url: str) -> Connection:
        host_port = base.split("://", 1)[1]
        host, _, port = host_port.rpartition(":")
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host.strip("[]"), int(port), ssl=self.tls), DIAL_TIMEOUT
            )
        except TimeoutError:
            raise _unreachable(url, host_port, "i/o timeout") from None
        except ConnectionRefusedError:
            raise _unreachable(url, host_port, "connect: connection refused") from None
        except OSError as e:
            raise _unreachable(url, host_port, f"connect: {e.strerror or e}") from None
        return Connection(reader, writer, host_port)


def _node_header(node: Object) -> str:
    return f"{NODE_HEADER}: {node['metadata']['name']}\r\n"


def _unreachable(url: str, address: str, why: str) -> StatusError:
    """What kube-apiserver answers when its Get of the kubelet fails to dial."""
    return StatusError(500, "", f'Get "{url}": dial tcp {address}: {why}')


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
