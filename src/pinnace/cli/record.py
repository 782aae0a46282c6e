"""`pinnace record --out trace.jsonl`: watch a running cluster and write every create, update
and delete of its workloads and nodes, with their times, in Pinnace's trace format
(`pinnace.sim.traces.recording`), for a scenario to replay (docs/simulation.md, "Trace
replay").

It is a plain client of the Kubernetes API, through the official `kubernetes` package and a
kubeconfig, so it records `pinnace up` and any Kubernetes cluster alike (TLS, tokens and exec
plugins as kubectl uses them). As an informer does: it lists each kind (Namespaces,
PriorityClasses, Nodes, Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, Pods, in that
order, each written as ADDED at time 0), then watches each from its list's resourceVersion, one
thread a kind; a watch that ends is resumed from the last resourceVersion seen, and one the
server no longer has (410 Gone) is made good by listing again and writing what changed
meanwhile. A kind the cluster does not serve is left out, with a note. It stops after
`--duration`, or on Ctrl-C or SIGTERM, with every line written.
"""

from __future__ import annotations

import argparse

from pinnace.cli.arguments import positive_duration


def configure(record: argparse.ArgumentParser) -> None:
    record.description = (
        "Watch a running cluster (pinnace up, or any Kubernetes cluster) and write every "
        "create, update and delete of its Namespaces, PriorityClasses, Nodes, Pods, "
        "Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs, with their times, "
        "for a scenario's trace workload to replay (format: pinnace)."
    )
    record.add_argument("--out", required=True, metavar="FILE", help="the trace file to write")
    record.add_argument(
        "--kubeconfig",
        help="kubeconfig naming the cluster ($KUBECONFIG, else ~/.pinnace/kubeconfig)",
    )
    record.add_argument("--context", help="the kubeconfig's context to use (its current one)")
    record.add_argument(
        "--duration",
        type=positive_duration("10m"),
        metavar="DURATION",
        help="stop after this long, a Go duration such as 10m (default: until Ctrl-C)",
    )
    record.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not above: the `kubernetes` package takes over half a second to import,
    # and every other `pinnace` command (each process `pinnace up` and its components start)
    # would pay it for nothing.
    from pinnace.cli import recorder

    return recorder.run(args)
