"""What a simulated container's `wget` gets from a Service: the cluster's DNS names a Service
(`name`, `name.namespace`, `name.namespace.svc`, `name.namespace.svc.cluster.local`, or its
cluster IP), kube-proxy sends the request to one of its ready endpoints (a running, Ready pod
its selector matches), and that pod's server answers as the port-forward responder would: the
welcome page of nginx or httpd when the pod runs one of those images, else a minimal page.

A name that resolves to no Service is busybox wget's `bad address`; a Service without ready
endpoints refuses the connection, as kube-proxy's REJECT rule makes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pinnace.api.labels import selector_from_set
from pinnace.kubelet.listeners import NGINX_WELCOME
from pinnace.kubelet.runtime import image_repository
from pinnace.kubelet.service_links import ServiceLookup
from pinnace.kubelet.shell import WebGet

PodLookup = Callable[[str], Sequence[Mapping[str, Any]]]
"""namespace -> the pods bound to nodes in it, as the node's informer has them."""

CLUSTER_DOMAIN = "cluster.local"


def no_pods(namespace: str) -> Sequence[Mapping[str, Any]]:
    return ()


HTTPD_WELCOME = "<html><body><h1>It works!</h1></body></html>\n"
PAGES: Mapping[str, str] = {
    "docker.io/library/nginx": NGINX_WELCOME,
    "docker.io/library/httpd": HTTPD_WELCOME,
}


def minimal_page(pod: str) -> str:
    return f"<html><body>{pod}</body></html>\n"


def service_web(namespace: str, services: ServiceLookup, pods: PodLookup) -> WebGet:
    """How a container of `namespace` reaches URLs."""

    def get(url: str) -> tuple[str, str]:
        host = urlsplit(url).hostname or ""
        service = _resolve(host, namespace, services)
        if service is None:
            return "", f"bad address '{host}'"
        backend = _ready_backend(service, pods)
        if backend is None:
            ip = (service.get("spec") or {}).get("clusterIP") or host
            return "", f"can't connect to remote host ({ip}): Connection refused"
        return _page(backend), ""

    return get


def _resolve(host: str, namespace: str, services: ServiceLookup) -> Mapping[str, Any] | None:
    labels = host.removesuffix("." + CLUSTER_DOMAIN).removesuffix(".svc").split(".")
    if all(part.isdigit() for part in labels) and len(labels) == 4:
        for service in services(""):
            if (service.get("spec") or {}).get("clusterIP") == host:
                return service
        return None
    if len(labels) > 2:
        return None
    name, in_namespace = labels[0], labels[1] if len(labels) == 2 else namespace
    for service in services(in_namespace):
        if service["metadata"]["name"] == name:
            return service
    return None


def _ready_backend(service: Mapping[str, Any], pods: PodLookup) -> Mapping[str, Any] | None:
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return None
    matches = selector_from_set(selector)
    for pod in pods(service["metadata"].get("namespace", "")):
        status = pod.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        labels = pod["metadata"].get("labels") or {}
        if ready and status.get("phase") == "Running" and matches.matches(labels):
            return pod
    return None


def _page(pod: Mapping[str, Any]) -> str:
    for c in (pod.get("spec") or {}).get("containers") or ():
        page = PAGES.get(image_repository(str(c.get("image") or "")))
        if page is not None:
            return page
    return minimal_page(pod["metadata"]["name"])
