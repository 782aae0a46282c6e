"""The simulated mode: a whole cluster on the virtual clock, driven by a Scenario file
(docs/simulation.md)."""
