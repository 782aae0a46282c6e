"""The cluster autoscaler in the simulated mode: examples/autoscaling.yaml's rush grows a pool
and the report shows each pool's nodes and their cost over time."""

from __future__ import annotations

from pathlib import Path

import yaml

from pinnace.sim import Simulation

EXAMPLE = Path(__file__).parents[2] / "examples" / "autoscaling.yaml"


def test_the_report_shows_nodes_and_cost_over_a_rush() -> None:
    scenario = yaml.safe_load(EXAMPLE.read_text())
    scenario["spec"]["until"] = "55m"  # the rush's nodes are gone by then
    with Simulation(scenario) as sim:
        report = sim.run()
    series = report.timeseries
    time = list(series.column("time"))
    burst = list(series.column("pool:burst.nodes"))
    cost = list(series.column("cost.perHour"))
    assert list(series.column("pool:spot.nodes")) == [0] * len(time)
    at = {t: (n, c) for t, n, c in zip(time, burst, cost, strict=True)}
    assert at[600] == (0, 0.4)  # the base pool's two nodes
    # The rush (web at 24 pods from 10m) needs two burst nodes, which join 2 minutes after the
    # scale-up; least-waste prefers them to six of the smaller spot nodes.
    assert at[840] == (2, 1.2)
    # It ends at 40m; 10 minutes later (and a scan) the nodes go.
    assert at[2940] == (2, 1.2)
    assert at[3120] == (0, 0.4)
    assert max(burst) == 2
    summary = report.summary["cost"]
    assert summary["nodeHours"]["base"] == round(55 / 60 * 2, 6)
    assert 1.2 < summary["nodeHours"]["burst"] < 1.4  # two nodes for about 39 minutes
    assert summary["total"] == round(
        0.2 * summary["nodeHours"]["base"] + 0.4 * summary["nodeHours"]["burst"], 6
    )
