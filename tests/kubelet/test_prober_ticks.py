"""A prober's timer: ticks on the kubelet's period, skipping those whose outcome cannot change,
and always moving on (a change that falls a hair after a tick must not stall the timer)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pinnace.clock import Clock, VirtualClock
from pinnace.kubelet.probes import Failing, Probe, ProbeOutcomes, Prober, ProbeType


@dataclass
class Container:
    started_at: float
    container_id: str = "containerd://one"
    probing: bool = True
    started: bool = True


def test_a_failure_starting_just_after_a_tick_is_found_at_the_next_one() -> None:
    with VirtualClock() as virtual:
        clock = Clock(virtual.loop)
        origin = clock.now()
        failures: list[float] = []
        prober = Prober(
            clock,
            Probe(ProbeType.LIVENESS, {}, period=2, failure_threshold=1),
            # Started 1.5 ms after the prober's ticks began: the failure from age 10 s begins
            # 1.5 ms after the tick at 10 s, within the tick rounding's tolerance.
            Container(started_at=origin + 0.0015),
            on_result=lambda prober, result: None,
            on_failure=lambda prober, message: failures.append(clock.now() - origin),
        )
        prober.outcomes = ProbeOutcomes([Failing(10.0, math.inf, "boom")])
        prober.wake()
        virtual.run_until(virtual.loop.time() + 13)
        assert failures and round(failures[0], 3) == 12.0
        prober.stop()
