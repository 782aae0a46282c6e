"""The VPA recommender's prometheus storage steps a container's usage history as upstream's
range queries do (pkg/recommender/input/history/history_provider.go): CPU at each step the
mean over the step before it (`rate(...[step])`), memory the last sample within Prometheus'
5-minute lookback (none once the samples are older), only samples since the pod started."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import SimpleNamespace

from pinnace.clock.rfc3339 import format_time
from pinnace.controllers.vpa import VerticalPodAutoscaling, VPAOptions


class Samples:
    def __init__(self) -> None:
        self.cpu: list[tuple[float, float]] = []
        self.memory: list[tuple[float, float]] = []

    def add_cpu_sample(self, cores: float, time: float) -> bool:
        self.cpu.append((time, cores))
        return True

    def add_memory_sample(self, used: float, time: float) -> bool:
        self.memory.append((time, used))
        return True


def test_history_is_stepped_with_the_rate_window_and_the_memory_lookback() -> None:
    asked = []

    async def history(key: str, container: str) -> Mapping[str, Sequence[float | None]]:
        asked.append((key, container))
        return {
            "time": [9300.0, 9400.0, 9410.0, 9420.0, 9900.0],
            "cpu": [5.0, 0.1, 0.3, None, 1.0],  # 9300: before the pod started
            "memory": [5.0, 100.0, 200.0, None, 300.0],
        }

    recommender = SimpleNamespace(
        _history=history,
        _clock=SimpleNamespace(now=lambda: 10_000.0),
        options=VPAOptions(history_length=3600.0, history_resolution=60.0),
    )
    pod = {"metadata": {"namespace": "default", "name": "web-1"},
           "status": {"startTime": format_time(9350.0)}}  # fmt: skip
    state = Samples()
    read = VerticalPodAutoscaling._read_history(recommender, pod, "app", state)  # type: ignore[arg-type]
    asyncio.run(read)
    assert asked == [("default/web-1", "app")]
    # steps at 6400 + k * 60 s: 9400, 9460 … 10000
    assert state.cpu == [(9400.0, 0.1), (9460.0, 0.3), (9940.0, 1.0)]
    held = [(t, 200.0) for t in (9460.0, 9520.0, 9580.0, 9640.0, 9700.0)]  # 9410's, 5 min
    assert state.memory == [(9400.0, 100.0), *held, (9940.0, 300.0), (10_000.0, 300.0)]
