"""The runs of a comparison as Ray tasks (`pinnace simulate --compare VARIANTS --ray [ADDRESS]`):
each run (pinnace.sim.compare_run) is one task of one CPU on a Ray cluster, a local one by
default, and the results come back in the order of the runs, as with worker processes.

A run is deterministic for its seed, so the cluster changes only where and when the runs go: a
comparison on Ray is the comparison made locally (the event logs' SHA-256s show it), but for
the wall-clock seconds. On a cluster of several machines, every node needs this Pinnace
installed (`pip install 'pinnace[ray]'`) and the files the scenario names at the same paths.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pinnace.sim import compare_run
from pinnace.sim.compare_run import Run, Task

LOCAL = "local"
"""Ray's address for a new local cluster, made for the comparison and stopped after it."""


STARTS = 2
"""Tries at starting a local Ray: its raylet must register within a fixed 30 s, which a loaded
2-core machine can miss once (its processes start while the runs' own imports compete)."""


class RayUnavailableError(RuntimeError):
    """Ray is not installed, or a local Ray did not start."""


def run_on_ray(
    tasks: Sequence[Task],
    address: str = LOCAL,
    cpus: int | None = None,
    progress: Callable[[], None] | None = None,
) -> list[Run]:
    """Every task's run, in the order of `tasks`, as a Ray task on the cluster at `address`
    (a new local one by default, with `cpus` CPUs: the cores when None). A Ray already
    initialised in this process is used as it is, and left running."""
    try:
        import ray
    except ImportError:
        raise RayUnavailableError("--ray needs Ray: pip install 'pinnace[ray]'") from None
    started = not ray.is_initialized()
    if started:
        _init(ray, address, cpus)
    try:
        return _gathered(ray, tasks, progress or (lambda: None))
    finally:
        if started:
            ray.shutdown()


def _init(ray: Any, address: str, cpus: int | None) -> None:
    if address != LOCAL:
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
        return
    for attempt in range(1, STARTS + 1):
        try:
            ray.init(LOCAL, include_dashboard=False, logging_level=logging.WARNING, num_cpus=cpus)
            return
        except Exception as error:  # Ray raises a bare Exception when its raylet registers late
            ray.shutdown()
            if attempt == STARTS:
                raise RayUnavailableError(f"a local Ray did not start: {error}") from None


def _gathered(ray: Any, tasks: Sequence[Task], done: Callable[[], None]) -> list[Run]:
    remote = ray.remote(num_cpus=1)(compare_run.run)
    pending = [remote.remote(task) for task in tasks]
    index = {ref: n for n, ref in enumerate(pending)}
    found: list[Run | None] = [None] * len(tasks)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    found[index[ref]] = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    # The run's own error (a RunError), not Ray's wrapping of it.
                    raise (e.cause if isinstance(e.cause, Exception) else e) from None
                done()
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise
    return [run for run in found if run is not None]
