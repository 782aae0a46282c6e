"""The simulated mode: the whole cluster (a `ControlPlane`) on the virtual clock, in one process,
deterministic for a seed; driven by a Scenario file (docs/simulation.md), observed into a report
(docs/simulation-report.md).

    from pinnace.sim import Simulation
    with Simulation("scenario.yaml", seed=1) as sim:
        report = sim.run(until=3600)
"""

from pinnace.sim.report import Report
from pinnace.sim.scenario import Scenario, ScenarioError, Step, load_scenario, parse_scenario
from pinnace.sim.simulation import Simulation

__all__ = [
    "Report",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "Step",
    "load_scenario",
    "parse_scenario",
]
