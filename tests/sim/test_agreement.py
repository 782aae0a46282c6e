"""The simulated mode makes the decisions the live mode makes: one small story, run as a
scenario through `Simulation` on the virtual clock and with kubectl against `pinnace up` on the
real clock, gives the same bindings, the same eviction and the same final state.

Three nodes of different sizes make every scheduling decision decisive (the test checks that
by running the scenario under several seeds: the seed changes tie-breaks only, so bindings that
do not change with it came from scores alone). The story: a bare pod and a PodDisruptionBudget;
once the pod is bound, a Deployment of five; then the small node is drained (kubectl drain
--ignore-daemonsets --delete-emptydir-data --force; the scenario's drain step does the same).
Pods whose names are deterministic (the bare pod) are compared by name, the ReplicaSet's by the
multiset of their nodes."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from tests.http.conftest import Cluster, launch, stop

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.sim import Simulation

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
SEEDS = (1, 2, 3)
POOLS = [
    {"name": "big", "count": 1, "capacity": {"cpu": "8", "memory": "32Gi"}},
    {"name": "medium", "count": 1, "capacity": {"cpu": "4", "memory": "16Gi"}},
    {"name": "small", "count": 1, "capacity": {"cpu": "2", "memory": "8Gi"}},
]
DRAINED = "small-1"
DEPLOY_AT, DRAIN_AT, END_AT = 10.0, 60.0, 300.0
"""When the scenario applies the Deployment, drains the node, and is read at the end."""
PDB_STATUS = ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")


def container(cpu: str, memory: str) -> Object:
    requests = {"cpu": cpu, "memory": memory}
    return {"name": "app", "image": "nginx:1.27", "resources": {"requests": requests}}


SOLO: Object = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "solo"},
    "spec": {"containers": [container("1", "2Gi")]},
}
BUDGET: Object = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web"},
    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
}
WEB: Object = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 5,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [container("500m", "1Gi")]},
        },
    },
}


def scenario(seed: int) -> dict[str, Any]:
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "agreement"},
        "spec": {
            "seed": seed,
            "cluster": {"nodePools": POOLS},
            "objects": [SOLO, BUDGET],
            "timeline": [
                {"at": DEPLOY_AT, "apply": WEB},
                {"at": DRAIN_AT, "drain": {"node": DRAINED}},
            ],
        },
    }


def state(pods: list[Object], pdb: Object, nodes: list[Object]) -> dict[str, Any]:
    """What the two modes must agree on."""
    web = [p for p in pods if (p["metadata"].get("labels") or {}).get("app") == "web"]
    return {
        "solo": next(p["spec"].get("nodeName") for p in pods if p["metadata"]["name"] == "solo"),
        "web": sorted(Counter(p["spec"].get("nodeName") for p in web).items()),
        "phases": sorted(Counter(p["status"]["phase"] for p in pods).items()),
        "budget": {key: pdb["status"].get(key) for key in PDB_STATUS},
        "cordoned": sorted(n["metadata"]["name"] for n in nodes if n["spec"].get("unschedulable")),
    }


def simulated(seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The state before the drain and at the end, simulated."""
    with Simulation(scenario(seed)) as sim:

        def read() -> dict[str, Any]:
            pods = sim.run_coroutine(sim.client.list(PODS, "default"))["items"]
            pdb = sim.run_coroutine(sim.client.get(PDBS, "default", "web"))
            nodes = sim.run_coroutine(sim.client.list(NODES))["items"]
            return state(pods, pdb, nodes)

        sim.advance(DRAIN_AT - 1)
        before = read()
        sim.advance(END_AT)
        return before, read()


@pytest.fixture(scope="module")
def expected() -> tuple[dict[str, Any], dict[str, Any]]:
    runs = [simulated(seed) for seed in SEEDS]
    assert all(run == runs[0] for run in runs), "a tie-break decided: the test needs other sizes"
    return runs[0]


def test_the_simulation_is_the_story_told(expected: tuple[dict[str, Any], dict[str, Any]]) -> None:
    before, after = expected
    assert before["solo"] == after["solo"] == "big-1"
    assert dict(before["web"])[DRAINED] >= 1
    assert DRAINED not in dict(after["web"])
    assert sum(dict(after["web"]).values()) == 5
    assert after["phases"] == [("Running", 6)]
    assert after["cordoned"] == [DRAINED]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("agreement")
    config = workdir / "cluster.yaml"
    config.write_text(
        yaml.safe_dump(
            {"apiVersion": "pinnace.dev/v1alpha1", "kind": "Cluster", "nodePools": POOLS}
        )
    )
    running = launch(workdir, flags=("--config", str(config)))  # a seed of its own
    yield running
    stop(running)


def read_live(cluster: Cluster) -> dict[str, Any]:
    pods = json.loads(cluster.ok("get", "pods", "-o", "json"))["items"]
    pdb = json.loads(cluster.ok("get", "pdb", "web", "-o", "json"))
    nodes = json.loads(cluster.ok("get", "nodes", "-o", "json"))["items"]
    return state(pods, pdb, nodes)


def apply(cluster: Cluster, *objects: Object) -> None:
    cluster.ok("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


def test_live_makes_the_same_decisions(
    live: Cluster, expected: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    before, after = expected
    apply(live, SOLO, BUDGET)
    live.ok("wait", "--for=condition=PodScheduled", "pod/solo", "--timeout=30s")
    apply(live, WEB)
    live.ok("rollout", "status", "deployment/web", "--timeout=30s")
    live.ok("wait", "--for=jsonpath={.status.currentHealthy}=5", "pdb/web", "--timeout=30s")
    assert read_live(live) == before

    drained = live.ok(
        "drain",
        DRAINED,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        "--timeout=60s",
    )
    assert drained.splitlines()[-1] == f"node/{DRAINED} drained"
    live.ok("rollout", "status", "deployment/web", "--timeout=30s")
    live.ok("wait", "--for=jsonpath={.status.currentHealthy}=5", "pdb/web", "--timeout=30s")
    assert read_live(live) == after
