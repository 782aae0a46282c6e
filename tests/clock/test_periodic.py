"""Periodic passes that skip the passes which could change nothing, on the virtual clock: a
pass that runs comes at the instant it would have come every period, a wake brings the next
pass back, and `pass_after` tells when a skipped pass would have been."""

from __future__ import annotations

import math

from pinnace.clock import VirtualClock
from pinnace.clock.periodic import Periodic


def test_passes_are_skipped_until_the_time_a_pass_says_and_stay_on_the_grid() -> None:
    with VirtualClock(start=1000.0) as clock:
        runs: list[float] = []
        outcomes = iter([None, 1047.0, math.inf])

        async def work() -> float | None:
            runs.append(clock.now())
            return next(outcomes, None)

        periodic = Periodic(clock, 5.0, work)
        task = clock.loop.create_task(periodic.run())
        clock.advance(100)
        assert runs == [1000.0, 1005.0, 1050.0]  # 1047 falls between passes: the next, 1050
        assert periodic.pass_after(1006.0) == 1010.0  # skipped, on the grid
        assert periodic.pass_after(1046.0) == 1050.0  # run
        assert periodic.pass_after(1051.0) == 1055.0  # skipped since (never due)

        clock.advance(3)  # 1103
        periodic.wake()
        clock.advance(10)
        assert runs[3:] == [1105.0, 1110.0]  # the next on the grid, then every period
        task.cancel()
        clock.run_until(clock.now())


def test_a_wake_while_a_pass_runs_keeps_the_next_from_being_skipped() -> None:
    with VirtualClock(start=0.0) as clock:
        runs: list[float] = []

        async def work() -> float:
            runs.append(clock.now())
            if len(runs) == 1:
                periodic.wake()  # something changed meanwhile
            return math.inf

        periodic = Periodic(clock, 20.0, work)
        task = clock.loop.create_task(periodic.run())
        clock.advance(1000)
        assert runs == [0.0, 20.0]
        task.cancel()
        clock.run_until(clock.now())
