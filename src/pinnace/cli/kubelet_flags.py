"""The kubelet's flags that `pinnace up` and `pinnace agent` take for the nodes they run."""

from __future__ import annotations

import argparse

from pinnace.cli.arguments import positive_duration
from pinnace.kubelet.config import HOUSEKEEPING_INTERVAL


def add_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--housekeeping-interval",
        type=positive_duration("10s"),
        default=HOUSEKEEPING_INTERVAL,
        metavar="DURATION",
        help="interval between container housekeepings, as the kubelet's: how often the "
        "nodes' container stats are read for /metrics/cadvisor, /metrics/resource and "
        f"/stats/summary ({HOUSEKEEPING_INTERVAL:g}s); a Go duration such as 10s",
    )
