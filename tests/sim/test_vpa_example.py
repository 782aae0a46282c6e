"""examples/vpa-ramp.yaml at a reduced length: the VPA's recommendation follows a workload's
ramping usage in the simulated mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.sim import Simulation, load_scenario

EXAMPLE = Path(__file__).parents[2] / "examples" / "vpa-ramp.yaml"
PODS = catalog.kind("", "pods")
VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
HOUR = 3600.0


def millicores(text: str) -> int:
    return int(text.removesuffix("m")) if text.endswith("m") else int(float(text) * 1000)


def recommended(sim: Simulation) -> Object:
    vpa: Object = sim.run_coroutine(sim.client.get(VPAS, "default", "web"))
    [entry] = vpa["status"]["recommendation"]["containerRecommendations"]
    return entry


def requested(sim: Simulation) -> list[int]:
    pods = sim.run_coroutine(sim.client.list(PODS, "default"))["items"]
    live = [p for p in pods if "deletionTimestamp" not in p["metadata"]]
    return sorted(
        millicores(p["spec"]["containers"][0]["resources"]["requests"]["cpu"]) for p in live
    )


def test_the_recommendation_follows_the_ramp() -> None:
    assert load_scenario(EXAMPLE).name == "vpa-ramp"
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["until"] = "3h"
    with Simulation(data) as sim:
        entries = []
        for _ in range(3):
            sim.advance(sim.elapsed + HOUR)
            entries.append(recommended(sim))
        assert requested(sim) == [250] * 3  # updateMode Off: pods keep what they asked for
    targets = [millicores(e["target"]["cpu"]) for e in entries]
    assert targets == sorted(targets) and targets[0] < targets[-1], targets
    # usage at 3h is 200m + 1300m * 3/6 = 850m: the target is around it, the 15 % margin
    # on the 90th percentile of a history that rose to it
    assert 850 <= targets[-1] <= 850 * 1.15 * 1.05, targets
    # the upper bound narrows towards the target as history grows
    uppers = [millicores(e["upperBound"]["cpu"]) / t for e, t in zip(entries, targets, strict=True)]
    assert uppers == sorted(uppers, reverse=True), uppers
