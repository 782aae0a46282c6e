"""The cluster autoscaler in the simulated mode: examples/autoscaling.yaml's rush grows a pool
and the report shows each pool's nodes and their cost over time."""

from __future__ import annotations

from pathlib import Path

import yaml

from pinnace.sim import Simulation
from pinnace.sim.compare import unit
from pinnace.sim.compare_run import metrics
from pinnace.sim.summary import render_text

EXAMPLE = Path(__file__).parents[2] / "examples" / "autoscaling.yaml"
COSTS = {"base": 0.2, "burst": 0.4, "spot": 0.12}


def test_the_report_shows_nodes_and_cost_over_a_rush() -> None:
    scenario = yaml.safe_load(EXAMPLE.read_text())
    scenario["spec"]["until"] = "55m"  # the rush's nodes are gone by then
    with Simulation(scenario) as sim:
        report = sim.run()
    series = report.timeseries
    time = list(series.column("time"))
    nodes = {
        t: (int(burst), int(spot), cost)
        for t, burst, spot, cost in zip(
            time,
            series.column("pool:burst.nodes"),
            series.column("pool:spot.nodes"),
            series.column("cost.perHour"),
            strict=True,
        )
    }
    assert nodes[600] == (0, 0, 0.4)  # the base pool's two nodes
    # The rush (web at 30 pods from 10m) leaves 22 pending: least-waste grows spot to its
    # maxSize (8 nodes, 16 pods), then burst by one node; they join 2 minutes later.
    assert nodes[720] == (0, 0, 0.4)
    assert nodes[840] == (1, 8, 0.4 + 0.4 + 8 * 0.12)
    # It ends at 40m; 10 minutes later (and a scan) the burst node and the empty spot nodes go;
    # the four spot nodes running web's pods, at 50 % of their CPU, are not under 0.5.
    assert nodes[2940] == (1, 8, 1.76)
    assert nodes[3120] == (0, 4, 0.4 + 4 * 0.12)
    assert nodes[time[-1]] == (0, 4, 0.88)
    summary = report.summary["cost"]
    assert summary["nodeHours"]["base"] == round(55 / 60 * 2, 6)
    assert 0.6 < summary["nodeHours"]["burst"] < 0.7  # one node for about 39 minutes
    assert summary["total"] == round(
        sum(cost * summary["nodeHours"][pool] for pool, cost in COSTS.items()), 6
    )
    hours = summary["nodeHours"]
    assert render_text(report.summary).splitlines()[-1] == (
        f"Node-hours: base {hours['base']:.2f}, burst {hours['burst']:.2f}, "
        f"spot {hours['spot']:.2f}; cost {summary['total']:.2f}"
    )
    # what a comparison of variants (another expander, say) compares
    series = {name: [0] for name in ("nodes.inUse", "pods.pending", "pods.unscheduled")}
    figures = metrics(report.summary, series)
    assert figures["cost.total"] == summary["total"]
    assert figures["nodeHours.burst"] == hours["burst"]
    assert (unit("cost.total"), unit("nodeHours.burst")) == ("cost", "node-hours")
