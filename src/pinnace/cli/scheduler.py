"""`pinnace scheduler`: kube-scheduler in a process of its own, against the API server its
kubeconfig names (`pinnace up --no-scheduler`'s, over HTTPS with scheduler.conf's credentials),
with leader election (`pinnace.cli.component`), its usage-aware plugins reading node usage
through the metrics API (`pinnace.scheduler.metrics_api`) and custom metrics through
custom.metrics.k8s.io; and `pinnace scheduler explain
POD`: why the scheduler would place a pod where it does, asked of a running `pinnace up` (or
any API server) over HTTP. Nothing is written.

The cluster's scheduler explains, with the configuration (and the plugins) it runs, when the
server offers that (`pinnace up` with its scheduler). `--scheduler-config FILE` explains with
another configuration instead, here, over the cluster's current state; so does a server that
offers no explanation, with kube-scheduler's defaults. The output says which it was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pinnace.api.status import StatusError
from pinnace.apiserver.component_checks import SCHEDULER_PORT
from pinnace.apiserver.http.app import EXPLAIN_PATH
from pinnace.cli import component, health
from pinnace.client.custom_metrics import HTTPMetricsClient
from pinnace.client.http import HTTPClient
from pinnace.client.transport import HTTPError
from pinnace.clock import Clock, Randomness
from pinnace.clock.component import Component
from pinnace.scheduler import metrics_api
from pinnace.scheduler.adapter import SchedulerService
from pinnace.scheduler.config import DEFAULTS, ConfigError, SchedulerConfiguration, load_file
from pinnace.scheduler.configz import component_config
from pinnace.scheduler.explain import explain_pod, render

DEFAULT_KUBECONFIG = component.DEFAULT_KUBECONFIG
LEASE = "kube-scheduler"


def configure(scheduler: argparse.ArgumentParser) -> None:
    scheduler.description = (
        "Without a command: run kube-scheduler against the API server of --kubeconfig, "
        "with leader election (so several can run, one acting), until SIGINT or SIGTERM."
    )
    component.add_flags(scheduler, LEASE, SCHEDULER_PORT, health.SCHEDULER_ALWAYS_ALLOW)
    scheduler.add_argument(
        "--config",
        metavar="FILE",
        help="the KubeSchedulerConfiguration (kube-scheduler's defaults if absent)",
    )
    scheduler.set_defaults(run=run_scheduler)
    commands = scheduler.add_subparsers(dest="scheduler_command", metavar="COMMAND")
    explain = commands.add_parser(
        "explain",
        help="every plugin's filter verdict and scores per node for a pod, and the pick",
        description=(
            "Run the scheduler's plugins for POD over the cluster's current nodes and bound "
            "pods, without binding anything, and show each Filter plugin's verdict per node, "
            "each Score plugin's raw and normalised score per feasible node, and the pick."
        ),
    )
    explain.add_argument("pod", metavar="POD")
    explain.add_argument("-n", "--namespace", default="default", help="the pod's namespace")
    explain.add_argument(
        "--kubeconfig",
        help="kubeconfig naming the API server ($KUBECONFIG, else ~/.pinnace/kubeconfig)",
    )
    explain.add_argument("--server", help="the API server's URL, instead of the kubeconfig's")
    explain.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="explain with this KubeSchedulerConfiguration, not the one the cluster's "
        "scheduler runs",
    )
    explain.add_argument(
        "-o", "--output", choices=("table", "json"), default="table", help="table (default)"
    )
    explain.set_defaults(run=run_explain)


def run_scheduler(args: argparse.Namespace) -> int:
    """kube-scheduler, as a client of the API server."""
    try:
        config = load_file(args.config) if args.config else None
    except ConfigError as e:
        print(f"pinnace scheduler: --config: {e}", file=sys.stderr)
        return 1

    def build(client: Callable[[], HTTPClient]) -> list[Component]:
        metrics = client()
        return [
            SchedulerService(
                client(),
                config,
                Randomness(),
                custom_metrics=HTTPMetricsClient(metrics),
                metrics_api=metrics_api.lister(metrics),
                hostname=socket.gethostname(),
            )
        ]

    configured = config.leader_election if config is not None else None
    settings = component.leader_election_settings(args, configured)
    # kube-scheduler records its leader election with the legacy core/v1 recorder, as its
    # first profile's schedulerName.
    reporter = (config or SchedulerConfiguration()).scheduler_names[0]
    return component.run(
        "scheduler",
        LEASE,
        args,
        build,
        configured,
        health.scheduler_endpoints,
        reporter,
        collectors=lambda made: [c.core.metrics for c in made if isinstance(c, SchedulerService)],
        configz=lambda: {
            "componentconfig": component_config(
                config or SchedulerConfiguration(), settings, args.kubeconfig or ""
            )
        },
    )


def run_explain(args: argparse.Namespace) -> int:
    try:
        config = load_file(args.scheduler_config) if args.scheduler_config else None
        url = args.server or server_url(args.kubeconfig)
        explanation = asyncio.run(_explain(url, args.namespace, args.pod, config))
    except (ConfigError, ValueError) as e:
        print(f"pinnace scheduler explain: {e}", file=sys.stderr)
        return 1
    except StatusError as e:
        print(f"Error from server ({e.reason}): {e.message}", file=sys.stderr)
        return 1
    except (HTTPError, OSError) as e:
        print(f"pinnace scheduler explain: cannot reach the API server: {e}", file=sys.stderr)
        return 1
    if args.output == "json":
        print(json.dumps(explanation, indent=2))
    else:
        print(render(explanation), end="")
    return 0


async def _explain(
    url: str, namespace: str, name: str, config: SchedulerConfiguration | None
) -> dict[str, Any]:
    """The explanation's plain data: the cluster scheduler's, unless `config` is given or the
    server offers none."""
    client = HTTPClient(url, Clock(asyncio.get_running_loop()))
    try:
        if config is None and EXPLAIN_PATH in (await client.get_path("/")).get("paths", []):
            return await client.get_path(f"{EXPLAIN_PATH}/namespaces/{namespace}/pods/{name}")
        explanation = await explain_pod(client, namespace, name, config)
        explanation.configuration = (
            f"{DEFAULTS} (the server does not say what its scheduler runs)"
            if config is None
            else f"{config.source} (--scheduler-config; the cluster's scheduler may run another)"
        )
        return explanation.as_dict()
    finally:
        client.close()


def server_url(kubeconfig: str | None) -> str:
    """The server of the kubeconfig's current context."""
    path = Path(kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG).expanduser()
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise ValueError(f"cannot read kubeconfig {path}: {e.strerror}") from None
    except yaml.YAMLError:
        raise ValueError(f"kubeconfig {path} is not valid YAML") from None
    current = config.get("current-context")
    contexts = config.get("contexts") or []
    context: dict[str, Any] = next((c["context"] for c in contexts if c["name"] == current), {})
    cluster = context.get("cluster")
    for entry in config.get("clusters") or []:
        if entry.get("name") == cluster and entry.get("cluster", {}).get("server"):
            return entry["cluster"]["server"]
    raise ValueError(f"kubeconfig {path}: the current context names no cluster with a server")
