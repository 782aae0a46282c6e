"""`pinnace controller-manager`: kube-controller-manager's controllers (those `pinnace up
--no-controllers` leaves out) in a process of their own, against the API server their
kubeconfig names, with leader election on the Lease kube-system/kube-controller-manager
(`pinnace.cli.component`). The autoscalers read usage through the metrics.k8s.io API, the
HPA custom and external metrics through custom.metrics.k8s.io and external.metrics.k8s.io
(`pinnace.client.custom_metrics`), and the VPA recommender with --vpa-storage prometheus the
pods' usage history through the API server's `/pinnace/history` (`HISTORY_PATH`), as
upstream's reads Prometheus over HTTP.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import quote

from pinnace.api.status import StatusError
from pinnace.apiserver.component_checks import CONTROLLER_MANAGER_PORT
from pinnace.apiserver.http.app import HISTORY_PATH
from pinnace.apiserver.metrics import POD_METRICS
from pinnace.cli import component, health, vpa
from pinnace.cli.up import controller_flags, controller_options, feature_gates_flag
from pinnace.client import Client
from pinnace.client.custom_metrics import HTTPMetricsClient
from pinnace.client.http import HTTPClient
from pinnace.client.mapper import DiscoveryMapper
from pinnace.client.transport import HTTPError
from pinnace.clock.component import Component
from pinnace.cluster import ClusterOptions, ControllerManager
from pinnace.controllers.hpa import PodMetricsLister
from pinnace.controllers.vpa import PodHistory

LEASE = "kube-controller-manager"

log = logging.getLogger(__name__)


def configure(manager: argparse.ArgumentParser) -> None:
    manager.description = (
        "Run kube-controller-manager's controllers (node lifecycle, taint eviction, the "
        "workload controllers, the autoscalers) against the API server of --kubeconfig, "
        "with leader election, until SIGINT or SIGTERM."
    )
    component.add_flags(
        manager, LEASE, CONTROLLER_MANAGER_PORT, health.CONTROLLER_MANAGER_ALWAYS_ALLOW
    )
    controller_flags(manager.add_argument_group("controllers (kube-controller-manager's flags)"))
    vpa.add_flags(manager)
    feature_gates_flag(manager)
    manager.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = ClusterOptions(**controller_options(args), features=args.feature_gates)

    def build(client: Callable[[], HTTPClient]) -> list[Component]:
        metrics = client()
        return ControllerManager(
            client,
            options,
            pod_metrics(metrics),
            custom_metrics=HTTPMetricsClient(metrics),
            mapper=DiscoveryMapper(metrics),
            history=pod_history(metrics),
        ).components()

    return component.run(
        "controller-manager", LEASE, args, build, endpoints=health.controller_manager_endpoints
    )


def pod_metrics(client: Client) -> PodMetricsLister:
    """metrics.k8s.io's PodMetricsList, as the autoscalers' metrics client reads it."""

    async def lister(namespace: str, selector: str) -> dict[str, object]:
        return await client.list(POD_METRICS, namespace, label_selector=selector)

    return lister


def pod_history(client: HTTPClient) -> PodHistory:
    """A container's series in the API server's usage history; None for one it does not
    hold, and when it cannot be read (logged, as upstream's recommender logs a Prometheus it
    cannot query and goes on without the history)."""

    async def read(key: str, container: str) -> Mapping[str, Sequence[float | None]] | None:
        namespace, _, name = key.partition("/")
        path = (
            f"{HISTORY_PATH}/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
            f"/containers/{quote(container, safe='')}"
        )
        try:
            return await client.get_path(path)
        except StatusError as e:
            if e.code != 404 or (e.details or {}).get("kind") != "pods":
                log.error("vpa recommender: cannot get cluster history: %s", e.message)
        except (HTTPError, OSError) as e:
            log.error("vpa recommender: cannot get cluster history: %s", e)
        return None

    return read
