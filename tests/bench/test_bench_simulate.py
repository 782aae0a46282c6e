"""`pinnace bench simulate --json`: the figures issue 16 asks for, and the CPU time beside the
wall time (on a shared machine the CPU time is what compares)."""

from __future__ import annotations

import json

from pinnace.api import catalog
from pinnace.bench import simulate
from pinnace.sim.simulation import Simulation

REPLICA_SETS = catalog.kind("apps", "replicasets")


def test_a_small_churn_prints_its_figures_with_the_cpu_time() -> None:
    results = simulate.run(simulate.churn(nodes=3, pods=6, hours=0.05))
    assert results["scenario"] == "churn"
    assert results["nodes"] == 3
    assert 0 < results["pods"] <= 6  # Poisson arrivals: not all may come in time
    assert results["simulated_seconds"] == 180.0
    for key in ("wall_seconds", "speedup", "pods_per_second", "cpu_seconds", "rss_mib"):
        assert results[key] > 0
    assert results["pods_per_cpu_second"] > 0
    assert json.loads(simulate.render(results, as_json=True)) == results
    assert "pods created per CPU second" in simulate.render(results, as_json=False)


def test_the_day_workload_restarts_deployments_runs_jobs_and_fails_a_node() -> None:
    scenario = simulate.day(nodes=6, pods=120, hours=2)
    with Simulation(scenario) as sim:
        sim.advance()
        replica_sets = sim.run_coroutine(sim.client.list(REPLICA_SETS, "default"))
        report = sim.finish()
    # Ten Deployments, each restarted every hour: a ReplicaSet per hour's template.
    assert len(replica_sets["items"]) == simulate.DEPLOYMENTS * 3
    pods = report.summary["pods"]
    assert pods["created"] >= 100  # about 120: the Jobs arrive by a Poisson process
    assert pods["succeeded"] > 0  # the Jobs' pods run to the end
    # The node lifecycle controller evicts the failed node's pods once its taint's tolerations
    # run out (300 s), before the node comes back.
    assert report.summary["evictions"]["byReason"]["DeletionByTaintManager"] > 0
