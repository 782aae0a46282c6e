"""pods/log: the API server finds the pod and its container, and the node agent running the pod
serves the text (in Kubernetes the apiserver proxies to the kubelet; here node agents register
a `LogSource` with the server)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pinnace.api import catalog, status
from pinnace.apiserver.objects import Object

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer


@dataclass(frozen=True)
class LogOptions:
    container: str = ""
    previous: bool = False
    tail_lines: int | None = None
    timestamps: bool = False


LogSource = Callable[[Object, str, LogOptions], Awaitable[str]]
"""(pod, container name, options) -> the container's log text."""


async def read_log(server: APIServer, namespace: str, name: str, options: LogOptions) -> str:
    pods = catalog.by_resource("", "pods")
    assert pods is not None
    pod = await server.get(pods, namespace, name)
    container = _container(pod, options.container)
    if not (pod.get("spec") or {}).get("nodeName"):
        return ""  # no node runs it yet: kube-apiserver answers with an empty log
    if server.log_source is None:
        raise status.bad_request(
            f'container "{container}" in pod "{name}" is not available: no node agent serves logs'
        )
    return await server.log_source(pod, container, options)


def _container(pod: Object, wanted: str) -> str:
    spec = pod.get("spec") or {}
    names = [c.get("name", "") for c in spec.get("containers") or []]
    others = [c.get("name", "") for c in spec.get("initContainers") or []] + [
        c.get("name", "") for c in spec.get("ephemeralContainers") or []
    ]
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in names and wanted not in others:
            raise status.bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(names) == 1:
        return names[0]
    raise status.bad_request(
        f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
        + (f" or one of the init containers: [{' '.join(others)}]" if others else "")
    )
