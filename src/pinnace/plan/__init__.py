"""Capacity planning (`pinnace plan`, docs/planning.md): questions about a cluster answered with
the real components, from a snapshot of a running cluster or a Scenario or cluster file.

    from pinnace.plan import from_file, fit, load_workloads
    snapshot = from_file("cluster.yaml")
    plan = fit(snapshot, load_workloads(["web.yaml"]))
    plan.document["fits"], print(plan.text()), plan.write_html("fit.html")
"""

from pinnace.plan.cluster import PlanError, Snapshot
from pinnace.plan.fit import fit
from pinnace.plan.load import from_cluster, from_file, load_workloads
from pinnace.plan.report import PlanReport

__all__ = [
    "PlanError",
    "PlanReport",
    "Snapshot",
    "fit",
    "from_cluster",
    "from_file",
    "load_workloads",
]
