"""What the API server asks of kubelets it does not run itself: pods/log, non-interactive
pods/exec (`/run`) and the stats the metrics API reads (kube-apiserver's pkg/kubelet/client);
`pinnace.client.kubelet` dials them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from pinnace.api.objects import Object

RUN_PATH = "/run"
"""`POST <RUN_PATH>/<namespace>/<pod>/<container>?command=…` (one `command` per argument) of an
agent process, the kubelet's /run: runs the command in the container, and answers with
Pinnace's form of the result, `{"stdout": …, "stderr": …, "exitCode": N}` as JSON (the
kubelet's answers with the combined output alone), or a Status; how the API server serves a
non-interactive pods/exec on the process's nodes."""


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
