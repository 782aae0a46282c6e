"""Each family's HELP as its component writes it. Kubernetes' components register their
metrics through k8s.io/component-base/metrics, which prefixes every HELP with the metric's
stability level (`[STABLE] `, `[BETA] `, `[ALPHA] `); kube-state-metrics v2.14 prefixes its
STABLE families' only; cAdvisor's have none."""

from __future__ import annotations

import asyncio

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from pinnace.api import catalog
from pinnace.autoscaler.metrics import AutoscalerMetrics, AutoscalerStats
from pinnace.clock.virtual import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.kubelet.config import node_configs
from pinnace.store import MemoryStore

from .test_apiserver_metrics import call

PODS = catalog.kind("", "pods")
STABLE = {
    "apiserver_request": "STABLE",
    "apiserver_request_duration_seconds": "STABLE",
    "apiserver_current_inflight_requests": "STABLE",
    "apiserver_longrunning_requests": "STABLE",
    "apiserver_storage_objects": "STABLE",
    "scheduler_schedule_attempts": "STABLE",
    "scheduler_scheduling_attempt_duration_seconds": "STABLE",
    "scheduler_pending_pods": "STABLE",
    "scheduler_preemption_attempts": "STABLE",
    "scheduler_preemption_victims": "STABLE",
    "scheduler_pod_scheduling_sli_duration_seconds": "BETA",
    "scheduler_framework_extension_point_duration_seconds": "STABLE",
    "scheduler_plugin_execution_duration_seconds": "ALPHA",
    "node_cpu_usage_seconds": "STABLE",
    "node_memory_working_set_bytes": "STABLE",
    "container_cpu_usage_seconds": "STABLE",  # the kubelet's, at /metrics/resource
    "container_memory_working_set_bytes": "STABLE",
    "pod_cpu_usage_seconds": "STABLE",
    "pod_memory_working_set_bytes": "STABLE",
    "container_start_time_seconds": "STABLE",
    "node_swap_usage_bytes": "ALPHA",
    "container_swap_usage_bytes": "ALPHA",
    "pod_swap_usage_bytes": "ALPHA",
    "resource_scrape_error": "STABLE",
    "kubelet_running_pods": "ALPHA",
    "kubelet_running_containers": "ALPHA",
    "kube_pod_status_phase": "STABLE",
    "kube_pod_container_status_restarts": "STABLE",
    "kube_node_status_allocatable": "STABLE",
    "kube_deployment_status_replicas": "STABLE",
    "kube_horizontalpodautoscaler_status_current_replicas": "STABLE",
}
KUBE_STATE_ALPHA = {
    "kube_pod_container_resource_requests": "The number of requested request resource by a "
    "container. It is recommended to use the kube_pod_resource_requests metric exposed by "
    "kube-scheduler instead, as it is more precise.",
    "kube_pod_container_resource_limits": "The number of requested limit resource by a "
    "container. It is recommended to use the kube_pod_resource_limits metric exposed by "
    "kube-scheduler instead, as it is more precise.",
}


def helps(text: bytes) -> dict[str, str]:
    return {f.name: f.documentation for f in text_string_to_metric_families(text.decode())}


def scrape() -> dict[str, dict[str, str]]:
    async def scenario() -> dict[str, dict[str, str]]:
        plane = ControlPlane(MemoryStore(), clock, ClusterOptions(nodes=node_configs(1)))
        await plane.start()
        app = plane.http_app()
        pod = {
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "main", "image": "nginx",
                                     "resources": {"requests": {"cpu": "100m"}}}]},
        }  # fmt: skip
        await plane.client().create(PODS, "default", pod)
        await asyncio.sleep(30)
        (node,) = plane.nodes.agents
        paths = ["/metrics", "/metrics/scheduler", "/metrics/cluster"] + [
            f"/api/v1/nodes/{node}/proxy/metrics{tail}" for tail in ("", "/cadvisor", "/resource")
        ]
        found = {path: helps((await call(app, "GET", path))[1]) for path in paths}
        await plane.stop()
        return found

    with VirtualClock() as clock:
        return clock.run(scenario())


def test_kubernetes_components_prefix_help_with_the_stability_level() -> None:
    found = scrape()
    kubernetes = {**found["/metrics"], **found["/metrics/scheduler"]}
    resource = next(p for p in found if p.endswith("/resource"))
    kubelet = next(p for p in found if p.endswith("/proxy/metrics"))
    kubernetes |= found[resource] | found[kubelet]
    for name, help_text in kubernetes.items():
        assert help_text.startswith(f"[{STABLE[name]}] "), (name, help_text)
    for name, help_text in found["/metrics/cluster"].items():
        if name in KUBE_STATE_ALPHA:
            assert help_text == KUBE_STATE_ALPHA[name]
        else:
            assert help_text.startswith(f"[{STABLE[name]}] "), (name, help_text)
    cadvisor = next(p for p in found if p.endswith("/cadvisor"))
    assert found[cadvisor]["container_cpu_usage_seconds"] == (
        "Cumulative cpu time consumed in seconds."
    )
    assert not any(h.startswith("[") for h in found[cadvisor].values())


def test_cluster_autoscaler_prefixes_help_as_component_base_does() -> None:
    # cluster-autoscaler's metrics are component-base's too, none given a stability level.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AutoscalerMetrics(AutoscalerStats()))
    found = helps(generate_latest(registry))
    assert found
    for name, help_text in found.items():
        assert help_text.startswith("[ALPHA] "), (name, help_text)
