"""`pinnace bench simulate --json`: the figures issue 16 asks for, and the CPU time beside the
wall time (on a shared machine the CPU time is what compares)."""

from __future__ import annotations

import json

from tests.support import run_pinnace

from pinnace.api import catalog
from pinnace.bench import simulate
from pinnace.clock.rfc3339 import parse_time
from pinnace.sim.simulation import Simulation
from pinnace.store import WatchEvent

REPLICA_SETS = catalog.kind("apps", "replicasets")
JOBS = catalog.kind("batch", "jobs")


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
    jobs_deleted = []

    def deleted_job(change: WatchEvent) -> None:
        if change.type == "DELETED" and change.object.get("kind") == "Job":
            jobs_deleted.append(change.object["metadata"]["name"])

    with Simulation(scenario) as sim:
        sim.store.observe(deleted_job)
        sim.advance()
        replica_sets = sim.run_coroutine(sim.client.list(REPLICA_SETS, "default"))
        jobs = sim.run_coroutine(sim.client.list(JOBS, "default"))["items"]
        end = sim.clock.now()
        report = sim.finish()
    # Ten Deployments, each restarted every hour: a ReplicaSet per hour's template.
    assert len(replica_sets["items"]) == simulate.DEPLOYMENTS * 3
    pods = report.summary["pods"]
    assert pods["created"] >= 100  # about 120: the Jobs arrive by a Poisson process
    assert pods["succeeded"] > 0  # the Jobs' pods run to the end
    # The node lifecycle controller evicts the failed node's pods once its taint's tolerations
    # run out (300 s), before the node comes back.
    assert report.summary["evictions"]["byReason"]["DeletionByTaintManager"] > 0
    # ttlSecondsAfterFinished: a Job is deleted ten minutes after it finished, not before.
    assert jobs_deleted
    finished = [j["status"]["completionTime"] for j in jobs if j["status"].get("completionTime")]
    assert all(end - parse_time(done) <= 600 for done in finished)


def test_the_day_workload_through_the_command() -> None:
    result = run_pinnace(
        "bench",
        "simulate",
        "--workload",
        "day",
        "--nodes",
        "4",
        "--pods",
        "40",
        "--hours",
        "1",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert (figures["scenario"], figures["nodes"], figures["simulated_seconds"]) == (
        "day",
        4,
        3600.0,
    )
    assert figures["pods"] >= 30  # about 40: 20 of the Deployments, the Jobs by Poisson arrivals
