import asyncio

from pinnace.clock import VirtualClock
from pinnace.clock.component import HeldTasks


def test_held_tasks_are_the_ones_not_done_in_the_order_they_started() -> None:
    with VirtualClock() as clock:

        async def hold_many() -> list[asyncio.Task[None]]:
            held = HeldTasks()
            tasks = [clock.loop.create_task(clock.sleep(i % 2)) for i in range(200)]
            for task in tasks:
                held.hold(task)  # sweeps along the way: none is done yet
            assert list(held) == tasks
            await clock.sleep(0.5)  # the ones sleeping 0 are done
            assert list(held) == tasks[1::2]
            await clock.sleep(1)
            assert not held and not list(held)
            return tasks

        tasks = clock.run(hold_many())
        assert all(task.done() for task in tasks)
