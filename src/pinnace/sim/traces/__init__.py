"""Trace replay: a scenario's workload read from a cluster trace (docs/simulation.md, "Trace
replay"). Four formats: Alibaba's cluster-trace-gpu-v2023 (`alibaba-gpu-2023`), Alibaba's
cluster-trace-v2018 (`alibaba-2018`), Google's cluster-data 2019 (`google-2019`) and Pinnace's
own recordings (`pinnace`, what `pinnace record` writes).

A trace is read when the scenario is (`parse_trace`): its machines become nodes of the cluster
and its pods (or a recording's objects) are kept, filtered, in order of time. The simulation
replays it (`pinnace.sim.traces.replay`) in one task on the virtual clock.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.field import Path
from pinnace.sim.traces import alibaba_2018, alibaba_gpu, google_2019, recording
from pinnace.sim.traces.model import Trace
from pinnace.sim.traces.options import Format
from pinnace.sim.traces.options import parse_trace as _parse_trace

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (alibaba_gpu.FORMAT, alibaba_2018.FORMAT, google_2019.FORMAT, recording.FORMAT)
}


def parse_trace(raw: Any, path: Path, name: str, base: str) -> Trace:
    """The trace workload `name`'s `trace` mapping `raw` (at `path` in the scenario), its
    files (relative to `base`) read; a ScenarioError names what does not hold."""
    return _parse_trace(raw, path, name, base, FORMATS)


__all__ = ["FORMATS", "Format", "Trace", "parse_trace"]
