"""What the API server asks of kubelets it does not run itself: pods/log, the upgraded
connections of pods/exec, pods/attach and pods/portforward, and the stats the metrics API
reads (kube-apiserver's pkg/kubelet/client); `pinnace.client.kubelet` dials them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from pinnace.api.objects import Object


@dataclass
class Upgrading:
    """A kubelet's answer to an upgrade request, read before the API server answers its
    client (kube-apiserver's UpgradeAwareHandler): the status and headers, the body of a
    refusal, and the connection, whose bytes are the upgraded protocol's after a 101."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


@dataclass
class Relayed:
    """A kubelet's answer as the API server's node proxy relays it (kube-apiserver's
    UpgradeAwareHandler, a reverse proxy): its status and headers (less those of the
    connection, which the API server writes itself), and its body: whole when the kubelet gave
    its length (`body`), else its pieces as they come (`stream`)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None


class Kubelets(Protocol):
    def remote(self, node: Object) -> bool:
        """Whether the Node's kubelet runs outside the API server's process."""
        ...

    async def get(self, node: Object, path: str) -> AsyncIterator[bytes]:
        """GET `path` of the node's kubelet: its body as it comes; the API server's
        StatusError when the kubelet cannot be reached or refuses."""
        ...

    async def post(self, node: Object, path: str) -> dict[str, Any]:
        """POST `path` of the node's kubelet: its JSON answer; its Status answer as the API
        server's StatusError."""
        ...

    async def upgrade(
        self, node: Object, method: str, path: str, headers: list[tuple[str, str]]
    ) -> Upgrading:
        """Send the node's kubelet a request for `path` with these headers (an upgrade's) and
        read its answer; `pinnace.api.streams.Unreachable` when it cannot be dialled."""
        ...
