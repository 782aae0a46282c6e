"""Node usage read through the metrics API (metrics.k8s.io), for a scheduler in a process of
its own: what Trimaran's load watcher reads from metrics-server (paypal/load-watcher's
metricsserver provider, polled by scheduler-plugins' pkg/trimaran/collector.go every 30 s).

Each poll lists NodeMetrics (and, for plugins reading forecasts, PodMetrics of every
namespace) and gives them as the stats summaries an in-process scheduler samples, so the node
table averages them over the plugins' window exactly as it does in `pinnace up`. A node the
answer leaves out (no metrics yet, or its scrape failed) gets no sample this time, as the
load watcher leaves it out of its map. A poll that fails (the API server unreachable, the
metrics API not served) gives nothing: the collector logs "Unable to update metrics" and keeps
what it had, and so the table keeps its samples until the next poll.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.api.status import StatusError
from pinnace.apiserver.metrics import NODE_METRICS, POD_METRICS
from pinnace.client import Client
from pinnace.client.transport import HTTPError
from pinnace.clock.rfc3339 import parse_time
from pinnace.resources.quantity import Quantity

log = logging.getLogger(__name__)

MetricsLister = Callable[[Kind], Awaitable[Object]]
"""NODE_METRICS or POD_METRICS -> its list, of every namespace (NodeMetricsList,
PodMetricsList)."""

NANO = 10**9


def lister(client: Client) -> MetricsLister:
    """The metrics API's lists, read through `client`."""

    async def listed(kind: Kind) -> Object:
        return await client.list(kind)

    return listed


async def read_usage(
    metrics: MetricsLister, node_of: Callable[[str], str | None], with_pods: bool
) -> dict[str, Summary] | None:
    """Node name -> its usage as a stats summary (with its pods' when `with_pods`, each pod
    placed on the node `node_of("namespace/name")` names); None when the metrics API could not
    be read."""
    try:
        nodes = await metrics(NODE_METRICS)
        pods = await metrics(POD_METRICS) if with_pods else {}
    except (StatusError, HTTPError, OSError) as e:
        log.error("Unable to update metrics: %s", e)
        return None
    summaries = {
        item["metadata"]["name"]: Summary(parse_time(item["timestamp"]), _node(item))
        for item in nodes.get("items") or ()
    }
    for item in pods.get("items") or ():
        meta = item["metadata"]
        node = node_of(f"{meta['namespace']}/{meta['name']}")
        if node in summaries:
            containers = [
                ContainerStats(c["name"], *_usage(c.get("usage")))
                for c in item.get("containers") or ()
            ]
            summaries[node].pods.append(PodStats("", meta["namespace"], meta["name"], containers))
    return summaries


def _node(item: Object) -> NodeStats:
    cpu, memory = _usage(item.get("usage"))
    return NodeStats(cpu_usage_nano_cores=cpu, memory_working_set_bytes=memory)


def _usage(usage: Mapping[str, Any] | None) -> tuple[int, int]:
    """(CPU in nanocores, memory working set in bytes) of a metrics.k8s.io usage."""
    usage = usage or {}
    cpu = Quantity(usage.get("cpu", "0")).as_fraction() * NANO
    return int(cpu), Quantity(usage.get("memory", "0")).value()
