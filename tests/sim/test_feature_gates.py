"""A Scenario's `featureGates`: the simulated cluster runs with them, as `pinnace up
--feature-gates` does; a gate it does not know is refused with the file, line and field."""

from __future__ import annotations

import pytest
import yaml

from pinnace.api import catalog
from pinnace.api.features import FeatureGates
from pinnace.api.patch import PatchType
from pinnace.sim import Simulation
from pinnace.sim.scenario import ScenarioError, parse_scenario

PODS = catalog.kind("", "pods")
SCENARIO = """\
apiVersion: sim.pinnace.dev/v1alpha1
kind: Scenario
metadata: {name: resize}
spec:
  cluster:
    nodePools: [{name: a, count: 1, capacity: {cpu: "2", memory: 4Gi}}]
    featureGates: {InPlacePodVerticalScaling: true}
  objects:
  - apiVersion: v1
    kind: Pod
    metadata: {name: web, namespace: default}
    spec:
      containers:
      - {name: app, image: nginx, resources: {requests: {cpu: 500m}}}
"""


def test_a_scenario_turns_in_place_resize_on() -> None:
    assert parse_scenario(SCENARIO).cluster.features == FeatureGates(
        in_place_pod_vertical_scaling=True
    )
    with Simulation(yaml.safe_load(SCENARIO)) as sim:
        sim.advance(10)
        patch = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]}}
        sim.run_coroutine(
            sim.client.patch(
                PODS, "default", "web", patch, PatchType.STRATEGIC_MERGE, subresource="resize"
            )
        )
        sim.advance(20)
        pod = sim.run_coroutine(sim.client.get(PODS, "default", "web"))
        assert pod["status"]["containerStatuses"][0]["resources"] == {"requests": {"cpu": "1"}}


def test_an_unknown_gate_is_refused() -> None:
    bad = SCENARIO.replace("InPlacePodVerticalScaling: true", "Teleport: true")
    with pytest.raises(ScenarioError) as e:
        parse_scenario(bad, "scenario.yaml")
    assert str(e.value) == (
        "scenario.yaml:7: spec.cluster.featureGates: unrecognized feature gate: Teleport"
    )
