"""`pinnace bench simulate`: how fast the simulated mode runs a cluster through a day.

Two workloads on `nodes` nodes of 8 CPUs and 32Gi, over `hours` of simulated time, with
`pods` pod lifetimes, each pod asking 500m and 1Gi:

- `churn` (the default): bare pods arriving by a Poisson process, each running for a
  lognormal time (median an hour, so that about a twelfth of the cluster's CPU is asked for at
  any moment); every pod goes through the API server, the scheduler, its node's agent and the
  pod garbage collector, as in `pinnace up`.
- `day`: the day issue 16 sets its 5,000-node figure for, steady churn of Deployments and
  Jobs with a node failure and recovery. Half the lifetimes are the pods of ten Deployments,
  each restarted every hour as `kubectl rollout restart` does (a rolling update replaces every
  pod); the other half are Jobs of one pod arriving by a Poisson process, running a lognormal
  time as the churn's pods do, each deleted with its pod ten minutes after it finishes
  (`ttlSecondsAfterFinished`). Halfway through, a node fails (its agent stops: the node
  lifecycle controller marks it NotReady and taints it, and its pods are evicted after their
  300 s tolerations, the Deployments' replaced) and comes back half an hour later. The
  Deployment, ReplicaSet, Job, TTL-after-finished, garbage collector and node lifecycle
  controllers all work as in `pinnace up`.

`--scenario FILE` measures any scenario instead, for its own `until`.

Figures: simulated and wall seconds and their ratio (the speed-up), the pods created and their
rate over wall time, the CPU time of the run (user and system, of this process: what to compare
on a machine other work shares, where wall time is noise) and the pods per CPU second, and the
process's peak resident memory (RSS). The report of the run is built but not written
(`pinnace simulate` writes it); building it is timed with the rest.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any

from pinnace.bench import Figure, render_table
from pinnace.sim.scenario import Scenario, load_scenario, parse_scenario
from pinnace.sim.simulation import Simulation

NODE_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
POD_REQUESTS = {"cpu": "500m", "memory": "1Gi"}
MEDIAN_RUN = "1h"
WORKLOADS = ("churn", "day")
DEPLOYMENTS = 10
"""Of the `day` workload, each restarted every hour."""
FAILED_NODE = "pool-1"
FAILURE = 1800.0
"""Seconds the `day` workload's failed node stays down."""


def figures() -> tuple[Figure, ...]:
    return (
        Figure("nodes", "nodes at the start"),
        Figure("pods", "pods created"),
        Figure("simulated_seconds", "simulated time (s)"),
        Figure("wall_seconds", "wall time (s)"),
        Figure("speedup", "speed-up (simulated / wall)"),
        Figure("pods_per_second", "pods created per wall second"),
        Figure("cpu_seconds", "CPU time, user and system (s)"),
        Figure("pods_per_cpu_second", "pods created per CPU second"),
        Figure("rss_mib", "peak resident memory (MiB)"),
    )


def churn(nodes: int, pods: int, hours: float) -> Scenario:
    """The default workload: `pods` pods arriving over `hours` on `nodes` nodes."""
    return _scenario("churn", nodes, hours, [_arriving("churn", _pod(), pods, hours)])


def day(nodes: int, pods: int, hours: float) -> Scenario:
    """The `day` workload (see the module's docstring): about `pods` pod lifetimes over
    `hours`, half of them of the Deployments and half Jobs."""
    seconds = hours * 3600
    restarts = int(hours)
    replicas = max(1, round(pods / 2 / (DEPLOYMENTS * (restarts + 1))))
    jobs = max(1, pods - DEPLOYMENTS * replicas * (restarts + 1))
    names = [f"web-{i}" for i in range(DEPLOYMENTS)]
    restarted = "kubectl.kubernetes.io/restartedAt"  # as `kubectl rollout restart` sets it
    timeline: list[dict[str, Any]] = [
        {
            "at": f"{(hour + 0.5) * 3600:g}s",
            "patch": {
                "kind": "Deployment",
                "name": name,
                "type": "merge",
                "patch": {
                    "spec": {
                        "template": {"metadata": {"annotations": {restarted: f"hour-{hour + 1}"}}}
                    }
                },
            },
        }
        for hour in range(restarts)
        for name in names
    ]
    timeline += [
        {"at": f"{seconds / 2:g}s", "failNode": {"node": FAILED_NODE}},
        {"at": f"{seconds / 2 + FAILURE:g}s", "recoverNode": {"node": FAILED_NODE}},
    ]
    timeline.sort(key=lambda step: float(step["at"][:-1]))
    return _scenario(
        "day",
        nodes,
        hours,
        [_arriving("job", _job(), jobs, hours)],
        objects=[_deployment(name, replicas) for name in names],
        timeline=timeline,
    )


def _scenario(
    name: str, nodes: int, hours: float, workloads: list[dict[str, Any]], **spec: Any
) -> Scenario:
    """A scenario of `hours` on a pool of `nodes`, sampled every five minutes."""
    return parse_scenario(
        {
            "apiVersion": "sim.pinnace.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": name},
            "spec": {
                "until": f"{hours * 3600:g}s",
                "cluster": {
                    "nodePools": [{"name": "pool", "count": nodes, "capacity": NODE_CAPACITY}],
                    "controllerManager": {"terminatedPodGCThreshold": 1000},
                },
                **spec,
                "workloads": workloads,
                "metrics": {"interval": "5m"},
            },
        },
        source="bench",
    )


def _arriving(name: str, template: dict[str, Any], count: int, hours: float) -> dict[str, Any]:
    """A generator of `count` objects arriving by a Poisson process over `hours`, each running
    for a lognormal time (median an hour) and using a uniform draw of CPU."""
    return {
        "name": name,
        "template": template,
        "arrivals": {"poisson": {"ratePerSecond": count / (hours * 3600)}},
        "count": count,
        "runTime": {"lognormal": {"median": MEDIAN_RUN, "sigma": 0.5}},
        "usage": {"cpu": {"uniform": {"min": "100m", "max": "500m"}}},
    }


def run(scenario: Scenario) -> dict[str, Any]:
    nodes = len(scenario.cluster.nodes)
    began, cpu_began = time.perf_counter(), time.process_time()
    with Simulation(scenario) as sim:
        sim.advance()
        report = sim.finish()
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    simulated = report.summary["simulatedSeconds"]
    created = report.summary["pods"]["created"]
    return {
        "scenario": scenario.name,
        "nodes": nodes,
        "pods": created,
        "simulated_seconds": round(simulated, 1),
        "wall_seconds": round(wall, 2),
        "speedup": round(simulated / wall, 1) if wall > 0 else None,
        "pods_per_second": round(created / wall, 1) if wall > 0 else None,
        "cpu_seconds": round(cpu, 2),
        "pods_per_cpu_second": round(created / cpu, 1) if cpu > 0 else None,
        "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def load(path: str) -> Scenario:
    scenario = load_scenario(Path(path))
    if scenario.until is None:
        raise ValueError(f"{path}: the scenario has no spec.until")
    return scenario


def render(results: dict[str, Any], as_json: bool) -> str:
    if as_json:
        return json.dumps(results)
    return render_table(
        f"Pinnace simulation benchmark ({results['scenario']}, virtual clock, one process)",
        figures(),
        {"": results},
    )


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {"sim.pinnace.dev/cpu": "300m"}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": "nginx", "resources": {"requests": POD_REQUESTS}}
                    ]
                },
            },
        },
    }


def _job() -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {},
        "spec": {"ttlSecondsAfterFinished": 600, "template": {"spec": _pod()["spec"]}},
    }


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "work", "image": "busybox", "resources": {"requests": POD_REQUESTS}}
            ],
        },
    }
