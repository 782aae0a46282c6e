"""`pinnace plan COMMAND`: capacity planning with the real scheduler and controllers
(docs/planning.md). Every command reads the cluster from a Scenario or cluster file (`--cluster`)
or from a running cluster through its API (`--from-cluster`, with a kubeconfig), prints tables
(or JSON with `--json`) and writes an HTML report with `--html FILE`. Each is also a Python
function of `pinnace.plan`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

from pinnace.cli.arguments import positive_duration, whole
from pinnace.cli.scheduler import DEFAULT_KUBECONFIG
from pinnace.cluster import GC_THRESHOLD
from pinnace.descheduler.args import PolicyError
from pinnace.descheduler.policy import load_file as load_policy
from pinnace.plan import PlanError, PlanReport, Snapshot, fit, from_cluster, from_file
from pinnace.plan.deschedule import deschedule
from pinnace.plan.failure import DEFAULT_CAP, failure
from pinnace.plan.headroom import DEFAULT_LIMIT, headroom, parse_shape
from pinnace.plan.load import load_workloads
from pinnace.plan.nodes import DEFAULT_MAX_NODES, nodes_needed
from pinnace.plan.remove import removable

KUBE_DEFAULT = Path.home() / ".kube" / "config"
ANSWERED_NO = 3
"""The exit status of a plan whose answer is no (PlanReport.answered_no): 0 is a yes or an
answer, 1 a bad input, 2 a command line the parser refuses."""


def configure(plan: argparse.ArgumentParser) -> None:
    plan.description = (
        "Answer capacity questions about a cluster with kube-scheduler's own filters and "
        "scores and kube-controller-manager's controllers (docs/planning.md)."
    )
    commands = plan.add_subparsers(dest="plan_command", metavar="COMMAND", required=True)
    _add(
        commands,
        "fit",
        "do these workloads fit beside what runs? Where each pod lands, or why not",
        _fit,
        _workloads,
    )
    _add(commands, "headroom", "how many more copies of each pod shape fit", _headroom, _shapes)
    _add(
        commands,
        "nodes",
        "the least number of nodes of a pool to add so that everything schedules",
        _nodes,
        _nodes_arguments,
    )
    _add(
        commands,
        "remove",
        "which nodes could be drained with every pod still placed, and what keeps the others",
        _remove,
        _remove_arguments,
    )
    _add(
        commands,
        "failure",
        "what happens when nodes or a zone are lost: pending pods, preemptions, budgets, time",
        _failure,
        _failure_arguments,
    )
    _add(
        commands,
        "deschedule",
        "the descheduler's evictions (dry run) and where each evicted pod would land",
        _deschedule,
        _deschedule_arguments,
    )


def _add(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help_text: str,
    run: Callable[[argparse.Namespace, Snapshot], PlanReport],
    arguments: Callable[[argparse.ArgumentParser], None],
) -> None:
    command = commands.add_parser(
        name, help=help_text, description=help_text[0].upper() + help_text[1:] + "."
    )
    arguments(command)
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--cluster", metavar="FILE", help="a Scenario or cluster file (docs/simulation.md)"
    )
    source.add_argument(
        "--from-cluster",
        action="store_true",
        help="snapshot the running cluster the kubeconfig names, through its API",
    )
    command.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="with --from-cluster: the kubeconfig ($KUBECONFIG, else ~/.pinnace/kubeconfig, "
        "else ~/.kube/config)",
    )
    command.add_argument("--context", help="with --from-cluster: the kubeconfig context")
    command.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration to schedule with (the file's, else the defaults)",
    )
    command.add_argument(
        "--seed", type=whole(0), default=0, help="the seed of every random choice (0)"
    )
    command.add_argument("--json", action="store_true", help="print JSON (planVersion 1)")
    command.add_argument("--html", metavar="FILE", help="also write an HTML report to FILE")
    command.set_defaults(run=lambda args: _run(args, name, run))


def _run(
    args: argparse.Namespace,
    name: str,
    run: Callable[[argparse.Namespace, Snapshot], PlanReport],
) -> int:
    # The cyclic collector as rare as in `pinnace up` meanwhile: a plan holds hundreds of
    # thousands of acyclic objects, which the default thresholds walk again and again (a
    # third of the CPU of a 5,000-node `plan nodes`). Once, though, when the snapshot is
    # loaded: the control plane that made a file's pods into a cluster is gone, but its
    # components hold one another in cycles, and with them every object it stored.
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        snapshot = _snapshot(args)
        gc.collect()
        plan = run(args, snapshot)
        if args.html:
            plan.write_html(args.html)
    except PlanError as e:
        print(f"pinnace plan {name}: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"pinnace plan {name}: {e}", file=sys.stderr)
        return 1
    finally:
        gc.set_threshold(*thresholds)
    print(plan.json() if args.json else plan.text(), end="" if not args.json else "\n")
    return ANSWERED_NO if plan.answered_no else 0


def _snapshot(args: argparse.Namespace) -> Snapshot:
    if args.cluster:
        return from_file(args.cluster, seed=args.seed, scheduler_config=args.scheduler_config or "")
    return from_cluster(
        kubeconfig(args.kubeconfig),
        context=args.context,
        scheduler_config=args.scheduler_config or "",
    )


def kubeconfig(given: str | None) -> Path:
    """--kubeconfig, else $KUBECONFIG, else Pinnace's, else kubectl's default."""
    if given:
        return Path(given).expanduser()
    if os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0]).expanduser()
    return DEFAULT_KUBECONFIG if DEFAULT_KUBECONFIG.exists() else KUBE_DEFAULT


# --- the commands ----------------------------------------------------------------------------


def _workloads(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "workloads",
        nargs="+",
        metavar="WORKLOADS",
        help="manifest files or directories (Deployments, Jobs, pods, DaemonSets ...)",
    )


def _fit(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    return fit(snapshot, load_workloads(args.workloads), seed=args.seed)


def _shapes(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--shape",
        action="append",
        default=[],
        type=_shape,
        metavar="REQUESTS",
        help="a pod shape as requests, e.g. cpu=500m,memory=1Gi (repeatable); default: "
        "each workload's pod in the cluster",
    )
    command.add_argument(
        "--limit",
        type=whole(1),
        default=DEFAULT_LIMIT,
        help=f"the most copies of a shape placed one by one ({DEFAULT_LIMIT})",
    )


def _headroom(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    return headroom(snapshot, args.shape, seed=args.seed, limit=args.limit)


def _nodes_arguments(command: argparse.ArgumentParser) -> None:
    _workloads(command)
    command.add_argument("--pool", required=True, help="the node pool to add nodes of")
    command.add_argument(
        "--spare",
        type=whole(0),
        default=0,
        help="nodes that may fail with everything still placed (0)",
    )
    command.add_argument(
        "--max-nodes",
        type=whole(1),
        default=DEFAULT_MAX_NODES,
        help=f"the most nodes tried ({DEFAULT_MAX_NODES})",
    )


def _nodes(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    return nodes_needed(
        snapshot,
        load_workloads(args.workloads),
        args.pool,
        spare=args.spare,
        seed=args.seed,
        max_nodes=args.max_nodes,
    )


def _remove_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--threshold",
        type=_fraction,
        metavar="FRACTION",
        help="only nodes whose utilisation is below this are candidates, as "
        "cluster-autoscaler's --scale-down-utilization-threshold (default: every node)",
    )


def _remove(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    return removable(snapshot, threshold=args.threshold, seed=args.seed)


def _failure_arguments(command: argparse.ArgumentParser) -> None:
    lost = command.add_mutually_exclusive_group(required=True)
    lost.add_argument("--node", action="append", default=[], help="a node lost (repeatable)")
    lost.add_argument("--zone", help="every node of the zone (topology.kubernetes.io/zone) lost")
    lost.add_argument(
        "--random", type=whole(1), default=0, metavar="K", help="K nodes lost, drawn at random"
    )
    command.add_argument(
        "--trials", type=whole(1), default=1, help="with --random: how many draws (1)"
    )
    command.add_argument(
        "--until",
        type=positive_duration("30m"),
        default=DEFAULT_CAP,
        metavar="DURATION",
        help="the most simulated time after the failure, a Go duration (1h)",
    )


def _failure(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    return failure(
        snapshot,
        nodes=args.node,
        zone=args.zone or "",
        random_nodes=args.random,
        trials=args.trials,
        seed=args.seed,
        cap=args.until,
    )


def _deschedule_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--policy", required=True, metavar="FILE", help="a DeschedulerPolicy (descheduler/v1alpha2)"
    )


def _deschedule(args: argparse.Namespace, snapshot: Snapshot) -> PlanReport:
    try:
        policy = load_policy(args.policy)
    except PolicyError as e:
        raise PlanError(str(e)) from None
    return deschedule(snapshot, policy, seed=args.seed)


# --- argument types ----------------------------------------------------------------------------


def _shape(text: str) -> dict[str, str]:
    try:
        return parse_shape(text)
    except PlanError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, not {value}")
    return value
