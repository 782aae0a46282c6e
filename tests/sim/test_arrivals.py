"""A workload generator's arrivals (`pinnace.sim.arrivals`): after the first few, made in the
form the API server's decoding gives and taken as they are (`Client.create_own`), stored byte
for byte as decoding each would store it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.own_writes import Checked, checking

from pinnace.sim import arrivals
from pinnace.sim.scenario import parse_scenario
from pinnace.sim.simulation import Simulation

PODS = 30


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    yield from checking(monkeypatch)


def workload(template: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "arrivals"},
        "spec": {
            "until": "2m",
            "cluster": {
                "nodePools": [
                    {"name": "pool", "count": 3, "capacity": {"cpu": "8", "memory": "32Gi"}}
                ]
            },
            "workloads": [
                {
                    "name": "web",
                    "template": template,
                    "arrivals": {"poisson": {"ratePerSecond": 5}},
                    "count": PODS,
                    "runTime": {"uniform": {"min": "10s", "max": "50s"}},
                    "usage": {"cpu": {"uniform": {"min": "50m", "max": "0.2"}}, "memory": "64Mi"},
                }
            ],
            "metrics": {"interval": "1m"},
        },
    }


def pod_template() -> dict[str, Any]:
    """A template as a scenario file writes one: quantities not in their canonical form, an
    annotation and labels of its own."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"team": "a"},
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "app:1",
                    "resources": {"requests": {"cpu": "0.1", "memory": "0.25Gi"}},
                }
            ]
        },
    }


def run(template: dict[str, Any]) -> tuple[str, int]:
    """The run's event-log digest and how many pods it created."""
    sim = Simulation(parse_scenario(workload(template), source="test"), seed=3)
    try:
        sim.run()
    finally:
        sim.close()
    return sim.event_log.sha256(), len(sim.observer.pods)


def test_arrivals_after_the_first_are_taken_in_decoded_form_as_decoding_stores_them(
    checked: Checked, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest, created = run(pod_template())
    assert created == PODS
    own, checked_first = checked.writes["Pod"], arrivals.CHECKED  # with the kubelets' patches
    # Every arrival made from the template and decoded by the API server: the same log.
    monkeypatch.setattr(arrivals, "CHECKED", PODS + 1)
    assert run(pod_template()) == (digest, PODS)
    assert own - (checked.writes["Pod"] - own) == PODS - checked_first
