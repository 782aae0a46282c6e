"""`pinnace up`: run the control plane and serve the Kubernetes API over HTTP on localhost, or
over HTTPS with authentication and RBAC anywhere (--tls: `pinnace.cli.secure`).

It opens the store (SQLite in --data-dir, ~/.pinnace by default, or memory) and creates what
every cluster has (bootstrap); starts the scheduler, the controllers (namespace, node
lifecycle, taint eviction, ReplicaSet, Deployment, disruption, garbage collector), the
compactor and the simulated nodes asked for (--nodes of one shape, or the node pools of a
cluster file given with --config, each node with its node agent); writes a kubeconfig for
kubectl and the Python client (in the data directory by default; with --in-memory, in a
temporary directory removed on exit, as nothing of such a run is kept); and serves until
SIGINT or SIGTERM, then stops cleanly. A restart on the same data directory keeps all state.
With --no-scheduler and --no-controllers those run as processes of their own (`pinnace
scheduler`, `pinnace controller-manager`; docs/processes.md), with --tls on the kubeconfigs
it writes beside the admin's; `pinnace apiserver` serves the API alone with the same API
server flags (`api_server_flags`, `serve_api`).

A start that cannot work (a busy port, a data directory another `pinnace up` holds) says so
in one line and exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import errno
import ipaddress
import logging
import math
import os
import signal
import socket
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
import yaml

from pinnace.api.features import (
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS,
    FeatureGates,
    parse_feature_gates,
)
from pinnace.api.openapi import openapi_v3_index
from pinnace.apiserver.auth import certs
from pinnace.apiserver.http import connections
from pinnace.apiserver.keys import etcd_resources
from pinnace.apiserver.quota_resync import DEFAULT_SYNC_PERIOD as DEFAULT_QUOTA_SYNC_PERIOD
from pinnace.apiserver.service_allocation import (
    DEFAULT_ADVERTISE_ADDRESS,
    DEFAULT_NODE_PORT_RANGE,
    DEFAULT_SERVICE_CIDR,
    ServiceNetwork,
)
from pinnace.autoscaler.options import EXPANDERS, AutoscalerOptions
from pinnace.cli import kubelet_flags, secure, vpa
from pinnace.cli.arguments import (
    add_durations,
    go_bool,
    non_negative_duration,
    positive_duration,
)
from pinnace.cli.secure import SecureServing, TLSOptions
from pinnace.clock import Clock, Randomness
from pinnace.cluster import ClusterOptions, ControlPlane, settle_garbage_collection
from pinnace.controllers.csr_signing import DEFAULT_CLUSTER_SIGNING_DURATION, ClusterSigning
from pinnace.controllers.node_lifecycle import NodeLifecycleConfig
from pinnace.controllers.rootcacertpublisher import self_signed_ca
from pinnace.controllers.workloads import WorkloadOptions
from pinnace.kubelet import NodeConfig, node_configs
from pinnace.kubelet.cluster_config import ClusterConfigError, NodePool, load_pools
from pinnace.kubelet.cluster_config import node_configs as pool_node_configs
from pinnace.kubelet.config import DEFAULT_CAPACITY
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from pinnace.resources.quantity import Quantity, QuantityError
from pinnace.scheduler.config import ConfigError, load_file
from pinnace.store import MemoryStore, SQLiteStore, StorageError, Store, StoreInUseError
from pinnace.store.compactor import DEFAULT_INTERVAL as DEFAULT_COMPACTION_INTERVAL
from pinnace.store.expiry import DEFAULT_EVENT_TTL

SHAPE_RESOURCES = (CPU, MEMORY, PODS, EPHEMERAL_STORAGE)
DEFAULT_PORT = 6443
DEFAULT_DATA_DIR = Path.home() / ".pinnace"
KUBECONFIG_FILE = "kubeconfig"
CA_FILE = "ca.crt"
"""The cluster's CA certificate, which every namespace's kube-root-ca.crt publishes."""
DATABASE_FILE = "pinnace.db"
SHUTDOWN_GRACE_SECONDS = 2
"""How long open connections (watches) get to finish when the server stops."""
KEEP_ALIVE_SECONDS = 90
"""How long an idle client connection stays open, as kube-apiserver's HTTP server keeps it
(clients reuse connections between polls; uvicorn's default of 5 s would close them)."""


def configure(up: argparse.ArgumentParser) -> None:
    up.description = (
        "Serve the Kubernetes API (plain HTTP on loopback without authentication, or HTTPS "
        "with authentication and RBAC given --tls) and write a kubeconfig for it. Stop "
        "with Ctrl-C."
    )
    api_server_flags(up)
    nodes = up.add_argument_group("simulated nodes")
    nodes.add_argument(
        "--nodes",
        type=_count("nodes"),
        metavar="N",
        help="run N simulated nodes (pinnace-node-1 … pinnace-node-N) in this process (0)",
    )
    for resource in SHAPE_RESOURCES:
        nodes.add_argument(
            f"--node-{resource}",
            type=_quantity,
            metavar="QUANTITY",
            help=f"each simulated node's {resource} capacity ({DEFAULT_CAPACITY[resource]})",
        )
    nodes.add_argument(
        "--config",
        metavar="FILE",
        help="a cluster file of node pools (docs/nodes.md), instead of --nodes and --node-*",
    )
    kubelet_flags.add_flags(nodes)
    controller_flags(up.add_argument_group("controllers (kube-controller-manager's flags)"))
    autoscaler_flags(up.add_argument_group("cluster autoscaler (cluster-autoscaler's flags)"))
    vpa.add_flags(up)
    up.add_argument(
        "--no-scheduler",
        dest="scheduler",
        action="store_false",
        help="do not run the scheduler (pods stay Pending until something binds them)",
    )
    up.add_argument(
        "--no-controllers",
        dest="controllers",
        action="store_false",
        help="do not run kube-controller-manager's controllers and the VPA (pinnace "
        "controller-manager runs them in a process of its own); the namespace and "
        "ServiceAccount controllers and the root CA publisher still run",
    )
    up.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="the scheduler's KubeSchedulerConfiguration (kube-scheduler's defaults if absent)",
    )
    up.set_defaults(run=run)


def api_server_flags(parser: argparse.ArgumentParser) -> None:
    """The API server's flags (kube-apiserver's where it has them), which `pinnace up` and
    `pinnace apiserver` share; `serve_api` reads them."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to listen on ({DEFAULT_PORT}); 0 picks a free one",
    )
    storage = parser.add_mutually_exclusive_group()
    storage.add_argument(
        "--data-dir",
        default=str(DEFAULT_DATA_DIR),
        help="directory of the SQLite store and the kubeconfig (default ~/.pinnace)",
    )
    storage.add_argument(
        "--in-memory", action="store_true", help="keep everything in memory, lost on exit"
    )
    parser.add_argument(
        "--etcd-servers",
        type=_etcd_servers,
        metavar="URL[,URL...]",
        help="keep the cluster in etcd v3 at these client URLs (http://127.0.0.1:2379), as "
        "kube-apiserver's --etcd-servers, rather than in the data directory's SQLite store "
        "(needs pip install 'pinnace[etcd]')",
    )
    parser.add_argument(
        "--kubeconfig",
        help=f"where to write the kubeconfig (default <data dir>/{KUBECONFIG_FILE}; with "
        "--in-memory, a temporary file removed on exit)",
    )
    secure.add_flags(parser.add_argument_group("security (kube-apiserver's flags, and --tls)"))
    parser.add_argument(
        "--compaction-interval",
        type=positive_seconds,
        default=DEFAULT_COMPACTION_INTERVAL,
        metavar="SECONDS",
        help="how often old revisions are compacted away, as kube-apiserver's "
        f"--etcd-compaction-interval ({DEFAULT_COMPACTION_INTERVAL:g})",
    )
    parser.add_argument(
        "--event-ttl",
        type=positive_duration("40s"),
        default=DEFAULT_EVENT_TTL,
        metavar="DURATION",
        help="how long Events are kept after their last write, as kube-apiserver's --event-ttl "
        f"({DEFAULT_EVENT_TTL:g}s); a Go duration such as 1h",
    )
    parser.add_argument(
        "--resource-quota-sync-period",
        type=positive_duration("40s"),
        default=DEFAULT_QUOTA_SYNC_PERIOD,
        metavar="DURATION",
        help="how often every ResourceQuota is recounted from the objects stored, as "
        f"kube-controller-manager's --resource-quota-sync-period ({DEFAULT_QUOTA_SYNC_PERIOD:g}s; "
        "the API server recounts them at each write too); a Go duration such as 5m",
    )
    _service_flags(parser.add_argument_group("services (kube-apiserver's flags)"))
    feature_gates_flag(parser)
    parser.add_argument(
        "--seed",
        type=_count("a seed"),
        metavar="N",
        help="the root of every random choice (generated names, the scheduler's tie-breaks), "
        "to make the same choices again; drawn afresh when absent",
    )


def feature_gates_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--feature-gates",
        type=_feature_gates,
        default=FeatureGates(),
        metavar="NAME=BOOL,...",
        help="alpha features to turn on, as the components' --feature-gates: "
        f"{IN_PLACE_POD_VERTICAL_SCALING} (in-place pod resize) and "
        f"{IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS} (all off)",
    )


def _feature_gates(text: str) -> FeatureGates:
    try:
        return parse_feature_gates(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_LIFECYCLE = NodeLifecycleConfig()
_WORKLOADS = WorkloadOptions()
CONTROLLER_DURATIONS = {
    "node-monitor-period": (
        _LIFECYCLE.node_monitor_period,
        "how often the node lifecycle controller checks the nodes",
    ),
    "node-monitor-grace-period": (
        _LIFECYCLE.node_monitor_grace_period,
        "how long a node may go without a heartbeat before it is NotReady/Unknown",
    ),
    "node-startup-grace-period": (
        _LIFECYCLE.node_startup_grace_period,
        "how long a new node may take to post its first status",
    ),
    "horizontal-pod-autoscaler-sync-period": (
        _WORKLOADS.horizontal_pod_autoscaler_sync_period,
        "how often each HorizontalPodAutoscaler is evaluated",
    ),
    "horizontal-pod-autoscaler-downscale-stabilization": (
        _WORKLOADS.horizontal_pod_autoscaler_downscale_stabilization,
        "how far back an HPA looks before scaling down, by default",
    ),
    "cluster-signing-duration": (
        DEFAULT_CLUSTER_SIGNING_DURATION,
        "the longest a certificate signed for a CertificateSigningRequest lasts",
    ),
}
"""Duration flags: their defaults in seconds and what they set."""


def controller_flags(group: argparse._ArgumentGroup) -> None:
    add_durations(group, CONTROLLER_DURATIONS, "40s")
    group.add_argument(
        "--node-eviction-rate",
        type=_non_negative_rate,
        default=_LIFECYCLE.node_eviction_rate,
        metavar="NODES_PER_SECOND",
        help=f"nodes whose pods are evicted per second ({_LIFECYCLE.node_eviction_rate:g})",
    )
    group.add_argument(
        "--terminated-pod-gc-threshold",
        type=_count("pods"),
        default=_WORKLOADS.terminated_pod_gc_threshold,
        metavar="N",
        help="finished pods kept before the oldest are deleted "
        f"({_WORKLOADS.terminated_pod_gc_threshold}; 0 keeps them all)",
    )
    for part in ("cert", "key"):
        group.add_argument(
            f"--cluster-signing-{part}-file",
            type=_pem_file,
            metavar="FILE",
            help=f"the {part} (PEM) of the CA that signs CertificateSigningRequests for the "
            "kubernetes.io signers (pinnace up --tls: the cluster CA's)",
        )


def _pem_file(path: str) -> str:
    try:
        return Path(path).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {e}") from None


def controller_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ClusterOptions fields of the flags `controller_flags` and `vpa.add_flags` added."""
    return {
        "node_lifecycle": dataclasses.replace(
            _LIFECYCLE,
            node_monitor_period=args.node_monitor_period,
            node_monitor_grace_period=args.node_monitor_grace_period,
            node_startup_grace_period=args.node_startup_grace_period,
            node_eviction_rate=args.node_eviction_rate,
        ),
        "workloads": WorkloadOptions(
            terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
            horizontal_pod_autoscaler_sync_period=args.horizontal_pod_autoscaler_sync_period,
            horizontal_pod_autoscaler_downscale_stabilization=(
                args.horizontal_pod_autoscaler_downscale_stabilization
            ),
        ),
        "vertical_pod_autoscaler": vpa.options(args),
        "cluster_signing": ClusterSigning(
            args.cluster_signing_cert_file or "",
            args.cluster_signing_key_file or "",
            args.cluster_signing_duration,
        ),
    }


_AUTOSCALER = AutoscalerOptions()
AUTOSCALER_DURATIONS = {
    "scan-interval": ("scan_interval", positive_duration("10s"), "how often it looks"),
    "scale-down-unneeded-time": (
        "scale_down_unneeded_time",
        non_negative_duration("10m"),
        "how long a node must be unneeded before it goes",
    ),
    "scale-down-delay-after-add": (
        "scale_down_delay_after_add",
        non_negative_duration("10m"),
        "no scale-down for this long after a scale-up",
    ),
    "scale-down-delay-after-delete": (
        "scale_down_delay_after_delete",
        non_negative_duration("10s"),
        "no scale-down for this long after a node was removed (default: --scan-interval)",
    ),
    "scale-down-delay-after-failure": (
        "scale_down_delay_after_failure",
        non_negative_duration("3m"),
        "no scale-down for this long after one failed",
    ),
    "unremovable-node-recheck-timeout": (
        "unremovable_node_recheck_timeout",
        non_negative_duration("5m"),
        "a node its pods kept is not looked at again sooner",
    ),
    "new-pod-scale-up-delay": (
        "new_pod_scale_up_delay",
        non_negative_duration("0s"),
        "pods younger than this are not helped yet",
    ),
    "node-provisioning-delay": (
        "provisioning_delay",
        non_negative_duration("1m"),
        "how long a new node takes to join (Pinnace's own setting)",
    ),
}
"""Duration flags of the cluster autoscaler: its option, their type, what they set."""


def autoscaler_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--cluster-autoscaler",
        action="store_true",
        help="run the cluster autoscaler over the --config pools that have a maxSize "
        "(docs/autoscaling.md)",
    )
    for flag, (option, parse, what) in AUTOSCALER_DURATIONS.items():
        default = getattr(_AUTOSCALER, option)
        shown = "" if default is None else f" ({default:g}s)"
        group.add_argument(
            f"--{flag}", type=parse, default=default, metavar="DURATION", help=f"{what}{shown}"
        )
    group.add_argument(
        "--expander",
        choices=EXPANDERS,
        default=_AUTOSCALER.expander,
        help=f"which pool to grow when several would help ({_AUTOSCALER.expander})",
    )
    group.add_argument(
        "--scale-down-utilization-threshold",
        type=_fraction,
        default=_AUTOSCALER.scale_down_utilization_threshold,
        metavar="RATIO",
        help="below it (cpu or memory requested over allocatable) a node may go "
        f"({_AUTOSCALER.scale_down_utilization_threshold:g})",
    )
    group.add_argument(
        "--scale-down-enabled",
        type=go_bool,
        default=True,
        metavar="BOOL",
        help="remove unneeded nodes (true)",
    )
    group.add_argument(
        "--max-nodes-total",
        type=_count("nodes"),
        default=0,
        metavar="N",
        help="the most nodes the cluster may grow to (0: no limit)",
    )


def autoscaler_options(args: argparse.Namespace, pools: list[NodePool]) -> AutoscalerOptions:
    """The cluster autoscaler's options from the flags `autoscaler_flags` added."""
    durations = {option: getattr(args, option_flag(flag)) for flag, (option, _, _) in
                 AUTOSCALER_DURATIONS.items()}  # fmt: skip
    return AutoscalerOptions(
        node_pools=pools,
        expander=args.expander,
        scale_down_utilization_threshold=args.scale_down_utilization_threshold,
        scale_down_enabled=args.scale_down_enabled,
        max_nodes_total=args.max_nodes_total,
        **durations,
    )


def option_flag(flag: str) -> str:
    return flag.replace("-", "_")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, not {text!r}")
    return value


def _non_negative_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = -1.0
    if not 0 <= rate < math.inf:
        raise argparse.ArgumentTypeError(f"must be a number of nodes per second, not {text!r}")
    return rate


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return seconds


def _count(noun: str) -> Callable[[str], int]:
    def count(text: str) -> int:
        if not text.isdigit():
            raise argparse.ArgumentTypeError(f"must be a whole number of {noun}, not {text!r}")
        return int(text)

    return count


def _quantity(text: str) -> str:
    try:
        q = Quantity(text)
    except QuantityError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if q.sign() <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text!r}")
    return text


@dataclass(frozen=True)
class UpOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    data_dir: str | None = str(DEFAULT_DATA_DIR)
    """None: the memory store."""
    etcd_servers: tuple[str, ...] = ()
    """Client URLs of the etcd the store is on; empty: the store is the data directory's."""
    kubeconfig: str | None = str(DEFAULT_DATA_DIR / KUBECONFIG_FILE)
    """None: in a temporary directory, removed on exit."""
    cluster: ClusterOptions = field(default_factory=ClusterOptions)
    tls: TLSOptions | None = None
    """None: plain HTTP, every request trusted (loopback only, unless --insecure)."""


def _service_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--service-cluster-ip-range",
        type=_cidr,
        default=DEFAULT_SERVICE_CIDR,
        metavar="CIDR",
        help=f"where Services' cluster IPs come from ({DEFAULT_SERVICE_CIDR}); the first "
        "address is the kubernetes Service's",
    )
    group.add_argument(
        "--service-node-port-range",
        type=_port_range,
        default=DEFAULT_NODE_PORT_RANGE,
        metavar="LOW-HIGH",
        help="where Services' node ports come from ({}-{})".format(*DEFAULT_NODE_PORT_RANGE),
    )
    group.add_argument(
        "--advertise-address",
        type=_address,
        default=DEFAULT_ADVERTISE_ADDRESS,
        metavar="IP",
        help="the address the kubernetes Service's endpoints name "
        f"({DEFAULT_ADVERTISE_ADDRESS}; no traffic goes there)",
    )


def _cidr(text: str) -> str:
    try:
        network = ipaddress.ip_network(text, strict=True)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a CIDR: {e}") from None
    if network.num_addresses < 8:
        raise argparse.ArgumentTypeError(f"{text} is too small for Services")
    return str(network)


def _port_range(text: str) -> tuple[int, int]:
    low, dash, high = text.partition("-")
    if not dash or not low.isdigit() or not high.isdigit():
        raise argparse.ArgumentTypeError(f"not a port range such as 30000-32767: {text!r}")
    if not 0 < int(low) <= int(high) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port range such as 30000-32767: {text!r}")
    return int(low), int(high)


def _etcd_servers(text: str) -> tuple[str, ...]:
    urls = tuple(url.strip() for url in text.split(",") if url.strip())
    if not urls:
        raise argparse.ArgumentTypeError("no etcd client URL given")
    return urls


def _address(text: str) -> str:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    try:
        scheduler_config = load_file(args.scheduler_config) if args.scheduler_config else None
    except ConfigError as e:
        print(f"pinnace up: --scheduler-config: {e}", file=sys.stderr)
        return 1
    try:
        pools = load_pools(args.config) if args.config is not None else []
        nodes = _nodes(args, pools)
    except ClusterConfigError as e:
        print(f"pinnace up: --config: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"pinnace up: {e}", file=sys.stderr)
        return 1
    if args.cluster_autoscaler and not any(p.autoscaled for p in pools):
        print(
            "pinnace up: --cluster-autoscaler: no node pool of --config has a maxSize, so it has "
            "nothing to scale",
            file=sys.stderr,
        )
    return serve_api(
        args,
        "pinnace up",
        nodes=nodes,
        housekeeping_interval=args.housekeeping_interval,
        scheduler=args.scheduler,
        scheduler_config=scheduler_config,
        controllers=args.controllers,
        cluster_autoscaler=autoscaler_options(args, pools) if args.cluster_autoscaler else None,
        **controller_options(args),
    )


def serve_api(args: argparse.Namespace, command: str, **components: Any) -> int:
    """Serve the API as the flags of `api_server_flags` say, with the cluster's `components`
    (ClusterOptions fields: its nodes, scheduler, controllers), until SIGINT or SIGTERM; a
    start that cannot work is said in one line after `command`, with status 1."""
    try:
        tls = secure.tls_options(args)
    except secure.SecureServingError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 1
    if tls is None and not args.insecure and not _loopback(args.host):
        print(f"{command}: {secure.refusal(args.host)}", file=sys.stderr)
        return 1
    if args.etcd_servers and args.in_memory:
        print(f"{command}: --etcd-servers and --in-memory exclude each other", file=sys.stderr)
        return 1
    options = UpOptions(
        etcd_servers=args.etcd_servers or (),
        tls=tls,
        host=args.host,
        port=args.port,
        data_dir=None if args.in_memory else args.data_dir,
        kubeconfig=args.kubeconfig
        or (None if args.in_memory else str(Path(args.data_dir) / KUBECONFIG_FILE)),
        cluster=ClusterOptions(
            compaction_interval=args.compaction_interval,
            event_ttl=args.event_ttl,
            resource_quota_sync_period=args.resource_quota_sync_period,
            service_account_issuer=args.service_account_issuer,
            service_account_max_token_expiration=args.service_account_max_token_expiration,
            services=ServiceNetwork(
                cluster_ip_range=args.service_cluster_ip_range,
                node_port_range=args.service_node_port_range,
                advertise_address=args.advertise_address,
            ),
            default_storage_class=True,
            hostname=socket.gethostname(),
            seed=args.seed,
            features=args.feature_gates,
            pod_security=args.admission_control_config_file,
            **components,
        ),
    )
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    try:
        asyncio.run(serve(options))
    except (StartError, secure.SecureServingError, OSError) as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 1
    return 0


class StartError(Exception):
    """Why `pinnace up` cannot start, in a sentence for the person who started it."""


def _nodes(args: argparse.Namespace, pools: list[NodePool]) -> list[NodeConfig]:
    """The simulated nodes: the cluster file's `pools`, or --nodes of the --node-* shape."""
    shape = {r: getattr(args, f"node_{r.replace('-', '_')}") for r in SHAPE_RESOURCES}
    if args.config is None:
        capacity = {r: given or DEFAULT_CAPACITY[r] for r, given in shape.items()}
        return node_configs(args.nodes or 0, capacity)
    given = [f"--node-{r}" for r, value in shape.items() if value is not None]
    if args.nodes is not None:
        given.insert(0, "--nodes")
    if given:
        raise ValueError(
            f"{', '.join(given)} cannot be used with --config: give the nodes in its nodePools"
        )
    return pool_node_configs(pools)


def kubeconfig(
    server_url: str, serving: SecureServing | None = None, client: certs.KeyPair | None = None
) -> dict[str, Any]:
    """The kubeconfig `pinnace up` writes; with TLS, as kubeadm's admin.conf: it trusts the
    cluster CA and authenticates as kubernetes-admin (in system:masters), or with the `client`
    certificate (a component's kubeconfig)."""
    cluster: dict[str, Any] = {"server": server_url}
    user: dict[str, Any] = {}
    if serving is not None:
        trust, user = serving.kubeconfig_entries(client)
        cluster.update(trust)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "pinnace", "cluster": cluster}],
        "users": [{"name": "pinnace", "user": user}],
        "contexts": [
            {
                "name": "pinnace",
                "context": {"cluster": "pinnace", "user": "pinnace", "namespace": "default"},
            }
        ],
        "current-context": "pinnace",
    }


async def _open_store(options: UpOptions) -> Store:
    if options.data_dir is None:
        return MemoryStore(pack_ahead=True)
    directory = Path(options.data_dir).expanduser()
    directory.mkdir(parents=True, exist_ok=True)  # with etcd too: the CA and kubeconfig's
    if options.etcd_servers:
        return await _open_etcd_store(options.etcd_servers)
    try:
        return SQLiteStore(directory / DATABASE_FILE)
    except StoreInUseError:
        raise StartError(
            f"the data directory {directory} is in use by another pinnace up: stop that one, "
            "or give another --data-dir (or --in-memory)"
        ) from None
    except sqlite3.Error as e:
        raise _unwritable(directory, f"sqlite: {e}") from None


async def _open_etcd_store(servers: tuple[str, ...]) -> Store:
    try:
        from pinnace.store.etcd import EtcdStore, KeyLayout
    except ImportError:
        raise StartError(
            "--etcd-servers needs etcd's client: pip install 'pinnace[etcd]'"
        ) from None
    where = ",".join(servers)
    try:
        return await EtcdStore.open(servers, layout=KeyLayout(resources=etcd_resources()))
    except ValueError as e:
        raise StartError(f"--etcd-servers: {e}") from None
    except StorageError as e:
        raise StartError(f"cannot reach etcd at {where}: {e}") from None


def _unwritable(directory: object, why: str) -> StartError:
    """A store that cannot write (a full disk): said in one line, and nothing started."""
    return StartError(f"cannot write to the store in {directory}: {why}")


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it a response's head and body wait on the client's delayed ACK (~40 ms each).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if e.errno == errno.EADDRINUSE:
            raise StartError(
                f"{address} is already in use (by another pinnace up?): give another --port, "
                "or --port 0 for a free one"
            ) from None
        raise StartError(f"cannot listen on {address}: {e.strerror}") from None
    sock.set_inheritable(True)
    return sock


async def serve(options: UpOptions) -> None:
    """Run until SIGINT or SIGTERM."""
    sock = _listen(options.host, options.port)
    try:
        store = await _open_store(options)
    except BaseException:
        sock.close()
        raise
    with _kubeconfig_path(options) as kubeconfig_path:
        await _serve(options, sock, store, kubeconfig_path)


def cluster_with_root_ca(options: UpOptions, clock: Clock, pki: Path | None) -> ClusterOptions:
    """The cluster's options with its CA certificate: with TLS, the CA in `pki` that signs the
    serving certificate, which also signs CertificateSigningRequests unless --cluster-signing-*
    files say otherwise (and the service account signing key beside it); else the data
    directory's ca.crt, made there on the first start (so a restart publishes the same), or one
    made for this run."""
    cluster = options.cluster
    if pki is not None:
        ca = certs.ensure_ca(pki)
        signing = cluster.cluster_signing
        if not signing.configured:
            signing = ClusterSigning(ca.cert.read_text(), ca.key.read_text(), signing.duration)
        return dataclasses.replace(
            cluster,
            root_ca=ca.cert.read_text(),
            cluster_signing=signing,
            service_account_key=cluster.service_account_key
            or certs.ensure_service_account_key(pki),
        )
    if cluster.root_ca or options.data_dir is None:
        return cluster
    path = Path(options.data_dir).expanduser() / CA_FILE
    if not path.exists():
        path.write_text(self_signed_ca(Randomness(cluster.seed), clock.now()))
    return dataclasses.replace(cluster, root_ca=path.read_text())


@contextlib.contextmanager
def _kubeconfig_path(options: UpOptions) -> Iterator[Path]:
    """Where the kubeconfig goes: the one asked for, or a temporary directory's, removed when
    the server stops."""
    if options.kubeconfig is not None:
        yield Path(options.kubeconfig).expanduser().resolve()
        return
    with tempfile.TemporaryDirectory(prefix="pinnace-") as directory:
        yield Path(directory) / KUBECONFIG_FILE


async def _serve(options: UpOptions, sock: socket.socket, store: Store, kubeconfig: Path) -> None:
    host, port = sock.getsockname()[:2]
    clock = Clock(asyncio.get_running_loop())
    pki = None
    if options.tls is not None:
        top = Path(options.data_dir).expanduser() if options.data_dir else kubeconfig.parent
        pki = top / secure.PKI_DIR
    cluster = cluster_with_root_ca(options, clock, pki)
    # The `kubernetes` Service leads to the port actually listened on.
    services = dataclasses.replace(cluster.services, secure_port=port)
    plane = ControlPlane(store, clock, dataclasses.replace(cluster, services=services))
    tls_serving = None
    if options.tls is not None and pki is not None:
        tls_serving = secure.secure_serving(options.tls, pki, host, plane.server)
        plane.kubelets.tls = tls_serving.kubelet_tls()
        if ipaddress.ip_address(host).is_unspecified:
            host = "127.0.0.1" if ":" not in host else "::1"  # an address the certificate names
    scheme = "http" if tls_serving is None else "https"
    url = f"{scheme}://{host if ':' not in host else f'[{host}]'}:{port}"
    try:
        await plane.start()
        if tls_serving is not None:
            await secure.ensure_cluster_admins(plane.server)
    except StorageError as e:
        await plane.stop()
        await store.close()
        sock.close()
        raise _unwritable(options.data_dir, str(e)) from None
    settle_garbage_collection()
    app = plane.http_app(
        server_address=f"{host}:{port}",
        security=None if tls_serving is None else tls_serving.security,
    )
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        server_header=False,
        # Nothing reads the client's address or scheme from the scope, so uvicorn's
        # X-Forwarded-* rewriting of them would be work for every request to no end.
        proxy_headers=False,
        http=connections.protocol(connections.connection_cap(connections.raise_open_file_limit())),
        ws=connections.CertifiedWSProtocol,  # the streaming subresources are WebSockets
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        **({} if tls_serving is None else tls_serving.uvicorn_options()),
    )
    http = connections.Server(config)
    loop = asyncio.get_running_loop()
    connections.quiet_accept_failures(loop)

    def stop() -> None:
        app.end_streams()  # so open watches end now, not cancelled at the grace period's end
        http.stop()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop)
    serving = asyncio.create_task(http.serve(sockets=[sock]))
    try:
        while not http.started and not serving.done():
            await asyncio.sleep(0.02)
        if http.started:
            _announce(options, url, kubeconfig, tls_serving, pki)
            # kubectl's first create or apply reads the OpenAPI v3 documents (to choose
            # server-side validation); build them now rather than during that request.
            loop.run_in_executor(None, openapi_v3_index)
        await serving
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await plane.stop()
        await store.close()
        sock.close()
        print("Pinnace stopped.", flush=True)


def _write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(config, sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it may hold a key
    os.fchmod(fd, 0o600)  # O_CREAT's mode is not applied to a kubeconfig already there
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: assume others can reach it


def _announce(
    options: UpOptions,
    url: str,
    path: Path,
    serving: SecureServing | None,
    pki: Path | None = None,
) -> None:
    _write_kubeconfig(path, kubeconfig(url, serving))
    if serving is not None and pki is not None:
        for file, client in serving.components.items():
            _write_kubeconfig(pki.parent / file, kubeconfig(url, serving, client))
    storage = "in memory" if options.data_dir is None else f"in {options.data_dir}"
    if options.etcd_servers:
        storage = f"in etcd at {','.join(options.etcd_servers)}"
    print(f"Pinnace is serving the Kubernetes API at {url} (store {storage}).")
    if serving is None and not _loopback(options.host):
        print(
            f"Warning: {options.host} is reachable from other machines, and the API has no "
            "authentication (--insecure): anyone who can connect can change everything."
        )
    if options.kubeconfig is None:
        print("This run's kubeconfig is removed when it stops (--kubeconfig FILE keeps one):")
    print(f"export KUBECONFIG={path}")
    print("Ready.", flush=True)
