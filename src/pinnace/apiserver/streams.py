"""pods/exec, pods/attach and pods/portforward: the API server finds the pod and its
container as kube-apiserver's ExecLocation, AttachLocation and PortForwardLocation do
(pkg/registry/core/pod/strategy.go), and the node agent running the pod serves the session:
the nodes `pinnace up` runs itself register a `StreamSource` with the server (as they
register a `LogSource` for pods/log), and a `pinnace agent` process serves its nodes' sessions
on its kubelet endpoint, to which the API server proxies them as kube-apiserver proxies them to
the kubelet's streaming server (`pinnace.apiserver.http.kubelet_proxy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pinnace.api import catalog, status
from pinnace.api.objects import Object
from pinnace.api.streams import Forward, Session, StreamError, StreamOptions

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer


class StreamSource(Protocol):
    """The node agents' side, as the kubelet's GetExec, GetAttach and CRI's PortForward: each
    raises StreamError when the node cannot serve it (Unreachable when the API server cannot
    reach the node)."""

    def exec(self, pod: Object, options: StreamOptions) -> Session: ...

    def attach(self, pod: Object, options: StreamOptions) -> Session: ...

    def port_forward(self, pod: Object, port: int) -> Forward: ...


async def stream_pod(
    server: APIServer, namespace: str, name: str, container: str | None
) -> tuple[Object, str]:
    """The pod and the container a session is for (`container` None for port-forward):
    streamLocation's checks, with kube-apiserver's errors."""
    pod = await server.get(catalog.kind("", "pods"), namespace, name)
    chosen = "" if container is None else _container(pod, container)
    if not (pod.get("spec") or {}).get("nodeName"):
        raise status.bad_request(f"pod {name} does not have a host assigned")
    return pod, chosen


def source(server: APIServer) -> StreamSource:
    if server.stream_source is None:
        raise StreamError("no node agent serves streams")
    return server.stream_source


def _container(pod: Object, wanted: str) -> str:
    """validateContainer: the container named, or the pod's only one."""
    spec = pod.get("spec") or {}
    apps = [c.get("name", "") for c in spec.get("containers") or []]
    every = [
        c.get("name", "")
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in spec.get(key) or []
    ]
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in every:
            raise status.bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(apps) == 1:
        return apps[0]
    message = f"a container name must be specified for pod {name}"
    raise status.bad_request(f"{message}, choose one of: [{' '.join(every)}]" if apps else message)
