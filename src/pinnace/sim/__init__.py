"""The simulated mode: the whole cluster (a `ControlPlane`) on the virtual clock, in one
process, deterministic for a seed."""
