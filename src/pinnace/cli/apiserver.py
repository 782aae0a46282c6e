"""`pinnace apiserver`: the API server alone, as kube-apiserver runs beside kube-scheduler,
kube-controller-manager and the kubelets (`pinnace scheduler`, `pinnace controller-manager`,
`pinnace agent`; docs/processes.md): `pinnace up` with its API server's flags
(`up.api_server_flags`) and without the scheduler, kube-controller-manager's controllers and
nodes of its own. What it still runs beside the API (the namespace and ServiceAccount
controllers, the root CA publisher, compaction, Event expiry …) is `ControlPlane`'s, as in
`pinnace up --no-scheduler --no-controllers`.
"""

from __future__ import annotations

import argparse

from pinnace.cli import up


def configure(apiserver: argparse.ArgumentParser) -> None:
    apiserver.description = (
        "Serve the Kubernetes API as pinnace up does, without a scheduler, "
        "kube-controller-manager's controllers or nodes: pinnace scheduler, pinnace "
        "controller-manager and pinnace agent processes run those (with --tls, on the "
        "kubeconfigs written beside the admin's). Stop with Ctrl-C."
    )
    up.api_server_flags(apiserver)
    apiserver.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return up.serve_api(args, "pinnace apiserver", scheduler=False, controllers=False)
