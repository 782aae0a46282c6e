"""What a simulated container's `wget` gets from a Service: the cluster's DNS names a Service
(`name`, `name.namespace`, `name.namespace.svc`, `name.namespace.svc.cluster.local`, or its
cluster IP), kube-proxy sends the request to one of its ready endpoints (a running, Ready pod
its selector matches), and that pod's server answers as the port-forward responder would: the
welcome page of nginx or httpd when the pod runs one of those images, else a minimal page.
A headless Service's DNS also names each of its pods that has a hostname and the Service's name
as its subdomain (a StatefulSet's: `web-0.nginx`, `web-0.nginx.default`, `….svc`,
`….svc.cluster.local`), while it is ready or the Service publishes not-ready addresses
(CoreDNS's records of the EndpointSlices' hostnames); the pod answers itself.

A name that resolves to no Service is busybox wget's `bad address`; a Service without ready
endpoints refuses the connection, as kube-proxy's REJECT rule makes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
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
        named = _named_pod(host, namespace, services, pods)
        if named is not None:
            return _page(named), ""
        service = _resolve(host, namespace, services)
        if service is None:
            return "", f"bad address '{host}'"
        backend = _ready_backend(service, pods)
        if backend is None:
            ip = (service.get("spec") or {}).get("clusterIP") or host
            return "", f"can't connect to remote host ({ip}): Connection refused"
        return _page(backend), ""

    return get


def _in_cluster(host: str) -> tuple[list[str], bool]:
    """The labels of `host` before its `.svc` (or `.svc.cluster.local`), and whether it had
    that suffix: relative names are looked up through the pod's search domains."""
    name = host.removesuffix("." + CLUSTER_DOMAIN)
    qualified = name.endswith(".svc")
    return name.removesuffix(".svc").split("."), qualified


def _named_pod(
    host: str, namespace: str, services: ServiceLookup, pods: PodLookup
) -> Mapping[str, Any] | None:
    """The pod `host` names as `<hostname>.<headless Service>[.<namespace>]`, if any."""
    labels, qualified = _in_cluster(host)
    if len(labels) != 3 and (qualified or len(labels) != 2):
        return None
    hostname, subdomain = labels[0], labels[1]
    in_namespace = labels[2] if len(labels) == 3 else namespace
    service = next((s for s in services(in_namespace) if s["metadata"]["name"] == subdomain), None)
    spec = (service or {}).get("spec") or {}
    if service is None or spec.get("clusterIP") != "None":
        return None
    for pod in _backends(service, pods, not spec.get("publishNotReadyAddresses")):
        pod_spec = pod.get("spec") or {}
        if pod_spec.get("hostname") == hostname and pod_spec.get("subdomain") == subdomain:
            return pod
    return None


def _resolve(host: str, namespace: str, services: ServiceLookup) -> Mapping[str, Any] | None:
    labels, _ = _in_cluster(host)
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
    return next(_backends(service, pods, ready_only=True), None)


def _backends(
    service: Mapping[str, Any], pods: PodLookup, ready_only: bool
) -> Iterator[Mapping[str, Any]]:
    """The running pods the Service's selector matches (only the Ready ones if `ready_only`)."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return
    matches = selector_from_set(selector)
    for pod in pods(service["metadata"].get("namespace", "")):
        status = pod.get("status") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        labels = pod["metadata"].get("labels") or {}
        wanted = ready or not ready_only
        if wanted and status.get("phase") == "Running" and matches.matches(labels):
            yield pod


def _page(pod: Mapping[str, Any]) -> str:
    for c in (pod.get("spec") or {}).get("containers") or ():
        page = PAGES.get(image_repository(str(c.get("image") or "")))
        if page is not None:
            return page
    return minimal_page(pod["metadata"]["name"])
