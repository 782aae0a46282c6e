"""metrics.k8s.io/v1beta1: what nodes and pods use now, as metrics-server v0.7 serves it.

In Kubernetes metrics-server scrapes every kubelet and kube-apiserver proxies the group to it;
here the node agents register a `MetricsSource` with the server, which answers from their stats
summaries, and the nodes of `pinnace agent` processes are scraped when asked for
(`APIServer.agent_summaries`: one request an agent process). NodeMetrics and PodMetrics carry
CPU in nanocores (`123456789n`, or a shorter form when exact, as resource.NewScaledQuantity
writes it) and the memory working set in bytes as a BinarySI quantity (`1442164Ki`). A node
or pod without stats is left out of lists, and a get of it answers NotFound, as metrics-server
does. Pods are reported only while Running.
"""

from __future__ import annotations

import contextlib
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from pinnace.api import catalog, status
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import ListOptions
from pinnace.clock.rfc3339 import format_time
from pinnace.resources.quantity import BINARY_SI, Quantity

if TYPE_CHECKING:
    from pinnace.api.stats import ContainerStats, PodStats, Summary
    from pinnace.apiserver.server import APIServer

MetricsSource = Callable[[], "Mapping[str, Summary]"]
"""() -> the latest stats summary of every node, by node name. Pod metrics look up only the
nodes their pods run on, so a mapping that computes summaries on access costs only those."""

GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
WINDOW = "10s"
"""The interval the usage is averaged over (metrics.k8s.io `window`), as a Go duration."""

NODE_METRICS = Kind(
    GROUP, VERSION, "NodeMetrics", "nodes", False, "V1beta1NodeMetrics", verbs=("get", "list")
)
POD_METRICS = Kind(
    GROUP, VERSION, "PodMetrics", "pods", True, "V1beta1PodMetrics", verbs=("get", "list")
)
KINDS = (NODE_METRICS, POD_METRICS)


def usage(cpu_nano_cores: int, memory_working_set_bytes: int) -> Object:
    """A metrics.k8s.io usage: CPU as resource.NewScaledQuantity(n, -9), memory as BinarySI."""
    return {
        "cpu": str(Quantity(f"{cpu_nano_cores}n")),
        "memory": str(Quantity.from_milli(memory_working_set_bytes * 1000, BINARY_SI)),
    }


def _source(server: APIServer) -> MetricsSource:
    """The registered source; without one the group is not served (404 as for any path)."""
    if server.metrics_source is None:
        raise status.StatusError(
            404, "NotFound", "the server could not find the requested resource", {}
        )
    return server.metrics_source


async def _summaries(
    server: APIServer, nodes: Iterable[Object], local: Mapping[str, Summary] | None = None
) -> Mapping[str, Summary]:
    """The registered source's summaries (`local` when the caller has them), and those of the
    `nodes` a `pinnace agent` process runs, scraped now (`APIServer.agent_summaries`); a node
    whose scrape fails is left out, as metrics-server leaves out a node it could not scrape."""
    local = _source(server)() if local is None else local
    agents = server.agent_summaries
    remote = [n for n in nodes if agents is not None and agents.remote(n)]
    if agents is None or not remote:
        return local
    return ChainMap(await agents.scrape(remote), local)  # type: ignore[arg-type]


async def _pods_summaries(server: APIServer, pods: list[Object]) -> Mapping[str, Summary]:
    """The summaries of the nodes `pods` run on: those the source has not, scraped."""
    local = _source(server)()
    others = {
        node
        for pod in pods
        if (node := (pod.get("spec") or {}).get("nodeName")) and node not in local
    }
    nodes = []
    for name in sorted(others):
        with contextlib.suppress(status.StatusError):
            nodes.append(await server.get(catalog.kind("", "nodes"), "", name))
    return await _summaries(server, nodes, local)


def _node_metrics(node: Object, summary: Summary, now: float) -> Object:
    meta = node["metadata"]
    labels = meta.get("labels")
    return {
        "metadata": {
            "name": meta["name"],
            "creationTimestamp": format_time(now),
            **({"labels": labels} if labels else {}),
        },
        "timestamp": format_time(summary.time),
        "window": WINDOW,
        "usage": usage(summary.node.cpu_usage_nano_cores, summary.node.memory_working_set_bytes),
    }


def _container_metrics(container: ContainerStats) -> Object:
    return {
        "name": container.name,
        "usage": usage(container.cpu_usage_nano_cores, container.memory_working_set_bytes),
    }


def _pod_metrics(pod: Object, stats: PodStats, time: float, now: float) -> Object:
    meta = pod["metadata"]
    return {
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "creationTimestamp": format_time(now),
        },
        "timestamp": format_time(time),
        "window": WINDOW,
        "containers": [_container_metrics(c) for c in stats.containers],
    }


def _list(kind: Kind, items: list[Object]) -> Object:
    return {"kind": f"{kind.kind}List", "apiVersion": API_VERSION, "metadata": {}, "items": items}


def _with_kind(kind: Kind, item: Object) -> Object:
    return {"kind": kind.kind, "apiVersion": API_VERSION, **item}


async def list_node_metrics(
    server: APIServer, label_selector: str = "", field_selector: str = ""
) -> Object:
    """NodeMetricsList of the nodes the selectors match that have stats, by name."""
    options = ListOptions(label_selector=label_selector, field_selector=field_selector)
    nodes = (await server.list(catalog.kind("", "nodes"), "", options))["items"]
    summaries = await _summaries(server, nodes)
    now = server.clock.now()
    items = [
        _node_metrics(node, summaries[node["metadata"]["name"]], now)
        for node in sorted(nodes, key=lambda n: n["metadata"]["name"])
        if node["metadata"]["name"] in summaries
    ]
    return _list(NODE_METRICS, items)


async def get_node_metrics(server: APIServer, name: str) -> Object:
    try:
        node = await server.get(catalog.kind("", "nodes"), "", name)
    except status.StatusError as e:
        if e.code == 404:
            raise status.not_found("node", name) from None
        raise
    summary = (await _summaries(server, [node])).get(name)
    if summary is None:
        raise status.not_found("nodemetrics", name, GROUP)
    return _with_kind(NODE_METRICS, _node_metrics(node, summary, server.clock.now()))


def _pod_metrics_of(
    pods: list[Object], summaries: Mapping[str, Summary], now: float
) -> list[Object]:
    """The metrics of the Running `pods` their nodes have stats for, each read from the
    summary of the node it runs on (only those nodes' summaries are looked at)."""
    by_node: dict[str, dict[tuple[str, str], PodStats]] = {}
    found = []
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName", "")
        if (pod.get("status") or {}).get("phase") != "Running" or node not in summaries:
            continue
        summary = summaries[node]
        if node not in by_node:
            by_node[node] = {(p.namespace, p.name): p for p in summary.pods}
        stats = by_node[node].get((pod["metadata"]["namespace"], pod["metadata"]["name"]))
        if stats is not None:
            found.append(_pod_metrics(pod, stats, summary.time, now))
    return found


async def list_pod_metrics(
    server: APIServer, namespace: str, label_selector: str = "", field_selector: str = ""
) -> Object:
    """PodMetricsList of the Running pods in `namespace` ("" for all) the selectors match
    that have stats, by namespace and name."""
    options = ListOptions(label_selector=label_selector, field_selector=field_selector)
    pods = (await server.list(catalog.kind("", "pods"), namespace, options))["items"]
    summaries = await _pods_summaries(server, pods)
    ordered = sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    return _list(POD_METRICS, _pod_metrics_of(ordered, summaries, server.clock.now()))


async def get_pod_metrics(server: APIServer, namespace: str, name: str) -> Object:
    try:
        pod = await server.get(catalog.kind("", "pods"), namespace, name)
    except status.StatusError as e:
        if e.code == 404:
            raise status.not_found("pod", name) from None
        raise
    found = _pod_metrics_of([pod], await _pods_summaries(server, [pod]), server.clock.now())
    if not found:
        raise status.not_found("podmetrics", f"{namespace}/{name}", GROUP)
    return _with_kind(POD_METRICS, found[0])
