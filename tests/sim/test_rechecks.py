"""A Deployment that completed its rollout and then lost a pod it cannot place is re-checked
through the rate limiter for as long as it lacks the pod (v1.32 never times such a rollout
out). The simulated mode does not run again a re-check that would decide the same as the one
before; what it decides, and when, is what running every one of them decides: the same event
log, byte for byte, and the Deployment back to complete the moment its pod runs again."""

from __future__ import annotations

import io
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.clock import parse_time
from pinnace.controllers.deployment import DeploymentController
from pinnace.sim import Simulation

DEPLOYMENTS = catalog.kind("apps", "deployments")
PODS = catalog.kind("", "pods")
DEADLINE = 60
UNCORDON_AT = 1200.0


def scenario() -> dict[str, Any]:
    """Two 4-CPU nodes, a Deployment of two 3-CPU pods (one a node); at 2m general-2 is
    drained, so its pod's replacement fits nowhere until general-2 is uncordoned at 20m."""
    labels = {"app": "web"}
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "3"}}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "progressDeadlineSeconds": DEADLINE,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [container],
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "labelSelector": {"matchLabels": labels},
                                    "topologyKey": "kubernetes.io/hostname",
                                }
                            ]
                        }
                    },
                },
            },
        },
    }
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "rechecks"},
        "spec": {
            "seed": 3,
            "until": "25m",
            "cluster": {
                "nodePools": [
                    {"name": "general", "count": 2, "capacity": {"cpu": "4", "memory": "8Gi"}}
                ]
            },
            "objects": [deployment],
            "timeline": [
                {"at": "2m", "drain": {"node": "general-2"}},
                {"at": f"{UNCORDON_AT:.0f}s", "uncordon": {"node": "general-2"}},
            ],
        },
    }


def conditions(d: Object) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in d["status"]["conditions"]}


def run(
    monkeypatch: pytest.MonkeyPatch, *, every_recheck: bool
) -> tuple[bytes, int, Object, float]:
    """The event log, the Deployment syncs that read its replica sets, the Deployment at the end
    and when its replacement pod started running."""
    full_syncs = 0
    claim = DeploymentController._claim

    async def counted(self: DeploymentController, *args: Any) -> list[Object]:
        nonlocal full_syncs
        full_syncs += 1
        return await claim(self, *args)

    monkeypatch.setattr(DeploymentController, "_claim", counted)
    if every_recheck:
        requeue = DeploymentController._requeue_stuck
        monkeypatch.setattr(
            DeploymentController,
            "_requeue_stuck",
            lambda self, d, status, timeless: requeue(self, d, status, timeless=False),
        )
    out = io.BytesIO()
    with Simulation(scenario(), event_log=out) as sim:
        sim.advance(UNCORDON_AT - 1)
        stuck = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
        assert stuck["status"]["availableReplicas"] == 1
        assert conditions(stuck)["Progressing"] == ("True", "NewReplicaSetAvailable")
        sim.advance()
        d = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
        pods = sim.run_coroutine(sim.client.list(PODS, "default"))["items"]
    [replacement] = [p for p in pods if p["spec"]["nodeName"] == "general-2"]
    running = next(
        c["lastTransitionTime"] for c in replacement["status"]["conditions"] if c["type"] == "Ready"
    )
    return out.getvalue(), full_syncs, d, parse_time(running)


def test_a_rollout_short_of_a_pod_past_its_deadline_decides_as_if_every_recheck_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log, syncs, d, running = run(monkeypatch, every_recheck=False)
    monkeypatch.undo()
    log_every, syncs_every, d_every, running_every = run(monkeypatch, every_recheck=True)

    assert log == log_every
    assert (d, running) == (d_every, running_every)
    assert d["status"]["availableReplicas"] == 2
    assert conditions(d)["Available"] == ("True", "MinimumReplicasAvailable")
    assert conditions(d)["Progressing"] == ("True", "NewReplicaSetAvailable")
    # The pod comes back once the node does: within the scheduler's longest back-off (10 s),
    # which the pod has reached by then, and its start.
    assert (
        UNCORDON_AT <= running - parse_time(d["metadata"]["creationTimestamp"]) < UNCORDON_AT + 15
    )
    # Re-checked about ten times a second for the 17 minutes past the deadline when each runs.
    assert syncs_every > 5000
    assert syncs < 100
