"""Capacity planning (`pinnace plan`, docs/planning.md): questions about a cluster answered with
the real scheduler and controllers, from a snapshot of a running cluster or a Scenario or cluster
file. Each command is a function returning a `PlanReport` (its JSON `document`, `text()`,
`html()`).

    from pinnace.plan import fit, from_file, load_workloads
    snapshot = from_file("cluster.yaml")            # or from_cluster("~/.kube/config")
    plan = fit(snapshot, load_workloads(["web.yaml"]))
    plan.document["fits"], print(plan.text()), plan.write_html("fit.html")
"""

from pinnace.plan.cluster import PlanError, Snapshot
from pinnace.plan.deschedule import deschedule
from pinnace.plan.failure import failure
from pinnace.plan.fit import fit
from pinnace.plan.headroom import headroom
from pinnace.plan.load import from_cluster, from_file, load_workloads
from pinnace.plan.nodes import nodes_needed
from pinnace.plan.remove import removable
from pinnace.plan.report import PlanReport

__all__ = [
    "PlanError",
    "PlanReport",
    "Snapshot",
    "deschedule",
    "failure",
    "fit",
    "from_cluster",
    "from_file",
    "headroom",
    "load_workloads",
    "nodes_needed",
    "removable",
]
