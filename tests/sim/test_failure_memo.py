"""A cluster short of room sends its pending pods back to the queue each time a pod ends, and
each fails again as it did. The scheduler remembers such failures while nothing they read has
changed; what it decides, says and counts is what running every cycle in full gives."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from pinnace.api import catalog
from pinnace.clock import VirtualClock
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.scheduler import schedule_one
from pinnace.scheduler.adapter import SchedulerService
from pinnace.scheduler.config import parse
from pinnace.scheduler.plugins.default_preemption import DefaultPreemption
from pinnace.scheduler.schedule_one import all_plugins
from pinnace.sim import Simulation
from pinnace.sim.simulation import simulated_store

PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
NAMESPACES = catalog.kind("", "namespaces")


def workload(name: str, cpu: str, rate: float, count: int, **template: Any) -> dict[str, Any]:
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}
    return {
        "name": name,
        "template": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [container], **template},
        },
        "arrivals": {"poisson": {"ratePerSecond": rate}},
        "count": count,
        "runTime": {"uniform": {"min": "1m", "max": "3m"}},
    }


def overloaded() -> dict[str, Any]:
    """Two 2-CPU nodes; 1-CPU pods arriving four times faster than they end, and now and
    then a pod of a higher priority, which preempts."""
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "overloaded"},
        "spec": {
            "seed": 5,
            "until": "30m",
            "cluster": {
                "nodePools": [
                    {"name": "small", "count": 2, "capacity": {"cpu": "2", "memory": "8Gi"}}
                ]
            },
            "objects": [
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": "urgent"},
                    "value": 1000,
                }
            ],
            "workloads": [
                workload("batch", "1", 0.14, 200),
                workload("urgent", "1", 0.005, 6, priorityClassName="urgent"),
            ],
        },
    }


@pytest.fixture
def fails_again(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many cycles the memo stood in for."""
    counted = [0]
    fail_again = schedule_one.Scheduler._fail_again

    def counting(self: schedule_one.Scheduler, *args: Any) -> schedule_one.ScheduleResult:
        counted[0] += 1
        return fail_again(self, *args)

    monkeypatch.setattr(schedule_one.Scheduler, "_fail_again", counting)
    yield counted


def run(scenario: dict[str, Any]) -> tuple[bytes, bytes, object]:
    """The event log, the scheduler's metrics and its preemption's random stream at the end."""
    out = io.BytesIO()
    with Simulation(scenario, event_log=out) as sim:
        sim.advance()
        metrics = generate_latest(sim.plane.registries["/metrics/scheduler"])
        assert sim.plane.scheduler is not None
        [preemption] = [
            p for p in all_plugins(sim.plane.scheduler.core) if isinstance(p, DefaultPreemption)
        ]
    return out.getvalue(), metrics, preemption.random.getstate()


def test_an_overloaded_cluster_decides_says_and_counts_as_if_every_cycle_ran(
    monkeypatch: pytest.MonkeyPatch, fails_again: list[int]
) -> None:
    log, metrics, draws = run(overloaded())
    remembered = fails_again[0]
    monkeypatch.setattr(SchedulerService, "_remember_failures", lambda self: None)
    log_in_full, metrics_in_full, draws_in_full = run(overloaded())

    assert fails_again[0] == remembered  # none more with the memo off
    assert remembered > 500
    assert log == log_in_full
    assert metrics == metrics_in_full
    assert draws == draws_in_full
    victims = next(
        line
        for line in metrics.decode().splitlines()
        if line.startswith("scheduler_preemption_victims_count")
    )
    assert float(victims.split()[-1]) > 0


def test_a_change_only_a_lister_sees_ends_what_was_remembered() -> None:
    """Two pods need a pod of a namespace labelled team=web: there is one, in a namespace not
    labelled yet, so they fail, the second as the first did. Labelling the namespace moves no
    pod (InterPodAffinity does not register namespace events); the unschedulable pods' flush
    tries them again five minutes later, and they fit."""

    def pending(name: str) -> dict[str, Any]:
        term = {
            "labelSelector": {"matchLabels": {"app": "db"}},
            "namespaceSelector": {"matchLabels": {"team": "web"}},
            "topologyKey": "kubernetes.io/hostname",
        }
        return {
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "app", "image": "app:1"}],
                "affinity": {
                    "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
                },
            },
        }

    async def scenario(clock: VirtualClock) -> list[str]:
        options = ClusterOptions(
            controllers=False, kube_state_metrics=False, dashboard=False, seed=1
        )
        plane = ControlPlane(simulated_store(), clock, options)
        await plane.start()
        try:
            client = plane.client()
            node = {
                "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
                "status": {
                    "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                    "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                },
            }
            await client.create(NODES, "", node)
            await client.create(NAMESPACES, "", {"metadata": {"name": "data"}})
            db = {
                "metadata": {"name": "db", "labels": {"app": "db"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "db", "image": "db:1"}]},
            }
            await client.create(PODS, "data", db)
            for name in ("web-1", "web-2"):
                await client.create(PODS, "default", pending(name))
            await asyncio.sleep(10)
            assert plane.scheduler is not None
            attempts = plane.scheduler.core.metrics.attempts
            assert sum(attempts.values()) >= 2
            labelled = {"metadata": {"name": "data", "labels": {"team": "web"}}}
            current = await client.get(NAMESPACES, "", "data")
            labelled["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.update(NAMESPACES, labelled)
            await asyncio.sleep(400)
            listed = await client.list(PODS, "default")
            return sorted(p["spec"].get("nodeName", "") for p in listed["items"])
        finally:
            await plane.stop()

    with VirtualClock() as clock:
        assert clock.run(scenario(clock)) == ["n1", "n1"]


USERS_FILTER = '''
from pinnace.scheduler import NodePlugin, Status


class Anything(NodePlugin):
    """A user's Filter, which may read what no informer tells the scheduler of."""

    name = "Anything"

    def filter_node(self, state, pod, node):
        return Status()
'''


def test_failures_are_not_remembered_when_a_users_plugin_may_decide_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "users_plugins.py").write_text(USERS_FILTER)
    monkeypatch.syspath_prepend(str(tmp_path))
    own = parse(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    filter:\n      enabled:\n"
        "      - name: users_plugins:Anything\n"
    )
    remembers = {}
    for name, config in (("in-tree", None), ("own", own)):
        with VirtualClock() as clock:
            options = ClusterOptions(
                controllers=False,
                kube_state_metrics=False,
                dashboard=False,
                scheduler_config=config,
            )
            plane = ControlPlane(simulated_store(), clock, options)
            assert plane.scheduler is not None
            remembers[name] = plane.scheduler.core.failures is not None
    assert remembers == {"in-tree": True, "own": False}
