"""The `pinnace` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import gc
import importlib
import platform
import sys
from collections.abc import Sequence
from typing import Any

from pinnace import KUBERNETES_REFERENCE, __version__

COMMANDS: tuple[tuple[str, str], ...] = (
    ("bench", "measure Pinnace's speed on this machine (real time)"),
    ("up", "run the control plane and serve the Kubernetes API for kubectl"),
    (
        "apiserver",
        "serve the Kubernetes API alone, for scheduler, controller-manager and agent processes",
    ),
    ("scheduler", "run kube-scheduler against an API server, or ask the scheduler about a pod"),
    ("controller-manager", "run kube-controller-manager's controllers against an API server"),
    ("agent", "run simulated nodes against an API server, in a process of their own"),
    (
        "deschedule",
        "evict pods a DeschedulerPolicy finds misplaced, so the scheduler places them again",
    ),
    ("node", "fail a simulated node on purpose, or restore it"),
    ("simulate", "run a scenario on the virtual clock and write its report"),
    ("plan", "capacity planning: fit, headroom, nodes to add, nodes to remove, failures"),
    ("record", "watch a running cluster and write its workloads' changes as a trace to replay"),
    ("gym", "the research environment: evaluate scheduling policies on a scenario"),
)
"""Each command after `version`, with the line `pinnace --help` shows for it; its module,
pinnace.cli.<command> (- as _), configures its parser: `configure(parser)`."""


def _version(args: argparse.Namespace) -> int:
    print(f"Pinnace {__version__}")
    print(f"Kubernetes reference: {KUBERNETES_REFERENCE}")
    print(f"Python {platform.python_version()} on {platform.system().lower()}/{platform.machine()}")
    return 0


def _module(command: str) -> str:
    return f"pinnace.cli.{command.replace('-', '_')}"


class Commands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The commands' subparsers, each configured by its module only once its command is
    parsed: a command imports what it runs (the simulator, the planner, plotly, the benchmarks
    …) and no other command pays for that, which matters for the processes `pinnace up` and the
    tests start by the hundred. `pinnace --help` needs no module: it shows COMMANDS' lines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unconfigured: set[str] = set()

    def add_command(self, name: str, line: str) -> None:
        """`name`'s parser, configured by pinnace.cli.<name> once `name` is parsed."""
        self.add_parser(name, help=line)
        self._unconfigured.add(name)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list)  # the command and the arguments after it
        if values[0] in self._unconfigured:
            self._unconfigured.remove(values[0])
            module = importlib.import_module(_module(values[0]))
            module.configure(self._name_parser_map[values[0]])
        super().__call__(parser, namespace, values, option_string)


class CommandParser(argparse.ArgumentParser):
    """Each command's parser (its subparsers are of this class too) refuses the arguments it
    does not know with its own usage and name, `pinnace apiserver: error: unrecognized
    arguments: --nodes 3`, where argparse passes them up to the top-level parser, whose usage
    lists only the commands."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed, extra


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = CommandParser(
        prog="pinnace",
        description=(
            "Kubernetes resource management and scheduling, re-implemented in Python: "
            "a control plane that kubectl drives, with simulated nodes."
        ),
    )
    parser.register("action", "commands", Commands)
    subcommands = parser.add_subparsers(action="commands", dest="command", metavar="COMMAND")
    assert isinstance(subcommands, Commands)
    version = subcommands.add_parser("version", help="print the Pinnace version")
    version.set_defaults(run=_version)
    for name, line in COMMANDS:
        subcommands.add_command(name, line)
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


def entry() -> int:
    """The `pinnace` program: `main` on the process's own arguments. Its command's module is
    imported first with the cyclic garbage collector paused, and what the import made is frozen
    (left out of every later collection): hundreds of thousands of objects that live as long as
    the process, which the collections their allocations trigger would otherwise walk again
    and again, a fifth of `pinnace up`'s CPU before it is ready. Programs that call `main`
    themselves (the tests) keep their collector as it is."""
    if len(sys.argv) > 1 and sys.argv[1] in dict(COMMANDS):
        gc.disable()
        try:
            importlib.import_module(_module(sys.argv[1]))
        finally:
            gc.freeze()
            gc.enable()
    return main()


if __name__ == "__main__":
    sys.exit(entry())
