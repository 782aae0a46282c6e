"""One seeded generator per run: reproducible, with a stream per component."""

import os
import subprocess
import sys

import pytest

from pinnace.clock import Randomness, VirtualClock


def draws(randomness: Randomness) -> tuple[list[float], list[int]]:
    return (
        [randomness.random.random() for _ in range(3)],
        randomness.numpy.integers(0, 1_000_000, size=3).tolist(),
    )


def test_the_same_seed_gives_the_same_draws() -> None:
    assert draws(Randomness(7)) == draws(Randomness(7))
    assert draws(Randomness(7)) != draws(Randomness(8))


def test_component_streams_are_independent_of_each_other() -> None:
    alone = Randomness(7)
    scheduler_alone = draws(alone.child("scheduler"))

    crowded = Randomness(7)
    draws(crowded)
    draws(crowded.child("kubelet"))
    crowded.child("descheduler")
    assert draws(crowded.child("scheduler")) == scheduler_alone

    assert draws(Randomness(7).child("kubelet")) != scheduler_alone
    assert draws(Randomness(7).child("scheduler").child("plugins")) != scheduler_alone


def test_a_component_gets_one_stream_however_often_it_asks() -> None:
    root = Randomness(1)
    assert root.child("scheduler") is root.child("scheduler")
    assert root.child("scheduler").child("queue").name == "scheduler/queue"


def test_streams_do_not_depend_on_the_process_hash_seed() -> None:
    program = (
        "from pinnace.clock import Randomness\n"
        "r = Randomness(99).child('node-lifecycle')\n"
        "print(r.random.random(), r.numpy.random())\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for hash_seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_an_unseeded_run_reports_its_seed_so_it_can_be_replayed() -> None:
    first = Randomness()
    assert draws(Randomness(first.seed)) == draws(first)
    assert Randomness().seed != first.seed


def test_seeds_are_non_negative() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Randomness(-1)


def simulate(seed: int) -> list[tuple[str, str]]:
    """Pods arrive at random, each runs for a random time on a random node; log what happens."""
    randomness = Randomness(seed)
    arrivals = randomness.child("arrivals")
    runtime = randomness.child("runtime")
    log: list[tuple[str, str]] = []
    with VirtualClock() as clock:

        def finish(pod: str) -> None:
            log.append((clock.now_rfc3339_micro(), f"{pod} finished"))

        def arrive(n: int) -> None:
            pod = f"pod-{n}"
            node = runtime.random.choice(["node-a", "node-b", "node-c"])
            log.append((clock.now_rfc3339_micro(), f"{pod} bound to {node}"))
            clock.call_later(float(runtime.numpy.exponential(30.0)), finish, pod)
            if n < 20:
                clock.call_later(float(arrivals.numpy.exponential(5.0)), arrive, n + 1)

        clock.call_later(0, arrive, 1)
        clock.run_until_idle()
    return log


def test_a_seeded_simulation_is_reproducible() -> None:
    run = simulate(2025)
    assert len(run) == 40
    assert simulate(2025) == run
    assert simulate(2026) != run
