"""The scenarios of examples/, each run at a reduced size (fewer nodes and replicas, a shorter
run, times scaled down) through `Simulation`, showing what its comments say it shows."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.clock import parse_time
from pinnace.sim import Simulation, load_scenario
from pinnace.sim.observe import Incident

EXAMPLES = Path(__file__).parents[2] / "examples"
PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
ZONE = "topology.kubernetes.io/zone"
GRACE = 50.0
"""v1.32's node-monitor-grace-period."""
TOLERATION = 300.0
"""The default tolerationSeconds for the unreachable taint."""
MONITOR_PERIOD = 5.0
"""How often the node lifecycle controller looks (--node-monitor-period)."""


def example(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return data


def objects(data: dict[str, Any]) -> dict[str, Object]:
    return {obj["metadata"]["name"]: obj for obj in data["spec"]["objects"]}


def pods(sim: Simulation, namespace: str = "default") -> list[Object]:
    return list(sim.run_coroutine(sim.client.list(PODS, namespace))["items"])


def app_pods(sim: Simulation, app: str) -> list[Object]:
    """The app's pods not being deleted."""
    return [
        p
        for p in pods(sim)
        if p["metadata"]["labels"].get("app") == app and "deletionTimestamp" not in p["metadata"]
    ]


def by_node(listed: list[Object]) -> Counter[str]:
    return Counter(p["spec"].get("nodeName", "") for p in listed)


def phases(listed: list[Object]) -> Counter[str]:
    return Counter(p["status"]["phase"] for p in listed)


def why_pending(pod: Object) -> str:
    """The scheduler's message on the pod's PodScheduled condition."""
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False"
    return str(scheduled["message"])


def incidents(sim: Simulation, kind: str) -> list[Incident]:
    return [i for i in sim.observer.incidents if i.kind == kind]


def zone_of(sim: Simulation) -> dict[str, str]:
    nodes = sim.run_coroutine(sim.client.list(NODES))["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in nodes}


@pytest.mark.parametrize(
    "name",
    ["node-failure.yaml", "zone-loss.yaml", "batch-day.yaml", "cron-day.yaml", "autoscaling.yaml"],
)
def test_every_example_is_a_valid_scenario(name: str) -> None:
    scenario = load_scenario(EXAMPLES / name)
    assert scenario.name == name.removesuffix(".yaml")
    assert scenario.until is not None


def test_node_failure() -> None:
    data = example("node-failure.yaml")
    data["spec"]["until"] = "20m"  # the drain and the uncordon are over by then
    with Simulation(data) as sim:
        sim.advance(299)
        lost = {p["metadata"]["name"] for p in pods(sim) if p["spec"]["nodeName"] == "general-2"}
        assert {name.split("-")[0] for name in lost} == {"web", "cache", "log"}
        sim.advance(14 * 60)
        [not_ready] = incidents(sim, "NodeNotReady")
        assert not_ready.subject == "general-2"
        assert 300 + GRACE - 10 < not_ready.time <= 300 + GRACE + MONITOR_PERIOD
        evicted = {
            i.subject.removeprefix("default/"): i.time
            for i in incidents(sim, "DeletionByTaintManager")
        }
        # Every pod of the lost node but the DaemonSet's, each when its toleration ran out.
        assert set(evicted) == {name for name in lost if not name.startswith("log-agent")}
        for name, at in evicted.items():
            toleration = 30 if name.startswith("cache") else TOLERATION
            assert (
                not_ready.time + toleration
                <= at
                <= not_ready.time + toleration + 2 * MONITOR_PERIOD
            )
        web = app_pods(sim, "web")
        assert phases(web) == {"Running": 6}
        assert "general-2" not in by_node(web)
        # One cache a node: the replacement has nowhere to go while general-2 is lost.
        cache = app_pods(sim, "cache")
        assert phases(cache) == {"Running": 2, "Pending": 1}
        pending = next(p for p in cache if p["status"]["phase"] == "Pending")
        assert "anti-affinity" in why_pending(pending)

        sim.advance(20 * 60)
        assert [i.time for i in incidents(sim, "NodeReady")] == [900.0]
        drained = incidents(sim, "EvictionByEvictionAPI")
        assert drained and all(900 < i.time < 20 * 60 for i in drained)
        drained_web = sorted(i.time for i in drained if "/web-" in i.subject)
        assert len(drained_web) >= 2  # the budget lets one go at a time, 5 s apart
        assert {b - a for a, b in itertools.pairwise(drained_web)} == {5.0}
        general_3 = sim.run_coroutine(sim.client.get(NODES, "", "general-3"))
        assert "unschedulable" not in general_3["spec"]  # uncordoned once settled
        assert phases(app_pods(sim, "web")) == {"Running": 6}
        cache = app_pods(sim, "cache")
        assert phases(cache) == {"Running": 3}
        assert by_node(cache) == {"general-1": 1, "general-2": 1, "general-3": 1}
        assert by_node(app_pods(sim, "log-agent")) == by_node(cache)


def test_zone_loss() -> None:
    data = example("zone-loss.yaml")
    spec = data["spec"]
    for pool in spec["cluster"]["nodePools"]:
        pool["count"] = 1
    deployments = objects(data)
    deployments["api"]["spec"]["replicas"] = 6
    deployments["ledger"]["spec"]["replicas"] = 3
    spec["until"] = "30m"
    spec["timeline"][0]["at"] = "2m"
    spec["timeline"][1]["at"] = "20m"
    with Simulation(data) as sim:
        zones = zone_of(sim)
        sim.advance(119)
        assert Counter(zones[n] for n in by_node(app_pods(sim, "ledger")).elements()) == {
            "zone-a": 1,
            "zone-b": 1,
            "zone-c": 1,
        }
        sim.advance(19 * 60)
        [not_ready] = incidents(sim, "NodeNotReady")
        assert not_ready.subject == "a-1"
        evicted = incidents(sim, "DeletionByTaintManager")
        assert len(evicted) == 2 + 1  # zone-a's api pods and its ledger pod
        # The other zones are healthy, so zone-a's nodes are tainted and their pods evicted.
        assert all(not_ready.time + TOLERATION <= i.time <= not_ready.time + 360 for i in evicted)
        # ScheduleAnyway: api moved over to the zones left.
        api = app_pods(sim, "api")
        assert phases(api) == {"Running": 6}
        assert Counter(zones[p["spec"]["nodeName"]] for p in api) == {"zone-b": 3, "zone-c": 3}
        # DoNotSchedule: a second ledger pod in zone-b or zone-c would make the skew 2 > 1.
        ledger = app_pods(sim, "ledger")
        assert phases(ledger) == {"Running": 2, "Pending": 1}
        pending = next(p for p in ledger if p["status"]["phase"] == "Pending")
        assert "didn't match pod topology spread constraints" in why_pending(pending)

        sim.advance(30 * 60)
        ledger = app_pods(sim, "ledger")
        assert phases(ledger) == {"Running": 3}
        assert {zones[p["spec"]["nodeName"]] for p in ledger} == {"zone-a", "zone-b", "zone-c"}
        assert "a-1" not in by_node(app_pods(sim, "api"))  # running pods are not moved back


def test_batch_day() -> None:
    # The day scaled down eight times (3 h), with a quarter of the nodes and of the arrivals:
    # the peak still asks for about twice what the base pool holds.
    data = example("batch-day.yaml")
    spec = data["spec"]
    spec["until"] = "3h"
    spec["cluster"]["nodePools"][0]["count"] = 2  # base; burst starts empty
    etl, adhoc, probe = spec["workloads"]
    etl["arrivals"] = {"poisson": {"ratePerMinute": 0.25}}
    adhoc["arrivals"] = {"poisson": {"ratePerMinute": 0.75}}
    adhoc["start"], adhoc["stop"] = "1h", "2h15m"
    probe["arrivals"] = {"every": "15m"}
    spec["timeline"] = [
        {"at": "1h30m", "addNodes": {"pool": "burst", "count": 2}},
        {"at": "2h15m", "cordon": {"node": "burst-1"}},
        {"at": "2h15m", "cordon": {"node": "burst-2"}},
        {"at": "2h45m", "removeNodes": {"pool": "burst", "count": 2}},
    ]
    with Simulation(data) as sim:
        sim.advance(3 * 3600)
        records = list(sim.observer.pods.values())
        by_job = Counter(r.name.split("-")[0] for r in records)
        assert by_job["etl"] > 20 and by_job["adhoc"] > 30
        assert by_job["probe"] == 13  # one every 15 minutes, the last at the very end
        arrived: dict[str, float] = {}  # each Job's first pod: when the Job arrived
        for r in records:
            job = r.name.rsplit("-", 1)[0]
            arrived[job] = min(arrived.get(job, r.created), r.created)
        adhoc_arrived = [t for job, t in arrived.items() if job.startswith("adhoc-")]
        assert min(adhoc_arrived) >= 3600 and max(adhoc_arrived) < 2.25 * 3600
        succeeded = Counter(r.name.split("-")[0] for r in records if r.phase == "Succeeded")
        assert succeeded["etl"] > 10 and succeeded["adhoc"] > 20 and succeeded["probe"] == 12

        added = [(i.time, i.subject) for i in incidents(sim, "NodeAdded")]
        removed = [(i.time, i.subject) for i in incidents(sim, "NodeDeleted")]
        assert added == [(5400.0, "burst-1"), (5400.0, "burst-2")]
        assert sorted(name for _, name in removed) == ["burst-1", "burst-2"]
        assert all(t == pytest.approx(2.75 * 3600, abs=5) for t, _ in removed)
        nodes = sim.run_coroutine(sim.client.list(NODES))["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["base-1", "base-2"]

        # The peak outgrew the base pool: adhoc pods waited until the burst pool came, and
        # then ran there; nothing new landed on a cordoned burst node.
        waiting = [s for s in sim.observer.samples if 3600 < s.time < 5400]
        assert max(s.pods["Unscheduled"] for s in waiting) > 0
        on_burst = [r for r in records if r.node.startswith("burst-")]
        assert on_burst and all(
            r.scheduled is not None and 5400 <= r.scheduled < 2.25 * 3600 for r in on_burst
        )
        assert any(r.created < 5400 for r in on_burst)
        assert not [
            s for s in sim.observer.samples if s.time > 2.5 * 3600 and s.pods["Unscheduled"]
        ]


def test_cron_day() -> None:
    data = example("cron-day.yaml")
    data["spec"]["until"] = "3h10m"
    jobs_kind, cron_jobs_kind = catalog.kind("batch", "jobs"), catalog.kind("batch", "cronjobs")
    with Simulation(data) as sim:
        sim.advance(3 * 3600 + 5 * 60)
        db = sorted(app_pods(sim, "db"), key=lambda p: p["metadata"]["creationTimestamp"])
        assert [p["metadata"]["name"] for p in db] == ["db-0", "db-1", "db-2"]
        assert phases(db) == {"Running": 3}
        # One at a time: each once the one before was Ready (15 s after it started).
        created = [parse_time(p["metadata"]["creationTimestamp"]) for p in db]
        assert created[1] - created[0] >= 15 and created[2] - created[1] >= 15

        jobs = sim.run_coroutine(sim.client.list(jobs_kind, "default"))["items"]
        names = sorted(j["metadata"]["name"] for j in jobs)
        minutes = int(parse_time("2025-01-01T00:00:00Z")) // 60
        assert [n for n in names if n.startswith("report-")] == [
            f"report-{minutes + 60 * h}" for h in (1, 2, 3)
        ]
        assert [n for n in names if n.startswith("backup-")] == [f"backup-{minutes + 60}"]
        [sweep] = [n for n in names if n.startswith("sweep-")]  # Replace: one at a time
        assert sweep == f"sweep-{minutes + 3 * 60}"
        status = {
            cj["metadata"]["name"]: cj["status"]
            for cj in sim.run_coroutine(sim.client.list(cron_jobs_kind, "default"))["items"]
        }
        assert status["backup"]["lastScheduleTime"] == "2025-01-01T01:00:00Z"  # 02:00 in Paris
        assert "lastSuccessfulTime" in status["backup"]
        assert [a["name"] for a in status["report"]["active"]] == [f"report-{minutes + 180}"]
