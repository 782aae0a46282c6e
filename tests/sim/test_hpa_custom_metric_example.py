"""examples/hpa-custom-metric.yaml: in the simulated mode, an HPA on a custom metric follows a
load that rises and falls, the way down trailing by the downscale stabilization window."""

from __future__ import annotations

import math
from pathlib import Path

from pinnace.api import catalog
from pinnace.sim import Simulation, load_scenario

EXAMPLE = Path(__file__).parents[2] / "examples" / "hpa-custom-metric.yaml"
DEPLOYMENTS = catalog.kind("apps", "deployments")
MINUTE = 60.0


def load(seconds: float) -> float:
    """frontend_requests: 20 up to 200 at 20m, back to 20 at 40m."""
    phase = seconds % 2400 / 1200
    return 20 + 180 * (phase if phase <= 1 else 2 - phase)


def test_the_replicas_follow_the_load_up_and_down() -> None:
    scenario = load_scenario(EXAMPLE)
    assert scenario.name == "hpa-custom-metric"
    with Simulation(scenario) as sim:
        seen: dict[int, int] = {}
        for minute in range(5, 41, 5):
            sim.advance(minute * MINUTE)
            deployment = sim.run_coroutine(sim.client.get(DEPLOYMENTS, "default", "web"))
            seen[minute] = deployment["spec"]["replicas"]
    # on the way up the count keeps up with the load at 20 a pod, a sync or two behind
    for minute in (5, 10, 15):
        wanted = math.ceil(load(minute * MINUTE) / 20)
        assert wanted - 1 <= seen[minute] <= wanted + 1, seen
    assert seen[20] == 10
    # on the way down it follows about 5 minutes late, and ends back near one pod
    for minute in (30, 35):
        late = math.ceil(load((minute - 5) * MINUTE) / 20)
        assert late - 1 <= seen[minute] <= late + 1, seen
    assert seen[40] <= 4, seen
    assert list(seen.values())[:5] == sorted(list(seen.values())[:5]), seen
