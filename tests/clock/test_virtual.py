"""Simulated mode: component code runs on virtual time, which jumps to the next event."""

import asyncio
import math
import time
from collections.abc import Iterator

import pytest

from pinnace.clock import (
    DEFAULT_EPOCH,
    Clock,
    DeadlockError,
    VirtualClock,
    VirtualEventLoop,
    VirtualModeError,
)


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with VirtualClock() as clock:
        yield clock


def test_virtual_time_starts_at_a_real_looking_date(clock: VirtualClock) -> None:
    assert clock.now() == DEFAULT_EPOCH
    assert clock.now_rfc3339() == "2025-01-01T00:00:00Z"
    with VirtualClock(start=1_700_000_000.25) as other:
        assert other.now_rfc3339_micro() == "2023-11-14T22:13:20.250000Z"


def test_an_hour_long_sleep_jumps_straight_to_its_end(clock: VirtualClock) -> None:
    async def nap() -> float:
        await clock.sleep(3600)
        return clock.now()

    wall = time.perf_counter()
    woke = clock.run(nap())
    assert time.perf_counter() - wall < 1.0
    assert woke - DEFAULT_EPOCH == 3600
    assert clock.now_rfc3339() == "2025-01-01T01:00:00Z"


def test_timers_run_at_their_exact_times(clock: VirtualClock) -> None:
    seen: list[float] = []
    clock.call_later(2.5, lambda: seen.append(clock.now()))
    clock.call_at(DEFAULT_EPOCH + 1e-6, lambda: seen.append(clock.now()))
    clock.run_until_idle()
    assert seen == [DEFAULT_EPOCH + 1e-6, DEFAULT_EPOCH + 2.5]
    assert clock.now() == DEFAULT_EPOCH + 2.5


def test_equal_time_events_run_in_the_order_they_were_scheduled(clock: VirtualClock) -> None:
    order: list[int] = []
    t = clock.now() + 10
    for i in range(300):
        if i % 2:
            clock.call_at(t, order.append, i)
        else:
            clock.call_later(10, order.append, i)
        clock.call_at(t + 1 + i % 7, lambda: None)
    clock.run_until_idle()
    assert order == list(range(300))


def test_timers_coming_due_run_after_ready_callbacks_earliest_first(clock: VirtualClock) -> None:
    order: list[str] = []

    def first() -> None:
        clock.call_later(0, order.append, "timer due now")
        clock.loop.call_soon(order.append, "call_soon")
        clock.call_at(clock.now() - 5, order.append, "timer in the past")

    clock.call_later(1, first)
    clock.run_until_idle()
    assert order == ["call_soon", "timer in the past", "timer due now"]


def test_cancelled_timers_do_not_run_nor_move_time(clock: VirtualClock) -> None:
    ran: list[int] = []
    timers = [clock.call_later(i, ran.append, i) for i in range(1, 201)]
    for timer in timers[::2]:
        timer.cancel()
    last = clock.call_later(1000, ran.append, 1000)
    # Cancelled by an earlier event at the same time: it must not run either.
    clock.call_later(500, last.cancel)
    clock.call_at(clock.now() + 1000, ran.append, -1)
    clock.run_until_idle()
    assert ran == [*range(2, 201, 2), -1]
    assert last.cancelled()

    lonely = clock.call_later(60, ran.append, 60)
    lonely.cancel()
    before = clock.now()
    clock.run_until_idle()
    assert clock.now() == before


def test_run_until_includes_events_due_at_the_horizon(clock: VirtualClock) -> None:
    ran: list[float] = []
    for delay in (1, 5, 5, 6):
        clock.call_later(delay, ran.append, delay)
    clock.run_until(DEFAULT_EPOCH + 5)
    assert ran == [1, 5, 5]
    assert clock.now() == DEFAULT_EPOCH + 5
    clock.advance(0.5)
    assert clock.now() == DEFAULT_EPOCH + 5.5
    assert ran == [1, 5, 5]
    clock.advance(10)
    assert ran == [1, 5, 5, 6]
    assert clock.now() == DEFAULT_EPOCH + 15.5
    with pytest.raises(ValueError, match=r"virtual time is already 2025-01-01T00:00:15\.500000Z"):
        clock.run_until(DEFAULT_EPOCH)


def test_a_pause_stops_right_after_the_callback_the_rest_runs_first_next_time(
    clock: VirtualClock,
) -> None:
    ran: list[str] = []
    loop = clock.loop

    def deciding() -> None:
        ran.append("decides")
        loop.pause()

    loop.call_soon(deciding)
    loop.call_soon(ran.append, "ready with it")
    loop.call_later(5, ran.append, "later")
    clock.run_until(clock.now() + 10)
    assert ran == ["decides"]
    assert clock.now() == DEFAULT_EPOCH  # time did not move on either
    clock.run_until(clock.now() + 10)
    assert ran == ["decides", "ready with it", "later"]
    assert clock.now() == DEFAULT_EPOCH + 10


def test_periodic_work_runs_in_the_background_while_the_driver_advances(
    clock: VirtualClock,
) -> None:
    renewals: list[str] = []

    async def renew_lease() -> None:
        while True:
            renewals.append(clock.now_rfc3339())
            await clock.sleep(10)

    task = clock.loop.create_task(renew_lease())
    clock.advance(25)
    assert renewals == [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:10Z",
        "2025-01-01T00:00:20Z",
    ]
    task.cancel()
    clock.run_until_idle()
    assert task.cancelled()


def test_wait_for_times_out_on_virtual_time(clock: VirtualClock) -> None:
    async def main() -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)
        async with asyncio.timeout(2):
            await clock.sleep(1)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(2):
                await clock.sleep(1e9)
        return clock.now()

    assert clock.run(main()) == DEFAULT_EPOCH + 33


def test_queue_and_event_between_coroutines(clock: VirtualClock) -> None:
    received: list[tuple[str, float]] = []

    async def producer(queue: asyncio.Queue[str], done: asyncio.Event) -> None:
        for name in ("a", "b", "c"):
            await clock.sleep(2)
            await queue.put(name)
        done.set()

    async def consumer(queue: asyncio.Queue[str]) -> None:
        while True:
            item = await queue.get()
            received.append((item, clock.now() - DEFAULT_EPOCH))

    async def main() -> None:
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=1)
        done = asyncio.Event()
        worker = asyncio.create_task(consumer(queue))
        await asyncio.gather(producer(queue, done), done.wait())
        await asyncio.sleep(0)
        worker.cancel()

    clock.run(main())
    assert received == [("a", 2), ("b", 4), ("c", 6)]


def test_waiting_on_what_nothing_will_do_is_a_deadlock(clock: VirtualClock) -> None:
    async def stuck() -> None:
        await clock.sleep(5)
        await asyncio.Event().wait()

    with pytest.raises(DeadlockError) as info:
        clock.run(stuck())
    message = str(info.value)
    assert message.startswith("deadlock at virtual time 2025-01-01T00:00:05.000000Z")
    assert "stuck" in message


def test_a_sleep_forever_is_never_reached(clock: VirtualClock) -> None:
    async def forever() -> None:
        await clock.sleep(math.inf)

    with pytest.raises(DeadlockError):
        clock.run(forever())
    clock.run_until_idle()
    assert clock.now() == DEFAULT_EPOCH


def test_real_io_and_threads_are_refused(clock: VirtualClock) -> None:
    with pytest.raises(VirtualModeError, match="simulated mode does no real I/O"):
        clock.loop.run_in_executor(None, print)

    async def fetch() -> None:
        await asyncio.open_connection("127.0.0.1", 80)

    with pytest.raises(VirtualModeError, match=r"create_connection\(\)"):
        clock.run(fetch())


def test_events_processed_counts_callbacks_run(clock: VirtualClock) -> None:
    for i in range(10):
        clock.call_later(i, lambda: None)
    clock.call_later(3, lambda: None).cancel()
    clock.run_until_idle()
    assert clock.events_processed == 10


def test_a_clock_over_a_bare_virtual_loop_reads_its_time() -> None:
    loop = VirtualEventLoop(start=1_000_000.0)
    try:
        clock = Clock(loop)
        fired: list[float] = []
        clock.call_at(1_000_042.0, lambda: fired.append(clock.now()))
        loop.run_until_idle()
        assert fired == [1_000_042.0]
    finally:
        loop.close()
