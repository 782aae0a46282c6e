"""`pinnace agent`: simulated nodes in a process of their own, on this machine or another,
against the API server their kubeconfig names: the node pool `pinnace up` runs
(`pinnace.kubelet.NodeAgentPool`), with its nodes named `<prefix>-1` … `<prefix>-N` (or after
the pools of a cluster file) and labelled `pinnace.dev/agent: <prefix>`, so several agent
processes share a control plane, each with its own nodes.

Over HTTPS every node's requests go as that node, `system:node:<name>` in `system:nodes`
(impersonated with the process's credential, agent.conf), so the Node authorizer and
NodeRestriction judge them as a kubelet's; the pool's shared informers read as the process.
Over plain HTTP nothing is authenticated, as for every client.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import sys
from collections.abc import Callable

from pinnace.api.names import is_dns1123_subdomain, is_valid_label_value
from pinnace.apiserver.auth.user import NODE_PREFIX, NODES_GROUP
from pinnace.apiserver.http import connections
from pinnace.cli import component, kubelet_flags
from pinnace.cli.arguments import whole
from pinnace.client import Client
from pinnace.client.http import HTTPClient
from pinnace.client.kubeconfig import KubeconfigError
from pinnace.clock.component import Component
from pinnace.kubelet import NodeAgentPool, NodeConfig
from pinnace.kubelet.cluster_config import ClusterConfigError, load_pools
from pinnace.kubelet.cluster_config import node_configs as pool_node_configs
from pinnace.kubelet.config import AGENT_LABEL
from pinnace.kubelet.server import KubeletServer


def configure(agent: argparse.ArgumentParser) -> None:
    agent.description = (
        "Run N simulated nodes (their kubelets) against the API server of --kubeconfig "
        "until SIGINT or SIGTERM. Give each agent process its own --name-prefix and "
        "--first-index, so node names and addresses do not overlap."
    )
    component.add_flags(agent)
    agent.add_argument(
        "--nodes",
        type=whole(0),
        metavar="N",
        help="run N nodes of the default shape, <prefix>-1 … <prefix>-N",
    )
    agent.add_argument(
        "--name-prefix",
        required=True,
        metavar="PREFIX",
        help="the start of every node name, and the pinnace.dev/agent label of the nodes",
    )
    agent.add_argument(
        "--config",
        metavar="FILE",
        help="a cluster file of node pools (docs/nodes.md) instead of --nodes: nodes "
        "<prefix>-<pool>-<n>",
    )
    agent.add_argument(
        "--first-index",
        type=whole(1),
        default=1,
        metavar="N",
        help="the index of the first node, from which node and pod addresses follow (1); "
        "pinnace up's nodes count from 1",
    )
    where = agent.add_mutually_exclusive_group()
    where.add_argument(
        "--address",
        default="127.0.0.1",
        help="the address the nodes' kubelet API is served on, for the API server's pods/log "
        "(127.0.0.1; 0.0.0.0 serves every address and publishes the machine's name)",
    )
    where.add_argument(
        "--node-addresses",
        type=network,
        metavar="NETWORK",
        help="serve each node's kubelet API at an address of its own instead, all on --port: "
        "node i (its index, from --first-index) at the i-th address of NETWORK, such as "
        "127.1.0.0/16 (Linux routes all of 127.0.0.0/8 to the loopback), so a Prometheus "
        "scrapes each node there as it scrapes kubelets, without the API server",
    )
    kubelet_flags.add_flags(agent)
    agent.add_argument(
        "--port",
        type=int,
        default=10250,
        help="the port of the nodes' kubelet API (10250, the kubelet's; 0: any free port); "
        "give each agent process on a machine its own",
    )
    agent.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        configs = agent_nodes(args)
    except (ClusterConfigError, ValueError) as e:
        print(f"pinnace agent: {e}", file=sys.stderr)
        return 1
    prefix = args.name_prefix
    try:
        own = {} if args.node_addresses is None else node_addresses(args.node_addresses, configs)
        tls = component.kubeconfig(args).tls
        connections.raise_open_file_limit()  # as a Go kubelet does: a socket a node, with `own`
        kubelet = KubeletServer(args.address, args.port, tls, own)
    except (KubeconfigError, ValueError) as e:
        print(f"pinnace agent: {e}", file=sys.stderr)
        return 1
    except (OSError, OverflowError) as e:
        where = getattr(e, "filename", None) or f"{args.address}:{args.port}"
        why = e.strerror if isinstance(e, OSError) else e
        print(f"pinnace agent: cannot serve the kubelet API on {where}: {why}", file=sys.stderr)
        return 1
    configs = [dataclasses.replace(c, kubelet_endpoint=kubelet.endpoint(c.name)) for c in configs]

    def build(client: Callable[[], HTTPClient]) -> list[Component]:
        process = client()
        pool = NodeAgentPool(process, configs, process=prefix, node_client=as_node(process),
                             housekeeping_interval=args.housekeeping_interval)  # fmt: skip
        kubelet.pool = pool
        return [kubelet, pool]

    return component.run("agent", "kubelet", args, build)


def agent_nodes(args: argparse.Namespace) -> list[NodeConfig]:
    """The nodes the flags ask for, named after the prefix and labelled as the agent's."""
    prefix = args.name_prefix
    if (args.config is None) == (args.nodes is None):
        raise ValueError("give either --nodes or --config")
    if args.config is None:
        names = [f"{prefix}-{i}" for i in range(1, args.nodes + 1)]
        configs = [NodeConfig(name) for name in names]
    else:
        configs = pool_node_configs(load_pools(args.config))
        configs = [dataclasses.replace(c, name=f"{prefix}-{c.name}") for c in configs]
    # Refused here, once, rather than by the API server at every registration attempt.
    for why in is_valid_label_value(prefix):
        raise ValueError(f"--name-prefix {prefix!r}: not a label value ({AGENT_LABEL}): {why}")
    for config in configs:
        for why in is_dns1123_subdomain(config.name):
            raise ValueError(f"--name-prefix {prefix!r}: node name {config.name!r}: {why}")
    return [
        dataclasses.replace(c, index=args.first_index + i, labels={**c.labels, AGENT_LABEL: prefix})
        for i, c in enumerate(configs)
    ]


def network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """--node-addresses: a network, its host bits zero."""
    try:
        return ipaddress.ip_network(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def node_addresses(
    within: ipaddress.IPv4Network | ipaddress.IPv6Network, configs: list[NodeConfig]
) -> dict[str, str]:
    """Each node's kubelet address of its own: node i the i-th address of the network, as it
    has the i-th of 10.0.0.0/8 for its InternalIP. ValueError for an index beyond it."""
    addresses = {}
    for config in configs:
        if config.index >= within.num_addresses:
            raise ValueError(f"--node-addresses {within} has no address for node "
                             f"{config.name} (index {config.index})")  # fmt: skip
        addresses[config.name] = str(within[config.index])
    return addresses


def as_node(process: HTTPClient) -> Callable[[str], Client]:
    """Each node's client: over HTTPS, the process's credential impersonating the node."""
    if not process.secure:
        return lambda name: process
    return lambda name: process.acting_as(f"{NODE_PREFIX}{name}", [NODES_GROUP])
