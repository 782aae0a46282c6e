"""`pinnace bench gym`: how many steps per second the research environment takes
(`pinnace.gym`), each a pod placed, on either engine: through the whole simulated cluster
(`--engine cluster`: API server, informers, the scheduler's PreFilter and Filter plugins
computing the mask, the bind, the node agent), or through the scheduler alone (`--engine
scheduler`: the same plugins computing the mask, the pods' lifecycles on the virtual clock).

The scenario: `nodes` nodes of 8 CPUs and 32Gi, and `pods` pods arriving by a Poisson process
at `rate` per second of simulated time (200 by default: a burst, so that the figure is the
steps' and not mostly the node agents' periodic work over the simulated time between them,
which `pinnace bench simulate` measures), each asking 100m and 256Mi, using a drawn 50-250m of
CPU and 64-256Mi of memory (`USAGE`), and running for a minute (so the cluster never fills and
every pod is a step). The agent picks uniformly among the
feasible nodes. Figures: steps, the wall time of the steps (not of building the cluster),
steps per second and the time per step, and the same over the process's CPU time (on a
machine shared with other work, the wall time counts theirs too). Of each step, the decision
itself — the scheduler's cycle up to the choice (PreFilter, Filter: the mask), the
observation, the reward measures, and finishing the cycle on the chosen node — is timed
apart: the rest is the simulated cluster's work for the pod (API writes, informers, the node
agent, events).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from pinnace.bench import Figure, render_table
from pinnace.gym.env import NodePlacementEnv
from pinnace.gym.episode import CLUSTER
from pinnace.scheduler.schedule_one import Pending
from pinnace.sim.scenario import Scenario, parse_scenario

NODE_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
USAGE = {
    "cpu": {"uniform": {"min": "50m", "max": "250m"}},
    "memory": {"uniform": {"min": "64Mi", "max": "256Mi"}},
}
"""What each pod uses, drawn: its CPU about its request, its memory within it."""
DEFAULT_NODES = (100, 5000)


def figures() -> tuple[Figure, ...]:
    return (
        Figure("nodes", "nodes"),
        Figure("steps", "steps"),
        Figure("wall_seconds", "wall time of the steps (s)"),
        Figure("steps_per_second", "steps per second"),
        Figure("ms_per_step", "time per step (ms)"),
        Figure("cpu_seconds", "CPU time of the steps (s)"),
        Figure("steps_per_cpu_second", "steps per CPU second"),
        Figure("decision_ms", "of a step, the decision (CPU ms)"),
        Figure("decisions_per_second", "decisions per CPU second"),
        Figure("reset_seconds", "reset: building the cluster (s)"),
    )


def scenario(nodes: int, pods: int, rate: float) -> Scenario:
    seconds = pods / rate
    return parse_scenario(
        {
            "apiVersion": "sim.pinnace.dev/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "gym-bench"},
            "spec": {
                "until": f"{seconds + 1:g}s",
                "cluster": {
                    "nodePools": [{"name": "pool", "count": nodes, "capacity": NODE_CAPACITY}]
                },
                "workloads": [
                    {
                        "name": "pods",
                        "template": {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {
                                        "name": "app",
                                        "image": "app:1",
                                        "resources": {
                                            "requests": {"cpu": "100m", "memory": "256Mi"}
                                        },
                                    }
                                ],
                            },
                        },
                        "arrivals": {"poisson": {"ratePerSecond": rate}},
                        "count": pods,
                        "runTime": {"constant": "1m"},
                        "usage": USAGE,
                    }
                ],
                "metrics": {"interval": "1h"},
            },
        },
        source="bench",
    )


def run(nodes: int, pods: int, rate: float, features: str, engine: str = CLUSTER) -> dict[str, Any]:
    env = NodePlacementEnv(
        scenario(nodes, pods, rate), reward="decima", features=features, engine=engine
    )
    rng = np.random.default_rng(0)
    try:
        began = time.perf_counter()
        _, info = env.reset(seed=1)
        reset = time.perf_counter() - began
        deciding = _time_decisions(env)
        steps, over = 0, False
        began, cpu = time.perf_counter(), time.process_time()
        while not over:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, _, over, info = env.step(action)
            steps += 1
        wall = time.perf_counter() - began
        cpu = time.process_time() - cpu
    finally:
        env.close()
    return {
        "engine": engine,
        "nodes": nodes,
        "steps": steps,
        "wall_seconds": round(wall, 2),
        "steps_per_second": round(steps / wall, 1) if wall > 0 else None,
        "ms_per_step": round(1000 * wall / steps, 3) if steps else None,
        "cpu_seconds": round(cpu, 2),
        "steps_per_cpu_second": round(steps / cpu, 1) if cpu > 0 else None,
        "decision_ms": round(1000 * deciding[0] / steps, 3) if steps else None,
        "decisions_per_second": round(steps / deciding[0], 1) if deciding[0] > 0 else None,
        "reset_seconds": round(reset, 2),
    }


def _time_decisions(env: NodePlacementEnv) -> list[float]:
    """Time the scheduler's cycles up to the choice and the episode's placing (observation,
    mask), as one span from the cycle's start to the placing's end, and the finishing (reward
    measures, assume, bind): CPU seconds, summed into the list. The scheduler's look at an
    empty queue (it wakes at every informer event) is no decision and is not timed: the
    process's CPU clock costs a system call, and timing those looks took 6 % of a step."""
    assert env.episode is not None
    episode, core = env.episode, env.episode.core
    queue, begin_one, place, finish = core.queue, core.begin_one, episode.place, episode._finish
    spent = [0.0]
    began = [0.0]

    def begin() -> Any:
        if not len(queue):
            return begin_one()
        began[0] = time.process_time()
        begun = begin_one()
        if not isinstance(begun, Pending):  # no placing follows
            spent[0] += time.process_time() - began[0]
        return begun

    def placing(*args: Any) -> Any:
        try:
            return place(*args)
        finally:
            spent[0] += time.process_time() - began[0]

    def finishing(*args: Any) -> Any:
        start = time.process_time()
        try:
            return finish(*args)
        finally:
            spent[0] += time.process_time() - start

    core.begin_one = begin  # type: ignore[method-assign]
    episode.place = placing  # type: ignore[method-assign,assignment]
    episode._finish = finishing  # type: ignore[method-assign,assignment]
    return spent


def render(results: list[dict[str, Any]], features: str, engine: str, as_json: bool) -> str:
    if as_json:
        return json.dumps(results)
    return render_table(
        f"Pinnace research environment benchmark (engine={engine}, features={features}, "
        "random feasible node)",
        figures(),
        {f"{r['nodes']} nodes": r for r in results},
    )
