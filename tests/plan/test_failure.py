"""`pinnace plan failure`: a node lost in a simulation with v1.32's timings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.plan.manifests import deployment, job, pod, pool, snapshot

from pinnace.api import catalog
from pinnace.cli.main import main
from pinnace.controllers.controller_utils import controller_ref
from pinnace.plan import PlanError
from pinnace.plan.failure import PODS, _load, _scenario, _settle, failure
from pinnace.sim import Simulation

REPLICA_SETS = catalog.kind("apps", "replicasets")
DAEMON_SETS = catalog.kind("apps", "daemonsets")
JOBS = catalog.kind("batch", "jobs")

BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": 5, "selector": {"matchLabels": {"app": "web"}}},
}


def _cluster(tmp_path: Path, *objects: Any) -> Any:
    return snapshot(tmp_path, pool("general", 3), objects=[deployment("web", 6, "1"), *objects])


def test_a_lost_nodes_pods_come_back_after_the_grace_period_and_toleration(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path, BUDGET, pod("bare", "100m", nodeName="general-2"))
    plan = failure(cluster, nodes=["general-2"]).document
    (trial,) = plan["trials"]
    assert trial["settled"]
    assert trial["pending"] == []
    # NotReady once the 50 s grace period is over (seen within the 5 s monitor period), then
    # evicted once the 300 s toleration of the unreachable taint has run out; the replacements
    # start within seconds. The pods evicted leave the budget short meanwhile.
    assert 350 < trial["rescheduledAfterSeconds"] < 380
    assert trial["evictions"] == {"DeletionByTaintManager": 3}  # two of web's, and bare
    assert trial["lost"] == ["default/bare"]  # nothing makes it again
    assert trial["pdbViolations"] == [
        {
            "pdb": "default/web",
            "desiredHealthy": 5,
            "lowestHealthy": 4,
            "polls": trial["pdbViolations"][0]["polls"],
        }
    ]
    assert {n["name"] for n in plan["nodes"]} == {"general-1", "general-3"}


def test_pods_that_fit_nowhere_after_a_loss_stay_pending(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 2), objects=[deployment("web", 4, "1500m")])
    (trial,) = failure(cluster, nodes=["general-1"]).document["trials"]
    assert trial["rescheduledAfterSeconds"] is None
    assert len(trial["pending"]) == 2
    assert {p["message"] for p in trial["pending"]} == {
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{node.kubernetes.io/unreachable: }. preemption: 0/2 nodes are available: 1 No "
        "preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.."
    }


def test_random_trials_from_one_settled_cluster(tmp_path: Path) -> None:
    plan = failure(_cluster(tmp_path), random_nodes=1, trials=3, seed=4).document
    assert [len(t["lostNodes"]) for t in plan["trials"]] == [1, 1, 1]
    assert plan["summary"]["trials"] == 3
    assert plan["summary"]["trialsWithPendingPods"] == 0


def test_say_what_is_lost(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="--node, --zone or --random"):
        failure(_cluster(tmp_path))
    with pytest.raises(PlanError, match='no node in zone "a"'):
        failure(_cluster(tmp_path), zone="a")


def test_the_loaded_cluster_runs_the_snapshots_pods_each_controlled_by_its_owner(
    tmp_path: Path,
) -> None:
    agent = deployment("agent", 0, "100m")
    agent["kind"] = "DaemonSet"
    del agent["spec"]["replicas"]
    objects = [deployment("web", 4, "1"), agent, job("batch", 2, "500m")]
    cluster = snapshot(tmp_path, pool("general", 3), objects=objects)
    sim = Simulation(_scenario(cluster, None, 0), seed=0)
    try:
        sim.run_coroutine(_load(sim, cluster))
        sim.run_coroutine(_settle(sim))
        pods = sim.run_coroutine(sim.client.list(PODS, "default"))["items"]
        owners = {
            o["metadata"]["uid"]: f"{kind}/{o['metadata']['name']}"
            for kind, resource in (
                ("ReplicaSet", REPLICA_SETS),
                ("DaemonSet", DAEMON_SETS),
                ("Job", JOBS),
            )
            for o in sim.run_coroutine(sim.client.list(resource, "default"))["items"]
        }
    finally:
        sim.close()

    def owned(pods: list[Any]) -> dict[str, str]:
        return {p["metadata"]["name"]: "{kind}/{name}".format(**controller_ref(p)) for p in pods}

    # No controller made or deleted a pod: each runs as it ran, under its loaded owner.
    assert owned(pods) == owned(cluster.pods)
    assert all(controller_ref(p)["uid"] in owners for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)


def test_with_several_trials_the_tables_say_they_are_the_first_trial_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cluster.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "sim.pinnace.dev/v1alpha1",
                "kind": "Scenario",
                "metadata": {"name": "trials"},
                "spec": {
                    "cluster": {"nodePools": [pool("general", 3)]},
                    "objects": [deployment("web", 2, "1")],
                },
            }
        )
    )
    argv = ["plan", "failure", "--cluster", str(tmp_path / "cluster.yaml"), "--random", "1"]
    assert main([*argv, "--trials", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Nodes after (first trial)" in lines
    assert "Fragmentation of the free capacity, per workload shape (first trial)" in lines
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "Nodes after" in lines
    assert "Fragmentation of the free capacity, per workload shape" in lines
