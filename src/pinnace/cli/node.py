"""`pinnace node stop|start|partition|slow NAME`: fail a simulated node of a running
`pinnace up` on purpose, and bring it back (docs/nodes.md). The server does it: these post to
its Pinnace-only path (`pinnace.apiserver.http.app.NODES_PATH`), with the kubeconfig's
credentials and trust (those of a `pinnace up --tls` are needed)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any
from urllib.parse import quote, urlencode

from pinnace.api.status import StatusError
from pinnace.apiserver.http.app import NODES_PATH
from pinnace.cli.component import kubeconfig
from pinnace.client.http import HTTPClient
from pinnace.client.transport import HTTPError
from pinnace.clock import Clock

DONE = {"stop": "stopped", "start": "started", "partition": "partitioned", "slow": "slowed"}


def configure(node: argparse.ArgumentParser) -> None:
    faults = node.add_subparsers(dest="fault", metavar="FAULT", required=True)
    helps = {
        "stop": "stop the node's kubelet: no lease, no status, no pod updates",
        "start": "end the node's faults: restart a stopped kubelet, reconnect a partitioned "
        "one, restore its heartbeats' pace",
        "partition": "cut the node's kubelet off from the API server while it runs on",
        "slow": "make the node's heartbeats (lease, node status) FACTOR times less frequent",
    }
    for fault, text in helps.items():
        parser = faults.add_parser(fault, help=text, description=text[0].upper() + text[1:] + ".")
        parser.add_argument("name", metavar="NAME", help="the node")
        if fault == "slow":
            parser.add_argument("factor", metavar="FACTOR", type=float, help="at least 1")
        parser.add_argument(
            "--kubeconfig",
            help="kubeconfig naming the API server ($KUBECONFIG, else ~/.pinnace/kubeconfig)",
        )
        parser.add_argument("--server", help="the API server's URL, instead of the kubeconfig's")
        parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    query = {"factor": f"{args.factor:g}"} if args.fault == "slow" else {}
    path = f"{NODES_PATH}/{quote(args.name, safe='')}/{args.fault}"
    if query:
        path += f"?{urlencode(query)}"
    try:
        state = asyncio.run(_post(args, path))
    except ValueError as e:
        print(f"pinnace node {args.fault}: {e}", file=sys.stderr)
        return 1
    except StatusError as e:
        print(f"Error from server ({e.reason}): {e.message}", file=sys.stderr)
        return 1
    except (HTTPError, OSError) as e:
        print(f"pinnace node {args.fault}: cannot reach the API server: {e}", file=sys.stderr)
        return 1
    print(f"node/{args.name} {DONE[args.fault]}{_slowness(state)}")
    return 0


async def _post(args: argparse.Namespace, path: str) -> dict[str, Any]:
    clock = Clock(asyncio.get_running_loop())
    if args.server:
        client = HTTPClient(args.server, clock)
    else:
        client = HTTPClient.from_config(kubeconfig(args), clock)
    try:
        return await client.post_path(path)
    finally:
        client.close()


def _slowness(state: dict[str, Any]) -> str:
    factor = state.get("slowness", 1)
    return f" (heartbeats {factor:g} times less often)" if factor != 1 else ""
