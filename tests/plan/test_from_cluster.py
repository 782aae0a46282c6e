"""`pinnace plan … --from-cluster`: a snapshot of `pinnace up` through the API, as of any
cluster, then the plan, as a user runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.plan.manifests import deployment

from pinnace.cli.main import main
from pinnace.plan import from_cluster

WEB = deployment("web", 4, "1500m")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-plan"), flags=("--nodes", "3"))
    running.ok("apply", "-f", "-", stdin=json.dumps(WEB))
    running.ok("rollout", "status", "deployment/web", "--timeout=60s")
    yield running
    stop(running)


def test_the_snapshot_holds_what_the_api_serves(cluster: Cluster) -> None:
    snapshot = from_cluster(cluster.kubeconfig)
    assert snapshot.source == cluster.url
    assert sorted(n["metadata"]["name"] for n in snapshot.nodes) == [
        "pinnace-node-1",
        "pinnace-node-2",
        "pinnace-node-3",
    ]
    web = [p for p in snapshot.bound_pods() if p["metadata"]["name"].startswith("web-")]
    assert len(web) == 4
    assert [d["metadata"]["name"] for d in snapshot.of("deployments")] == ["web"]
    assert len(snapshot.of("replicasets")) == 1
    assert snapshot.of("statefulsets") == []  # none: empty, not an error


def test_fit_and_headroom_from_the_cluster(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    more = tmp_path / "more.json"
    more.write_text(json.dumps(deployment("more", 3, "1500m")))
    source = ["--from-cluster", "--kubeconfig", str(cluster.kubeconfig), "--json"]
    assert main(["plan", "fit", str(more), *source]) == 3  # does not fit
    plan = json.loads(capsys.readouterr().out)
    # 4 pods of 1.5 CPUs on 3 nodes of 4 sit 2, 1, 1: one slot is left on two nodes
    assert plan["pods"] == {"new": 3, "placed": 2, "unschedulable": 1, "preempted": 0}
    (failed,) = plan["unschedulable"]
    assert failed["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert main(["plan", "headroom", *source]) == 0
    (shape,) = json.loads(capsys.readouterr().out)["shapes"]
    assert (shape["shape"], shape["copies"]) == ("Deployment default/web", 2)


def test_nodes_without_a_pool_label_count_in_the_cluster_only(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pinnace up --nodes 3` labels no pool: no pool column or scope named "" or "-"."""
    source = ["--from-cluster", "--kubeconfig", str(cluster.kubeconfig)]
    assert main(["plan", "headroom", "--shape", "cpu=1", *source, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [(s["copies"], s["byPool"]) for s in plan["shapes"]] == [(5, {})]
    assert [s["scope"] for s in plan["fragmentation"]["scopes"]] == ["cluster"]
    assert main(["plan", "headroom", "--shape", "cpu=1", *source]) == 0
    text = capsys.readouterr().out
    assert "POOL" not in text.split("Nodes\n")[0]
    assert "pool:" not in text
