"""The simulated mode: a whole cluster on the virtual clock, driven by a Scenario file
(docs/simulation.md), what a run records, and its report (docs/simulation-report.md).

    from pinnace.sim import Simulation
    with Simulation("scenario.yaml", seed=1) as sim:
        report = sim.run(until=3600)
"""
