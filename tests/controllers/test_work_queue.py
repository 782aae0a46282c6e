"""The controllers' work queue and its rate limiter (client-go's workqueue), on the virtual
clock: whatever a sync does, the queue shares the loop and lets time pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from itertools import pairwise

import pytest

from pinnace.clock import VirtualClock
from pinnace.controllers.controller_utils import RateLimiter, WorkQueue

BOUND = 10_000
"""Syncs after which a test's sync stops re-adding: a queue that spins then ends the test."""


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with VirtualClock() as clock:
        yield clock


def run_for(
    clock: VirtualClock, queue: WorkQueue, sync: Callable[[str], Awaitable[None]], seconds: float
) -> None:
    task = clock.loop.create_task(queue.run(sync))
    clock.advance(seconds)
    task.cancel()
    clock.run_until_idle()


def test_the_default_rate_limiter_is_client_gos(clock: VirtualClock) -> None:
    limiter = RateLimiter(clock)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.01, 0.02, 0.04]
    assert limiter.num_requeues("a") == 4
    for _ in range(30):
        limiter.when("a")
    assert limiter.when("a") == 1000.0  # the per-key back-off's cap
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == 0.005
    # The bucket is the queue's: 100 requeues at once, then 10 a second.
    bucket = RateLimiter(clock)
    assert {bucket.when(str(i)) for i in range(100)} == {0.005}
    assert bucket.when("b") == pytest.approx(0.1)
    assert bucket.when("c") == pytest.approx(0.2)


def test_a_sync_that_re_adds_its_own_key_at_once_lets_time_pass_and_timers_fire(
    clock: VirtualClock,
) -> None:
    queue = WorkQueue(clock)
    synced: list[float] = []
    ticks: list[float] = []
    start = clock.now()

    async def sync(key: str) -> None:
        synced.append(clock.now() - start)
        if len(synced) < BOUND:
            queue.add(key)

    async def tick() -> None:
        for _ in range(10):
            await clock.sleep(1)
            ticks.append(clock.now() - start)

    queue.add("a")
    ticker = clock.loop.create_task(tick())
    run_for(clock, queue, sync, 10)
    assert ticker.done()
    assert ticks == [float(s) for s in range(1, 11)]
    assert all(later > earlier for earlier, later in pairwise(synced))
    # 5 ms apart while the bucket's 100 last, then 10 a second.
    assert 100 < len(synced) <= 100 + 10 * 10 + 1


def test_syncs_that_queue_each_other_at_once_let_time_pass(clock: VirtualClock) -> None:
    queue = WorkQueue(clock)
    synced: list[tuple[str, float]] = []

    async def sync(key: str) -> None:
        synced.append((key, clock.now()))
        if len(synced) < BOUND:
            queue.add("b" if key == "a" else "a")

    queue.add("a")
    run_for(clock, queue, sync, 10)
    assert synced[-1][1] - synced[0][1] > 9
    assert len(synced) <= 2 * (100 + 10 * 10 + 1)  # every other one through the rate limiter


def test_the_queue_yields_to_the_loop_between_syncs(clock: VirtualClock) -> None:
    queue = WorkQueue(clock)
    synced: list[str] = []
    seen: list[int] = []

    async def sync(key: str) -> None:
        synced.append(key)  # never suspends

    async def watch() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
            seen.append(len(synced))

    for i in range(1000):
        queue.add(str(i))
    task = clock.loop.create_task(queue.run(sync))
    clock.run(watch())
    task.cancel()
    clock.run_until_idle()
    assert seen[-1] < 10


def test_a_key_waiting_keeps_its_earliest_time(clock: VirtualClock) -> None:
    queue = WorkQueue(clock)
    synced: list[tuple[str, float]] = []
    start = clock.now()

    async def sync(key: str) -> None:
        synced.append((key, clock.now() - start))

    queue.add_after("a", 10)
    queue.add_after("a", 5)
    queue.add_after("b", 5)
    queue.add_after("b", 10)
    run_for(clock, queue, sync, 60)
    assert synced == [("a", 5.0), ("b", 5.0)]


def test_a_failed_sync_is_retried_with_back_off_and_forgotten_once_it_succeeds(
    clock: VirtualClock,
) -> None:
    queue = WorkQueue(clock, max_retries=3)
    synced: list[float] = []
    start = clock.now()

    async def sync(key: str) -> None:
        synced.append(round(clock.now() - start, 3))
        if key == "fails":
            raise RuntimeError("no")
        if len(synced) < 4:
            raise RuntimeError("not yet")

    queue.add("flaky")
    run_for(clock, queue, sync, 60)
    assert synced == [0, 0.005, 0.015, 0.035]
    assert queue.num_requeues("flaky") == 0

    synced.clear()
    queue.add("fails")
    run_for(clock, queue, sync, 60)
    assert len(synced) == 4  # the first attempt and 3 retries, then dropped until added again


def test_a_key_added_again_while_queued_is_synced_once_and_once_more_if_added_during_its_sync(
    clock: VirtualClock,
) -> None:
    """client-go's queue: a key is held once while it waits (its adds collapse into one sync);
    one added while it is being synced is synced once more after."""
    queue = WorkQueue(clock)
    synced: list[str] = []

    async def sync(key: str) -> None:
        synced.append(key)
        if synced.count(key) == 1 and key == "a":
            for _ in range(3):  # as an informer's handler would, while "a" is being synced
                clock.loop.call_soon(queue.add, "a")
            await asyncio.sleep(1)

    for key in ("a", "b", "a", "a", "b"):
        queue.add(key)
    run_for(clock, queue, sync, 60)
    assert synced == ["a", "b", "a"]
