"""A control plane component in a process of its own (`pinnace scheduler`, `pinnace
controller-manager`): a client of the API server its kubeconfig names, over HTTPS with the
kubeconfig's credentials, and with leader election as kube-scheduler and
kube-controller-manager have it (their --leader-elect flags; `pinnace.client.leaderelection`).

With leader election the components start only once the process leads the Lease; a process
that loses it exits with status 1 (klog's "leaderelection lost"), as kube-scheduler and
kube-controller-manager do, for whatever supervises it to start it again. SIGINT or SIGTERM
stops the components, releases the Lease and exits with 0.

From its start to its end the process serves its health endpoints (and the scheduler its
metrics) on --secure-port (`pinnace.cli.health`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.registry import Collector

from pinnace.cli.arguments import go_bool, positive_duration
from pinnace.cli.health import WATCHDOG_TOLERANCE, Endpoints, HealthServer, always_allowed
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
from pinnace.clock import Clock, format_duration, parse_duration
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


def add_flags(
    parser: argparse.ArgumentParser,
    lease: str = "",
    secure_port: int = 0,
    always_allow: Sequence[str] = (),
) -> None:
    """--kubeconfig, and given a `lease`, the leader election flags of kube-scheduler and
    kube-controller-manager (component-base's), for the Lease named `lease` by default (the
    component's name, which `run` is given); given a `secure_port`, --secure-port (that by
    default), --bind-address and --authorization-always-allow-paths (`always_allow` by
    default) for the endpoints served there."""
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig of the API server and the component's credentials ($KUBECONFIG, else "
        "~/.pinnace/kubeconfig; pinnace up --tls writes scheduler.conf, "
        "controller-manager.conf and agent.conf in its data directory)",
    )
    if lease:
        _leader_election_flags(parser.add_argument_group("leader election"), lease)
    if secure_port:
        serving = parser.add_argument_group("secure serving")
        serving.add_argument(
            "--secure-port",
            type=int,
            default=secure_port,
            metavar="PORT",
            help=f"the port of the health endpoints, served over HTTPS with a self-signed "
            f"certificate; 0 serves none ({secure_port})",
        )
        serving.add_argument(
            "--bind-address",
            default="0.0.0.0",
            metavar="IP",
            help="the address they are served on (0.0.0.0: every address)",
        )
        parser.add_argument_group("authorization").add_argument(
            "--authorization-always-allow-paths",
            type=lambda text: [path for path in text.split(",") if path],
            default=list(always_allow),
            metavar="PATHS",
            help="the paths served to anyone, separated by commas (a trailing * allows a "
            "prefix); any other is refused (" + ",".join(always_allow) + ")",
        )


def _leader_election_flags(group: argparse._ArgumentGroup, lease: str) -> None:
    # No argparse defaults: a flag given overrides the configuration file's leaderElection,
    # which overrides the defaults (kube-scheduler's ApplyLeaderElectionTo).
    group.add_argument(
        "--leader-elect",
        type=go_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        help="act only while this process holds the Lease, so several can run for "
        "availability (true)",
    )
    for flag, (default, what) in LEADER_ELECTION_DURATIONS.items():
        group.add_argument(
            f"--leader-elect-{flag}",
            type=positive_duration("15s"),
            metavar="DURATION",
            help=f"{what} ({default:g}s)",
        )
    group.add_argument(
        "--leader-elect-resource-name",
        metavar="NAME",
        help=f"the Lease leader election holds ({lease})",
    )
    group.add_argument(
        "--leader-elect-resource-namespace",
        metavar="NAMESPACE",
        help=f"its namespace ({LOCK_NAMESPACE})",
    )


@dataclass(frozen=True)
class Election:
    """Leader election as the flags and the configuration file ask (component-base's
    LeaderElectionConfiguration): the timings and the Lease."""

    config: LeaderElectionConfig
    name: str
    namespace: str = LOCK_NAMESPACE


FILE_FIELDS = {
    "leader_elect": "leaderElect",
    "leader_elect_lease_duration": "leaseDuration",
    "leader_elect_renew_deadline": "renewDeadline",
    "leader_elect_retry_period": "retryPeriod",
    "leader_elect_resource_name": "resourceName",
    "leader_elect_resource_namespace": "resourceNamespace",
}
"""Each flag's field in a configuration file's leaderElection."""


def leader_election_settings(
    args: argparse.Namespace, configured: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A configuration file's leaderElection with each flag given put over it, as
    kube-scheduler's ApplyLeaderElectionTo does (durations as Go writes them)."""
    settings = dict(configured or {})
    for dest, name in FILE_FIELDS.items():
        given = getattr(args, dest, None)
        if isinstance(given, float):
            given = format_duration(round(given * 1e9))
        if given is not None:
            settings[name] = given
    return settings


def election(
    args: argparse.Namespace, lease: str, configured: Mapping[str, Any] | None = None
) -> Election | None:
    """The leader election asked for (None: off): each setting from its flag if given, else
    from `configured` (a configuration file's leaderElection), else the default; ValueError
    for a file's value that is not one."""
    configured = configured or {}

    def setting(dest: str, default: Any) -> Any:
        given = getattr(args, dest)
        if given is not None:
            return given
        value = configured.get(FILE_FIELDS[dest])
        if value is None:
            return default
        if dest.startswith(("leader_elect_lease", "leader_elect_renew", "leader_elect_retry")):
            try:
                return parse_duration(str(value)) / 1e9
            except ValueError:
                raise ValueError(
                    f"leaderElection.{FILE_FIELDS[dest]}: not a duration: {value!r}"
                ) from None
        if dest == "leader_elect" and not isinstance(value, bool):
            raise ValueError(f"leaderElection.leaderElect: not a boolean: {value!r}")
        return value

    if not setting("leader_elect", True):
        return None
    timings = {
        flag.replace("-", "_"): setting(f"leader_elect_{flag.replace('-', '_')}", default)
        for flag, (default, _) in LEADER_ELECTION_DURATIONS.items()
    }
    return Election(
        LeaderElectionConfig(**timings),
        str(setting("leader_elect_resource_name", lease)),
        str(setting("leader_elect_resource_namespace", LOCK_NAMESPACE)),
    )


def run(
    command: str,
    component: str,
    args: argparse.Namespace,
    build: Build,
    configured: Mapping[str, Any] | None = None,
    endpoints: Callable[[bool], Endpoints] | None = None,
    reporter: str = "",
    collectors: Callable[[list[Component]], list[Collector]] | None = None,
    configz: Callable[[], Mapping[str, Any]] | None = None,
) -> int:
    """Run the components `build` makes until a signal (0) or lost leadership (1), with leader
    election on the Lease named after `component` if the component has the flags;
    `configured`: its configuration file's leaderElection; `endpoints`: the health endpoints
    it serves, with leader election or without, if it has the flags; `reporter`: the source
    component of the election's core/v1 Events (`component` when empty); `collectors`: the
    families of the components made that it serves at /metrics; `configz`: makes the
    configurations it serves at /configz, by name (once its flags are found good)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("pinnace.client.leaderelection").setLevel(logging.INFO)
    try:
        config = kubeconfig(args)
        elected = election(args, component, configured) if hasattr(args, "leader_elect") else None
    except (KubeconfigError, ValueError) as e:
        print(f"pinnace {command}: {e}", file=sys.stderr)
        return 1
    health = _Health()
    server: HealthServer | None = None
    if endpoints is not None and args.secure_port:
        try:
            allowed = always_allowed(args.authorization_always_allow_paths)
        except ValueError as e:
            print(f"pinnace {command}: {e}", file=sys.stderr)
            return 1
        try:
            server = HealthServer(
                args.bind_address,
                args.secure_port,
                endpoints(elected is not None),
                health.failing,
                allowed,
            )
        except OSError as e:
            where = f"{args.bind_address}:{args.secure_port}"
            print(f"pinnace {command}: failed to listen on {where}: {e.strerror}", file=sys.stderr)
            return 1
        if configz is not None:
            server.serve_configz(configz())
    return asyncio.run(
        _serve(component, config, elected, build, health, server, reporter or component, collectors)
    )


@dataclass
class _Health:
    """What the health checks look at: the process's leader election, whether its components
    have started, whether it is stopping."""

    elector: LeaderElector | None = None
    started: bool = False
    stopping: bool = False

    def failing(self) -> dict[str, str]:
        """The checks failing now, with why (kube-scheduler's and kube-controller-manager's
        leaderElection, shutdown and sched-handler-sync). A standby has no components started
        yet, and is ready as v1.32's is, whose informers sync before it leads."""
        why: dict[str, str] = {}
        elector = self.elector
        if elector is not None and (reason := elector.check(WATCHDOG_TOLERANCE)):
            why["leaderElection"] = reason
        if self.stopping:
            why["shutdown"] = "process is shutting down"
        standby = elector is not None and not elector.is_leader()
        if not (self.started or standby):
            why["sched-handler-sync"] = "waiting for handlers to sync"
        return why


def kubeconfig(args: argparse.Namespace) -> RestConfig:
    """The RestConfig of --kubeconfig, else $KUBECONFIG, else ~/.pinnace/kubeconfig."""
    return load_kubeconfig(args.kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG)


async def _serve(
    component: str,
    config: RestConfig,
    elected: Election | None,
    build: Build,
    health: _Health,
    server: HealthServer | None,
    reporter: str,
    collectors: Callable[[list[Component]], list[Collector]] | None,
) -> int:
    loop = asyncio.get_running_loop()
    clock = Clock(loop)
    clients: list[HTTPClient] = []

    def client() -> HTTPClient:
        made = HTTPClient.from_config(config, clock, field_manager=component)
        clients.append(made)
        return made

    components = build(client)
    if server is not None and collectors is not None:
        server.serve_metrics(collectors(components))
    started: list[Component] = []

    async def start() -> None:
        for c in components:
            await c.start()
            started.append(c)
        health.started = True

    async def stop() -> None:
        health.started = False
        while started:
            await started.pop().stop()

    stopping = asyncio.Event()

    def signalled() -> None:
        health.stopping = True
        stopping.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, signalled)
    if server is not None:
        await server.start()
    try:
        if elected is None:
            if await _unless_stopped(start(), stopping):
                await stopping.wait()
            return 0
        return await _elected(reporter, elected, client, start, stop, stopping, health)
    finally:
        await stop()
        for made in clients:
            made.close()
        if server is not None:
            await server.stop()


async def _unless_stopped(work: Coroutine[Any, Any, None], stopping: asyncio.Event) -> bool:
    """Run `work` to its end (True), unless a signal comes first: then it is cancelled
    (False), so a process still starting (its nodes waiting for the API server) stops."""
    task = asyncio.ensure_future(work)
    signalled = asyncio.ensure_future(stopping.wait())
    await asyncio.wait((task, signalled), return_when=asyncio.FIRST_COMPLETED)
    signalled.cancel()
    if task.done():
        task.result()
        return True
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return False


async def _elected(
    reporter: str,
    elected: Election,
    client: Callable[[], HTTPClient],
    start: Callback,
    stop: Callback,
    stopping: asyncio.Event,
    health: _Health,
) -> int:
    lock_client = client()
    elector = health.elector = LeaderElector(
        lock_client,
        elected.name,
        candidate_identity(),
        on_started_leading=start,
        on_stopped_leading=stop,
        config=elected.config,
        namespace=elected.namespace,
        recorder=EventRecorder(lock_client, reporter),
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
