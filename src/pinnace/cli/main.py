"""The `pinnace` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Sequence

from pinnace import KUBERNETES_REFERENCE, __version__


def _version(args: argparse.Namespace) -> int:
    print(f"Pinnace {__version__}")
    print(f"Kubernetes reference: {KUBERNETES_REFERENCE}")
    print(f"Python {platform.python_version()} on {platform.system().lower()}/{platform.machine()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pinnace",
        description=(
            "Kubernetes resource management and scheduling, re-implemented in Python: "
            "a control plane that kubectl drives, with simulated nodes."
        ),
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    version = subcommands.add_parser("version", help="print the Pinnace version")
    version.set_defaults(run=_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 0
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
