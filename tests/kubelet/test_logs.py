"""Container logs as the kubelet serves them: since, tail, timestamps, byte limits, and a
followed log that sends new lines as they come and ends when the container exits."""

from __future__ import annotations

import asyncio

import pytest

from pinnace.api.options import LogOptions
from pinnace.clock import Clock, VirtualClock
from pinnace.kubelet.logs import FOLLOW_POLL_SECONDS, container_log, waiting_to_start
from pinnace.kubelet.runtime import ContainerStatus, Ended


def run_of(*lines: tuple[float, str]) -> ContainerStatus:
    status = ContainerStatus("containerd://x", "c", "busybox", "sha", started_at=0.0)
    status.print(lines)
    return status


def read(clock: VirtualClock, run: ContainerStatus, options: LogOptions) -> list[str]:
    async def collect() -> list[str]:
        return [chunk async for chunk in container_log(run, options, Clock(clock.loop))]

    return clock.run(collect())


@pytest.fixture
def clock() -> VirtualClock:
    with VirtualClock() as c:
        yield c


def test_lines_since_a_time_then_the_tail_with_timestamps_cut_at_a_byte_limit(
    clock: VirtualClock,
) -> None:
    start = clock.loop.time()
    run = run_of((start, "one"), (start + 10, "two"), (start + 20, "three"))
    clock.run(asyncio.sleep(30))
    assert read(clock, run, LogOptions(since_seconds=15)) == ["three\n"]
    assert read(clock, run, LogOptions(since_time=start + 10, tail_lines=1)) == ["three\n"]
    stamped = read(clock, run, LogOptions(tail_lines=1, timestamps=True))[0]
    assert stamped.endswith("000Z three\n") and stamped[:4].isdigit()
    assert read(clock, run, LogOptions(limit_bytes=6)) == ["one\ntw"]
    assert read(clock, run, LogOptions(tail_lines=0)) == []


def test_a_followed_log_sends_new_lines_until_the_container_exits(clock: VirtualClock) -> None:
    run = run_of((clock.loop.time(), "starting"))
    chunks: list[tuple[float, str]] = []

    async def follow() -> None:
        async for chunk in container_log(run, LogOptions(follow=True), Clock(clock.loop)):
            chunks.append((clock.loop.time(), chunk))

    async def container() -> None:
        await asyncio.sleep(5)
        run.print([(clock.loop.time(), "working")])
        await asyncio.sleep(5)
        run.print([(clock.loop.time(), "done")])
        run.ended = Ended(clock.loop.time(), 0, "Completed")

    began = clock.loop.time()

    async def both() -> None:
        await asyncio.gather(follow(), container())

    clock.run(both())
    assert [text for _, text in chunks] == ["starting\n", "working\n", "done\n"]
    waits = [t - began - printed for (t, _), printed in zip(chunks, (0, 5, 10), strict=True)]
    assert all(0 <= wait <= FOLLOW_POLL_SECONDS for wait in waits), waits


def test_a_container_not_started_has_the_kubelets_words_for_its_waiting_reason() -> None:
    # pkg/kubelet/kubelet_pods.go, validateContainerLogStatus
    prefix = 'container "app" in pod "web" is waiting to start'
    assert waiting_to_start("web", "app", "PodInitializing") == f"{prefix}: PodInitializing"
    assert waiting_to_start("web", "app", "ErrImagePull") == f"{prefix}: image can't be pulled"
    assert waiting_to_start("web", "app", "ImagePullBackOff") == (
        f"{prefix}: trying and failing to pull image"
    )
    assert waiting_to_start("web", "app", "") == f"{prefix} - no logs yet"
