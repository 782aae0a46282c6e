"""kube-state-metrics' core families (kubernetes/kube-state-metrics v2, internal/store/pod.go,
node.go, deployment.go, hpa.go), built from informers (started by the first scrape) when
`/metrics/cluster` is read:

- `kube_pod_status_phase{namespace,pod,uid,phase}`: 1 for the pod's phase, 0 for the others
- `kube_pod_container_resource_requests` and `…_limits`
  `{namespace,pod,uid,container,node,resource,unit}`: cpu in cores, memory and storage in bytes,
  other resources as integers; resource names with `.`, `/` and `-` turned into `_`
- `kube_pod_container_status_restarts_total{namespace,pod,uid,container}`
- `kube_node_status_allocatable{node,resource,unit}`
- `kube_deployment_status_replicas{namespace,deployment}`
- `kube_horizontalpodautoscaler_status_current_replicas{namespace,horizontalpodautoscaler}`
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.client import Client, Informer
from pinnace.clock.component import StartedOnFirstUse
from pinnace.resources.lists import parse_quantity
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY
from pinnace.store.codec import Codec

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
DEPLOYMENTS = catalog.kind("apps", "deployments")
HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
PHASES = ("Pending", "Succeeded", "Failed", "Unknown", "Running")
UNITS = {CPU: "core", MEMORY: "byte", EPHEMERAL_STORAGE: "byte", "storage": "byte"}
POD_LABELS = ["namespace", "pod", "uid"]
RESOURCE_LABELS = [*POD_LABELS, "container", "node", "resource", "unit"]

Family = CounterMetricFamily | GaugeMetricFamily


def _label_name(resource: str) -> str:
    """kube-state-metrics' sanitizeLabelName: what is not a letter, digit or _ becomes _."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def resource_series(resources: Mapping[str, Any]) -> Iterator[tuple[str, str, float]]:
    """(resource, unit, amount) of a resource list, as kube-state-metrics reports it."""
    for name, quantity in sorted(resources.items()):
        amount = float(parse_quantity(quantity).as_fraction())
        unit = UNITS.get(name, "byte" if name.startswith("hugepages-") else "integer")
        yield _label_name(name), unit, amount


class KubeStateMetrics(Collector):
    """A component: informers on pods, nodes, Deployments and HPAs, and the families built from
    their caches when collected. Pods are cached packed by the cluster's `codec`, so the cache
    costs their bytes, not a second copy of every object."""

    def __init__(self, client: Client, codec: Codec | None = None) -> None:
        self.pods = Informer(client, PODS, codec=codec, namespace_index=False)
        self.nodes = Informer(client, NODES)
        self.deployments = Informer(client, DEPLOYMENTS)
        self.hpas = Informer(client, HPAS)
        self.informers = (self.pods, self.nodes, self.deployments, self.hpas)
        self._caches = StartedOnFirstUse(self.informers)

    async def start(self) -> None:
        """Nothing yet: the caches start with the first scrape (`ready`)."""

    async def ready(self) -> None:
        """Have the caches started and synced; a scrape awaits this before collecting."""
        await self._caches.ready()

    async def stop(self) -> None:
        await self._caches.stop()

    def collect(self) -> Iterator[Family]:
        yield from self._pod_families(self.pods.list())
        allocatable = GaugeMetricFamily(
            "kube_node_status_allocatable",
            "[STABLE] The allocatable for different resources of a node that are available for "
            "scheduling.",
            labels=["node", "resource", "unit"],
        )
        for node in self.nodes.list():
            name = node["metadata"]["name"]
            for resource, unit, amount in resource_series(
                (node.get("status") or {}).get("allocatable") or {}
            ):
                allocatable.add_metric([name, resource, unit], amount)
        yield allocatable
        replicas = GaugeMetricFamily(
            "kube_deployment_status_replicas",
            "[STABLE] The number of replicas per deployment.",
            labels=["namespace", "deployment"],
        )
        for deployment in self.deployments.list():
            meta = deployment["metadata"]
            count = (deployment.get("status") or {}).get("replicas") or 0
            replicas.add_metric([meta["namespace"], meta["name"]], count)
        yield replicas
        current = GaugeMetricFamily(
            "kube_horizontalpodautoscaler_status_current_replicas",
            "[STABLE] Current number of replicas of pods managed by this autoscaler.",
            labels=["namespace", "horizontalpodautoscaler"],
        )
        for hpa in self.hpas.list():
            meta = hpa["metadata"]
            count = (hpa.get("status") or {}).get("currentReplicas") or 0
            current.add_metric([meta["namespace"], meta["name"]], count)
        yield current

    def _pod_families(self, pods: list[Object]) -> Iterator[Family]:
        phase = GaugeMetricFamily(
            "kube_pod_status_phase",
            "[STABLE] The pods current phase.",
            labels=[*POD_LABELS, "phase"],
        )
        requests = GaugeMetricFamily(
            "kube_pod_container_resource_requests",
            "The number of requested request resource by a container. It is recommended to use "
            "the kube_pod_resource_requests metric exposed by kube-scheduler instead, as it is "
            "more precise.",
            labels=RESOURCE_LABELS,
        )
        limits = GaugeMetricFamily(
            "kube_pod_container_resource_limits",
            "The number of requested limit resource by a container. It is recommended to use "
            "the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is "
            "more precise.",
            labels=RESOURCE_LABELS,
        )
        restarts = CounterMetricFamily(
            "kube_pod_container_status_restarts",
            "[STABLE] The number of container restarts per container.",
            labels=[*POD_LABELS, "container"],
        )
        for pod in pods:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            status = pod.get("status") or {}
            ident = [meta["namespace"], meta["name"], meta.get("uid", "")]
            current = status.get("phase") or ""
            if current:
                for each in PHASES:
                    phase.add_metric([*ident, each], 1 if each == current else 0)
            node = spec.get("nodeName") or ""
            for container in spec.get("containers") or ():
                resources = container.get("resources") or {}
                for family, field in ((requests, "requests"), (limits, "limits")):
                    for resource, unit, amount in resource_series(resources.get(field) or {}):
                        labels = [*ident, container["name"], node, resource, unit]
                        family.add_metric(labels, amount)
            for container_status in status.get("containerStatuses") or ():
                count = container_status.get("restartCount") or 0
                restarts.add_metric([*ident, container_status["name"]], count)
        yield from (phase, requests, limits, restarts)
