"""A control plane component in a process of its own (`pinnace scheduler`, `pinnace
controller-manager`): a client of the API server its kubeconfig names, over HTTPS with the
kubeconfig's credentials, and with leader election as kube-scheduler and
kube-controller-manager have it (their --leader-elect flags; `pinnace.client.leaderelection`).

With leader election the components start only once the process leads the Lease; a process
that loses it exits with status 1 (klog's "leaderelection lost"), as kube-scheduler and
kube-controller-manager do, for whatever supervises it to start it again. SIGINT or SIGTERM
stops the components, releases the Lease and exits with 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from pinnace.cli.arguments import add_durations, go_bool
from pinnace.client import EventRecorder
from pinnace.client.http import HTTPClient
from pinnace.client.kubeconfig import KubeconfigError, RestConfig, load_kubeconfig
from pinnace.client.leaderelection import (
    LOCK_NAMESPACE,
    Callback,
    LeaderElectionConfig,
    LeaderElector,
    candidate_identity,
)
from pinnace.clock import Clock
from pinnace.clock.component import Component

DEFAULT_KUBECONFIG = Path.home() / ".pinnace" / "kubeconfig"
_DEFAULTS = LeaderElectionConfig()
LEADER_ELECTION_DURATIONS = {
    "lease-duration": (
        _DEFAULTS.lease_duration,
        "how long a candidate waits, after it last saw the Lease change, before taking it",
    ),
    "renew-deadline": (
        _DEFAULTS.renew_deadline,
        "how long the leader keeps trying to renew before it stops leading",
    ),
    "retry-period": (_DEFAULTS.retry_period, "how long candidates wait between attempts"),
}

Build = Callable[[Callable[[], HTTPClient]], list[Component]]
"""Makes the process's components, each with a client of its own from the factory given."""


def add_flags(parser: argparse.ArgumentParser, lease: str = "") -> None:
    """--kubeconfig, and given a `lease`, the leader election flags of kube-scheduler and
    kube-controller-manager (component-base's), for the Lease named `lease` by default."""
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the API server and the component's credentials ($KUBECONFIG, else "
        "~/.pinnace/kubeconfig; pinnace up --tls writes scheduler.conf, "
        "controller-manager.conf and agent.conf in its data directory)",
    )
    if lease:
        _leader_election_flags(parser.add_argument_group("leader election"), lease)


def _leader_election_flags(group: argparse._ArgumentGroup, lease: str) -> None:
    group.add_argument(
        "--leader-elect",
        type=go_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="act only while this process holds the Lease, so several can run for "
        "availability (true)",
    )
    add_durations(group, LEADER_ELECTION_DURATIONS, "15s", prefix="leader-elect-")
    group.add_argument(
        "--leader-elect-resource-name",
        default=lease,
        metavar="NAME",
        help=f"the Lease leader election holds ({lease})",
    )
    group.add_argument(
        "--leader-elect-resource-namespace",
        default=LOCK_NAMESPACE,
        metavar="NAMESPACE",
        help=f"its namespace ({LOCK_NAMESPACE})",
    )


def run(command: str, component: str, args: argparse.Namespace, build: Build) -> int:
    """Run the components `build` makes until a signal (0) or lost leadership (1)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("pinnace.client.leaderelection").setLevel(logging.INFO)
    try:
        config = load_kubeconfig(
            args.kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
        )
        election = None
        if getattr(args, "leader_elect", False):  # a component with leader election, on
            election = LeaderElectionConfig(
                lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline,
                retry_period=args.leader_elect_retry_period,
            )
    except (KubeconfigError, ValueError) as e:
        print(f"pinnace {command}: {e}", file=sys.stderr)
        return 1
    return asyncio.run(_serve(component, config, args, election, build))


async def _serve(
    component: str,
    config: RestConfig,
    args: argparse.Namespace,
    election: LeaderElectionConfig | None,
    build: Build,
) -> int:
    loop = asyncio.get_running_loop()
    clock = Clock(loop)
    clients: list[HTTPClient] = []

    def client() -> HTTPClient:
        made = HTTPClient.from_config(config, clock, field_manager=component)
        clients.append(made)
        return made

    components = build(client)
    started: list[Component] = []

    async def start() -> None:
        for c in components:
            await c.start()
            started.append(c)

    async def stop() -> None:
        while started:
            await started.pop().stop()

    stopping = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        if election is None:
            await start()
            await stopping.wait()
            return 0
        return await _elected(component, args, election, client, start, stop, stopping)
    finally:
        await stop()
        for made in clients:
            made.close()


async def _elected(
    component: str,
    args: argparse.Namespace,
    election: LeaderElectionConfig,
    client: Callable[[], HTTPClient],
    start: Callback,
    stop: Callback,
    stopping: asyncio.Event,
) -> int:
    lock_client = client()
    elector = LeaderElector(
        lock_client,
        args.leader_elect_resource_name,
        candidate_identity(),
        on_started_leading=start,
        on_stopped_leading=stop,
        config=election,
        namespace=args.leader_elect_resource_namespace,
        recorder=EventRecorder(lock_client, component),
    )
    elector.start()
    campaign = asyncio.ensure_future(elector.wait())
    signalled = asyncio.ensure_future(stopping.wait())
    await asyncio.wait((campaign, signalled), return_when=asyncio.FIRST_COMPLETED)
    signalled.cancel()
    if not campaign.done():
        await elector.stop()
    with contextlib.suppress(asyncio.CancelledError):
        await campaign
    if elector.lost:
        logging.getLogger(__name__).error("leaderelection lost")
        return 1
    return 0
