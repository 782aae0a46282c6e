"""`pinnace controller-manager`: kube-controller-manager's controllers (those `pinnace up
--no-controllers` leaves out) in a process of their own, against the API server their
kubeconfig names, with leader election on the Lease kube-system/kube-controller-manager
(`pinnace.cli.component`). The autoscalers read usage through the metrics.k8s.io API.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pinnace.apiserver.metrics import POD_METRICS
from pinnace.cli import component, vpa
from pinnace.cli.up import controller_flags, controller_options, feature_gates_flag
from pinnace.client import Client
from pinnace.client.http import HTTPClient
from pinnace.clock.component import Component
from pinnace.cluster import ClusterOptions, ControllerManager
from pinnace.controllers.hpa import PodMetricsLister

LEASE = "kube-controller-manager"


def register(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    manager = subcommands.add_parser(
        "controller-manager",
        help="run kube-controller-manager's controllers against an API server",
        description=(
            "Run kube-controller-manager's controllers (node lifecycle, taint eviction, the "
            "workload controllers, the autoscalers) against the API server of --kubeconfig, "
            "with leader election, until SIGINT or SIGTERM."
        ),
    )
    component.add_flags(manager, LEASE)
    controller_flags(manager.add_argument_group("controllers (kube-controller-manager's flags)"))
    vpa.add_flags(manager)
    feature_gates_flag(manager)
    manager.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = ClusterOptions(**controller_options(args))

    def build(client: Callable[[], HTTPClient]) -> list[Component]:
        metrics = client()
        return ControllerManager(client, options, pod_metrics(metrics)).components()

    return component.run("controller-manager", LEASE, args, build)


def pod_metrics(client: Client) -> PodMetricsLister:
    """metrics.k8s.io's PodMetricsList, as the autoscalers' metrics client reads it."""

    async def lister(namespace: str, selector: str) -> dict[str, object]:
        return await client.list(POD_METRICS, namespace, label_selector=selector)

    return lister
