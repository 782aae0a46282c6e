"""Measures what a `pinnace plan failure` trial costs (docs/planning.md, "What a node-loss trial
costs"): loads and settles a cluster file's snapshot once, then runs each trial in a fork of it as
the command does, and prints each trial's wall and CPU time (the child's user + system) and page
faults (mostly pages of the settled cluster the fork copied as it wrote to them) with what
it reported, so two versions can be compared on the same losses.

    python scripts/plan_cluster.py /tmp/c.yaml
    python scripts/measure_plan_failure.py /tmp/c.yaml [--random 1] [--trials 5] [--seed 0]
        [--profile DIR] [--answers FILE]

The snapshot is kept beside the cluster file (OUT.snapshot.pickle) for the next run. --profile
writes each trial's cProfile statistics to DIR/trial-N.prof; --answers writes every
trial's answer (wall times left out) as JSON, to compare two versions' with `diff`.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from pinnace.plan.failure import DEFAULT_CAP, _load, _losses, _scenario, _settle, _trial
from pinnace.plan.load import from_file
from pinnace.sim import Simulation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cluster", type=Path)
    parser.add_argument("--random", type=int, default=1)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--answers", type=Path)
    args = parser.parse_args()
    began = time.perf_counter()
    cached = args.cluster.with_suffix(".snapshot.pickle")
    if cached.exists() and cached.stat().st_mtime > args.cluster.stat().st_mtime:
        snapshot = pickle.loads(cached.read_bytes())
    else:
        snapshot = from_file(args.cluster, seed=args.seed)
        cached.write_bytes(pickle.dumps(snapshot))
    print(f"snapshot {time.perf_counter() - began:.1f} s", file=sys.stderr)
    losses = _losses(snapshot, (), "", args.random, args.trials, args.seed)
    began, cpu = time.perf_counter(), time.process_time()
    sim = Simulation(_scenario(snapshot, None, args.seed), seed=args.seed)
    sim.run_coroutine(_load(sim, snapshot))
    sim.run_coroutine(_settle(sim))
    print(
        f"load and settle: wall {time.perf_counter() - began:.1f} s, "
        f"CPU {time.process_time() - cpu:.1f} s",
        file=sys.stderr,
    )
    gc.collect()
    gc.freeze()
    answers = []
    for i, loss in enumerate(losses):

        def trial(loss: Any = loss) -> dict[str, Any]:
            return _trial(sim, snapshot, loss, DEFAULT_CAP, False)

        answer, wall, cpu, faults = _forked(trial, args.profile, i)
        answers.append(answer)
        print(
            f"trial {i} {','.join(loss.nodes)}: wall {wall:.2f} s, CPU {cpu:.2f} s, "
            f"{faults} page faults (pages copied from the settled cluster, mostly); "
            f"rescheduled after {answer['rescheduledAfterSeconds']} s, "
            f"{len(answer['pending'])} pending, {len(answer['preemptions'])} preemptions",
            file=sys.stderr,
        )
    if args.answers:
        for answer in answers:
            answer.pop("wallSeconds")
        args.answers.write_text(json.dumps(answers, indent=1, sort_keys=True))


def _forked(run: Any, profile: Path | None, index: int) -> tuple[dict[str, Any], float, float, int]:
    read, write = os.pipe()
    began = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        answer = run()
        if profiler and profile:
            profiler.disable()
            profiler.dump_stats(str(profile / f"trial-{index}.prof"))
        with os.fdopen(write, "wb") as out:
            out.write(pickle.dumps(answer))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer_in:
        answer = pickle.loads(answer_in.read())
    _, _, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - began
    return answer, wall, usage.ru_utime + usage.ru_stime, usage.ru_minflt


if __name__ == "__main__":
    main()
