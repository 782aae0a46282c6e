"""The timeline's actions, the workload generators and the Python API of a `Simulation`, each on
a small scenario on the virtual clock: what a user reads back through the simulation's client
and in its observer's records, at the simulated times docs/simulation.md promises."""

from __future__ import annotations

import asyncio
import gc
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.sim import Simulation, Step
from pinnace.sim.actions import ActionError
from pinnace.sim.arrivals import RUN_SECONDS
from pinnace.sim.scenario import Cordon, FailNode
from pinnace.sim.settle import QUIET_SECONDS
from pinnace.sim.summary import render_text

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
DEPLOYMENTS = catalog.kind("apps", "deployments")
CONFIG_MAPS = catalog.kind("", "configmaps")
ZONE = "topology.kubernetes.io/zone"
GRACE = 50.0
"""v1.32's node-monitor-grace-period."""
TOLERATION = 300.0
"""The default tolerationSeconds for the unreachable taint."""


def scenario(*, pools: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """A Scenario with `spec`, on two 4-CPU nodes general-1 and general-2 unless `pools` says."""
    nodes = pools or [{"name": "general", "count": 2, "capacity": {"cpu": "4", "memory": "8Gi"}}]
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "timeline"},
        "spec": {"seed": 1, "cluster": {"nodePools": nodes}, **spec},
    }


def deployment(name: str, replicas: int, cpu: str = "500m", **template: Any) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, **template},
                "spec": {"containers": [container(cpu)]},
            },
        },
    }


def container(cpu: str) -> Object:
    return {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}


def pdb(app: str, min_available: int) -> Object:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def pods(sim: Simulation, namespace: str = "default") -> list[Object]:
    listed = sim.run_coroutine(sim.client.list(PODS, namespace))
    return list(listed["items"])


def live(sim: Simulation, app: str) -> list[Object]:
    """The app's pods not being deleted."""
    return [
        p
        for p in pods(sim)
        if (p["metadata"].get("labels") or {}).get("app") == app
        and "deletionTimestamp" not in p["metadata"]
    ]


def node(sim: Simulation, name: str) -> Object:
    return sim.run_coroutine(sim.client.get(NODES, "", name))


def ready(sim: Simulation, name: str) -> str:
    conditions = node(sim, name)["status"]["conditions"]
    return next(c["status"] for c in conditions if c["type"] == "Ready")


def taints(sim: Simulation, name: str) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in node(sim, name)["spec"].get("taints") or ()}


def incidents(sim: Simulation, kind: str) -> list[tuple[float, str]]:
    return [(i.time, i.subject) for i in sim.observer.incidents if i.kind == kind]


@pytest.fixture
def simulations() -> Iterator[list[Simulation]]:
    """Simulations a test makes, closed after it."""
    made: list[Simulation] = []
    yield made
    for sim in made:
        sim.close()


def simulate(made: list[Simulation], data: dict[str, Any], seed: int | None = None) -> Simulation:
    sim = Simulation(data, seed=seed)
    made.append(sim)
    return sim


# --- the API's actions ---------------------------------------------------------------------------


def config_maps(sim: Simulation) -> list[str]:
    items = sim.run_coroutine(sim.client.list(CONFIG_MAPS, "default"))["items"]
    return [cm["metadata"]["name"] for cm in items]


def test_apply_scale_patch_and_delete_at_their_times(simulations: list[Simulation]) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    web = {"kind": "Deployment", "name": "web"}
    usage = {"spec": {"template": {"metadata": {"annotations": {"sim.pinnace.dev/cpu": "2"}}}}}
    sim = simulate(
        simulations,
        scenario(
            objects=[deployment("web", 2)],
            timeline=[
                {"at": 10, "apply": config},
                {"at": 20, "scale": {**web, "replicas": 4}},
                {"at": 30, "patch": {**web, "type": "merge", "patch": usage}},
                {"at": "1m", "delete": [web, {"kind": "ConfigMap", "name": "settings"}]},
            ],
        ),
    )
    sim.advance(9)
    assert len(live(sim, "web")) == 2
    assert config_maps(sim) == ["kube-root-ca.crt"]
    sim.advance(11)
    assert sim.run_coroutine(sim.client.get(CONFIG_MAPS, "default", "settings"))
    sim.advance(21)
    assert len(live(sim, "web")) == 4
    sim.advance(59)
    # The patch rolled the Deployment out: every pod now carries the new usage.
    annotations = [p["metadata"].get("annotations") or {} for p in live(sim, "web")]
    assert len(annotations) == 4
    assert all(a.get("sim.pinnace.dev/cpu") == "2" for a in annotations)
    sim.advance(120)
    assert not sim.run_coroutine(sim.client.list(DEPLOYMENTS, "default"))["items"]
    assert config_maps(sim) == ["kube-root-ca.crt"]
    assert not pods(sim)


def test_objects_are_applied_server_side_by_the_simulation(simulations: list[Simulation]) -> None:
    sim = simulate(simulations, scenario(objects=[deployment("web", 1)]))
    got = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
    managers = {(e["manager"], e["operation"]) for e in got["metadata"]["managedFields"]}
    assert ("pinnace-simulate", "Apply") in managers


def test_cordon_and_uncordon(simulations: list[Simulation]) -> None:
    sim = simulate(
        simulations,
        scenario(
            timeline=[
                {"at": 10, "cordon": {"node": "general-1"}},
                {"at": 20, "uncordon": {"node": "general-1"}},
            ]
        ),
    )
    sim.advance(15)
    assert node(sim, "general-1")["spec"]["unschedulable"] is True
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") in taints(sim, "general-1")
    sim.advance(25)
    assert "unschedulable" not in node(sim, "general-1")["spec"]
    assert ("node.kubernetes.io/unschedulable", "NoSchedule") not in taints(sim, "general-1")


def test_drain_evicts_as_the_budget_allows_trying_again_every_five_seconds(
    simulations: list[Simulation],
) -> None:
    # Four replicas, at most one of them unavailable: each eviction waits until the pod the
    # one before it made way for is running on the other node.
    sim = simulate(
        simulations,
        scenario(
            objects=[deployment("web", 4), pdb("web", 3)],
            timeline=[{"at": 60, "drain": {"node": "general-1"}}],
        ),
    )
    sim.advance(59)
    drained = {
        p["metadata"]["name"] for p in live(sim, "web") if p["spec"]["nodeName"] == "general-1"
    }
    assert len(drained) >= 2
    sim.advance(120)
    evictions = incidents(sim, "EvictionByEvictionAPI")
    assert {f"default/{name}" for name in drained} == {subject for _, subject in evictions}
    times = [t for t, _ in evictions]
    assert times[0] == pytest.approx(60, abs=1)
    assert [b - a for a, b in itertools.pairwise(times)] == [5.0] * (len(times) - 1)
    assert node(sim, "general-1")["spec"]["unschedulable"] is True
    running = live(sim, "web")
    assert len(running) == 4
    assert {p["spec"]["nodeName"] for p in running} == {"general-2"}
    assert {p["status"]["phase"] for p in running} == {"Running"}


def test_a_drain_whose_eviction_fails_stops_the_run_naming_the_step(
    simulations: list[Simulation],
) -> None:
    # Two budgets over one pod: the eviction API answers 500, which kubectl drain gives up on.
    second = pdb("web", 0)
    second["metadata"]["name"] = "web-2"
    sim = simulate(
        simulations,
        scenario(
            objects=[deployment("web", 2), pdb("web", 0), second],
            timeline=[{"at": 60, "drain": {"node": "general-1"}}],
        ),
    )
    with pytest.raises(ActionError) as failed:
        sim.advance(120)
    assert str(failed.value).startswith('spec.timeline[0].drain: error when evicting pods/"web-')
    assert str(failed.value).endswith(
        "This pod has more than one PodDisruptionBudget, which the "
        "eviction subresource does not support."
    )


# --- the machines' faults ------------------------------------------------------------------------


def test_a_failed_node_goes_unknown_is_tainted_its_pods_evicted_and_it_recovers(
    simulations: list[Simulation],
) -> None:
    pools = [{"name": "general", "count": 3, "capacity": {"cpu": "4", "memory": "8Gi"}}]
    sim = simulate(
        simulations,
        scenario(
            pools=pools,
            objects=[deployment("web", 6)],
            timeline=[
                {"at": "1m", "failNode": {"node": "general-2"}},
                {"at": "10m", "recoverNode": {"node": "general-2"}},
            ],
        ),
    )
    sim.advance(59)
    lost = {p["metadata"]["name"] for p in live(sim, "web") if p["spec"]["nodeName"] == "general-2"}
    assert lost
    sim.advance(60 + GRACE - 10)
    assert ready(sim, "general-2") == "True"
    sim.advance(60 + GRACE + 10)
    assert ready(sim, "general-2") == "Unknown"
    assert ("node.kubernetes.io/unreachable", "NoExecute") in taints(sim, "general-2")
    [(not_ready, _)] = incidents(sim, "NodeNotReady")
    assert 60 + GRACE - 10 < not_ready <= 60 + GRACE + 5
    sim.advance(9 * 60)
    evicted = incidents(sim, "DeletionByTaintManager")
    assert {subject for _, subject in evicted} == {f"default/{name}" for name in lost}
    assert all(not_ready + TOLERATION <= t <= not_ready + TOLERATION + 10 for t, _ in evicted)
    replaced = live(sim, "web")
    assert len(replaced) == 6
    assert "general-2" not in {p["spec"]["nodeName"] for p in replaced}
    # The evicted pods wait, Terminating, for their node: no agent there finishes them.
    assert {p["metadata"]["name"] for p in pods(sim)} >= lost
    sim.advance(11 * 60)
    assert ready(sim, "general-2") == "True"
    assert not taints(sim, "general-2")
    assert [t for t, _ in incidents(sim, "NodeReady")] == [600.0]
    assert not {p["metadata"]["name"] for p in pods(sim)} & lost


def test_a_zone_fails_and_recovers(simulations: list[Simulation]) -> None:
    pools = [{"name": zone, "count": 2, "labels": {ZONE: f"zone-{zone}"}} for zone in ("a", "b")]
    sim = simulate(
        simulations,
        scenario(
            pools=pools,
            timeline=[
                {"at": 10, "failZone": {"zone": "zone-a"}},
                {"at": "5m", "recoverZone": {"zone": "zone-a"}},
            ],
        ),
    )
    sim.advance(10 + GRACE + 10)
    assert [ready(sim, n) for n in ("a-1", "a-2", "b-1", "b-2")] == [
        "Unknown",
        "Unknown",
        "True",
        "True",
    ]
    sim.advance(5 * 60 + 10)
    assert [ready(sim, n) for n in ("a-1", "a-2")] == ["True", "True"]


def test_pools_gain_and_lose_nodes_never_reusing_a_number(simulations: list[Simulation]) -> None:
    sim = simulate(
        simulations,
        scenario(
            timeline=[
                {"at": 10, "addNodes": {"pool": "general", "count": 2}},
                {"at": 20, "removeNodes": {"pool": "general"}},
                {"at": 30, "addNodes": {"pool": "general"}},
            ]
        ),
    )

    def names() -> list[str]:
        listed = sim.run_coroutine(sim.client.list(NODES))["items"]
        return sorted(n["metadata"]["name"] for n in listed)

    sim.advance(15)
    assert names() == ["general-1", "general-2", "general-3", "general-4"]
    assert ready(sim, "general-4") == "True"
    assert node(sim, "general-4")["status"]["capacity"]["cpu"] == "4"
    sim.advance(25)
    assert names() == ["general-1", "general-2", "general-3"]
    sim.advance(35)
    assert names() == ["general-1", "general-2", "general-3", "general-5"]


# --- after: settled ------------------------------------------------------------------------------


def test_a_step_after_settled_waits_for_the_step_before_then_for_quiet(
    simulations: list[Simulation],
) -> None:
    sim = simulate(
        simulations,
        scenario(
            objects=[deployment("web", 2)],
            timeline=[
                {"at": "2m", "scale": {"kind": "Deployment", "name": "web", "replicas": 4}},
                {"after": "settled", "cordon": {"node": "general-1"}},
            ],
        ),
    )
    sim.advance(120 + QUIET_SECONDS - 1)
    assert "unschedulable" not in node(sim, "general-1")["spec"]
    assert len(live(sim, "web")) == 4
    sim.advance(120 + QUIET_SECONDS + 5)
    assert node(sim, "general-1")["spec"]["unschedulable"] is True


# --- workload generators -------------------------------------------------------------------------


def bare_pod(**spec: Any) -> Object:
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [container("100m")], **spec}}


def arrival_times(sim: Simulation, prefix: str) -> list[tuple[str, float]]:
    return [(r.name, r.created) for r in sim.observer.pods.values() if r.name.startswith(prefix)]


def test_poisson_arrivals_come_from_the_seed(simulations: list[Simulation]) -> None:
    generator = {
        "name": "web",
        "template": bare_pod(),
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "start": 30,
        "count": 20,
    }
    runs = [simulate(simulations, scenario(workloads=[generator]), seed=seed) for seed in (1, 1, 2)]
    for sim in runs:
        sim.advance(1800)
    first, again, other = (arrival_times(sim, "web-") for sim in runs)
    assert [name for name, _ in first] == [f"web-{n}" for n in range(1, 21)]
    times = [t for _, t in first]
    assert times[0] > 30 and times == sorted(times) and len(set(times)) == 20
    assert 100 < times[-1] - 30 < 400  # twenty gaps of 10 s on average
    assert again == first
    assert [t for _, t in other] != times


def test_fixed_rate_arrivals_between_start_and_stop(simulations: list[Simulation]) -> None:
    generator = {
        "name": "probe",
        "template": bare_pod(restartPolicy="Never"),
        "arrivals": {"every": "30s"},
        "start": "1m",
        "stop": "3m",
        "runTime": {"uniform": {"min": "5s", "max": "10s"}},
        "usage": {"cpu": {"uniform": {"min": "10m", "max": "50m"}}, "memory": "64Mi"},
    }
    sim = simulate(simulations, scenario(workloads=[generator]))
    sim.advance(600)
    records = sorted(sim.observer.pods.values(), key=lambda r: r.created)
    assert [(r.name, r.created) for r in records] == [
        (f"probe-{n}", 60.0 + 30 * (n - 1)) for n in range(1, 5)
    ]
    for record in records:
        assert record.phase == "Succeeded"
        assert record.running is not None and record.finished is not None
        pod = sim.run_coroutine(sim.client.get(PODS, "default", record.name))
        annotations = pod["metadata"]["annotations"]
        run_seconds = float(annotations[RUN_SECONDS])
        assert 5 <= run_seconds <= 10
        assert record.finished - record.running == pytest.approx(run_seconds, abs=1)
        assert 10 <= int(annotations["sim.pinnace.dev/cpu"].removesuffix("m")) <= 50
        assert annotations["sim.pinnace.dev/memory"] == str(64 * 1024 * 1024)


def test_job_arrivals_carry_their_draws_in_the_pod_template(simulations: list[Simulation]) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container("1")]}}},
    }
    generator = {
        "name": "etl",
        "template": job,
        "arrivals": {"every": "1m"},
        "count": 3,
        "runTime": {"empirical": ["30s", "1m"]},
    }
    sim = simulate(simulations, scenario(workloads=[generator]))
    sim.advance(600)
    jobs = sim.run_coroutine(sim.client.list(catalog.kind("batch", "jobs"), "default"))["items"]
    assert [j["metadata"]["name"] for j in jobs] == ["etl-1", "etl-2", "etl-3"]
    for j in jobs:
        drawn = j["spec"]["template"]["metadata"]["annotations"][RUN_SECONDS]
        assert drawn in ("30", "60")
        assert j["status"]["succeeded"] == 1


def test_a_refused_create_is_counted_and_the_arrivals_go_on(
    simulations: list[Simulation],
) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "pods"},
        "spec": {"hard": {"pods": "2"}},
    }
    generator = {"name": "web", "template": bare_pod(), "arrivals": {"every": "10s"}, "count": 5}
    sim = simulate(simulations, scenario(objects=[quota], workloads=[generator]))
    sim.advance(120)
    assert sorted(p["metadata"]["name"] for p in pods(sim)) == ["web-1", "web-2"]
    assert sim.refused == {"web": 3}
    summary = sim.report().summary
    assert summary["refusedArrivals"] == {"total": 3, "byWorkload": {"web": 3}}
    assert "Arrivals the API server refused: 3 (web: 3)" in render_text(summary)


def test_only_pods_no_node_fits_count_as_unschedulable(simulations: list[Simulation]) -> None:
    """With no node yet, kube-scheduler fails a pod on an error (SchedulerError, "no nodes
    available to schedule pods"), which the report's FailedScheduling reasons count but its
    `unschedulable` pods do not; a pod too big for the node that comes is Unschedulable."""
    early = {**bare_pod(), "metadata": {"name": "early"}}
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"}}
    big["spec"] = {"containers": [container("8")]}
    pool = {"name": "general", "count": 0, "capacity": {"cpu": "4", "memory": "8Gi"}}
    timeline = [{"at": 30, "addNodes": {"pool": "general"}}, {"at": 40, "apply": big}]
    sim = simulate(simulations, scenario(pools=[pool], objects=[early], timeline=timeline))
    sim.advance(60)
    summary = sim.report().summary
    assert summary["failedScheduling"]["reasons"]["no nodes available to schedule pods"] > 0
    assert (summary["pods"]["scheduled"], summary["pods"]["unschedulable"]) == (1, 1)
    assert "1 unschedulable at some point" in render_text(summary)
    records = {r.name: r.unschedulable for r in sim.observer.pods.values()}
    assert records == {"early": False, "big": True}


# --- the Python API ------------------------------------------------------------------------------


def test_step_inject_and_run_coroutine(simulations: list[Simulation]) -> None:
    sim = simulate(simulations, scenario())
    assert sim.elapsed == 0
    sim.inject(Step(at=7.5, after=None, action=Cordon("general-1")))
    times = [0.0]
    while times[-1] < 7.5:
        times.append(sim.step())
    assert times == sorted(times) and len(set(times)) == len(times)
    assert 7.5 in times
    assert node(sim, "general-1")["spec"]["unschedulable"] is True
    # A coroutine runs the cluster along with it: a sleep moves the simulated time on.
    before = sim.elapsed
    sim.run_coroutine(asyncio.sleep(60))
    assert sim.elapsed == before + 60
    sim.inject(Step(at=None, after="settled", action=FailNode("general-2")))
    sim.advance(before + 60 + QUIET_SECONDS + GRACE + 10)
    assert ready(sim, "general-2") == "Unknown"


def test_a_finished_simulation_says_so_when_asked_to_go_on(simulations: list[Simulation]) -> None:
    sim = simulate(simulations, scenario())
    sim.advance(10)
    assert sim.finish().summary["simulatedSeconds"] == 10
    finished = "the simulation is finished"
    with pytest.raises(RuntimeError, match=finished):
        sim.advance(20)
    with pytest.raises(RuntimeError, match=finished):
        sim.step()
    with pytest.raises(RuntimeError, match=finished):
        sim.inject(Step(at=30, after=None, action=Cordon("general-1")))
    with pytest.raises(RuntimeError, match=finished):
        sim.run_coroutine(sim.client.list(catalog.kind("", "pods"), "default"))
    assert sim.report().summary["simulatedSeconds"] == 10


def test_a_step_that_fails_stops_the_run_naming_the_step(simulations: list[Simulation]) -> None:
    sim = simulate(
        simulations,
        scenario(
            timeline=[
                {"at": 10, "cordon": {"node": "general-1"}},
                {"at": 20, "scale": {"kind": "Deployment", "name": "nope", "replicas": 3}},
            ]
        ),
    )
    with pytest.raises(ActionError) as failed:
        sim.advance(60)
    assert str(failed.value) == 'spec.timeline[1].scale: deployments.apps "nope" not found'


def test_only_a_node_of_the_cluster_can_fail(simulations: list[Simulation]) -> None:
    sim = simulate(simulations, scenario())
    with pytest.raises(ActionError, match=r'^node "nope-1" is not a node of this cluster$'):
        sim.run_coroutine(sim.actions.take(FailNode("nope-1")))
    sim.run_coroutine(sim.actions.take(FailNode("general-2")))
    assert sim.plane.nodes.failed == {"general-2"}


def test_an_object_the_api_server_refuses_fails_the_start_and_leaves_nothing_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = deployment("web", 1)
    bad["spec"]["replicas"] = -1
    with pytest.raises(ActionError) as failed:
        Simulation(scenario(objects=[bad]))
    assert str(failed.value) == (
        'spec.objects[0]: Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    assert failed.value.field == "spec.objects[0]"
    del failed  # its traceback holds the simulation
    gc.collect()  # a task left pending would say "Task was destroyed but it is pending!"
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
