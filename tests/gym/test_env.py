"""pinnace/NodePlacement-v0: the mask is Filter's verdict, episodes are reproducible, the
environment passes Gymnasium's checker, and the rewards add up as documented."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from tests.gym.scenarios import pod_template, random_cluster, scenario

import pinnace.gym
from pinnace.gym.env import NodePlacementEnv
from pinnace.scheduler.framework import CycleState


def filter_verdicts(env: NodePlacementEnv) -> np.ndarray:
    """Each node's verdict, asked of every Filter plugin one node at a time (the way
    `pinnace scheduler explain` asks), after PreFilter on a fresh cycle state."""
    assert env.episode is not None and env.episode.decision is not None
    pending = env.episode.decision.pending
    table, profile, pod = env.episode.core.table, pending.profile, pending.pod
    state = CycleState()
    assert profile.run_pre_filter(state, pod, table).is_success()
    plugins = [p for p in profile.filter if p.name not in state.skip_filter_plugins]
    verdicts = np.zeros(env.max_nodes, bool)
    for i in range(len(table)):
        verdicts[i] = all(p.node_status(state, pod, table, i).is_success() for p in plugins)
    return verdicts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_mask_is_the_filter_plugins_verdict_on_random_clusters(seed: int) -> None:
    env = NodePlacementEnv(random_cluster(seed), features="requests")
    rng = np.random.default_rng(seed)
    try:
        _, info = env.reset(seed=seed)
        steps = refused = 0
        over = False
        while not over:
            mask = info["action_mask"]
            assert np.array_equal(mask, env.action_masks())
            assert np.array_equal(mask, filter_verdicts(env))
            refused += int(np.count_nonzero(~mask[: len(info["node_names"])]))
            _, _, _, over, info = env.step(int(rng.choice(np.flatnonzero(mask))))
            steps += 1
    finally:
        env.close()
    assert steps > 10
    assert refused > 0  # the filters did reject nodes


def test_registered_on_import_and_passes_the_checker() -> None:
    assert pinnace.gym.ENV_ID in gymnasium.registry
    env = gymnasium.make(pinnace.gym.ENV_ID, scenario=random_cluster(4), reward="decima+packing")
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_a_made_environment_s_mask_is_reached_as_documented() -> None:
    """gymnasium.make wraps the environment, and its wrappers forward no method:
    `action_masks` is reached through `unwrapped` or `get_wrapper_attr`."""
    env = gymnasium.make(pinnace.gym.ENV_ID, scenario=random_cluster(4))
    try:
        _, info = env.reset(seed=1)
        assert np.array_equal(env.unwrapped.action_masks(), info["action_mask"])  # type: ignore[attr-defined]
        assert np.array_equal(env.get_wrapper_attr("action_masks")(), info["action_mask"])
    finally:
        env.close()


def run_episode(env: NodePlacementEnv, seed: int) -> list[Any]:
    """Observations, rewards and masks of an episode placing each pod on its first feasible
    node."""
    trace: list[Any] = []
    observation, info = env.reset(seed=seed)
    over = False
    while not over:
        trace.append((observation, info["action_mask"], info["pod"]))
        action = int(np.flatnonzero(info["action_mask"])[0])
        observation, reward, _, over, info = env.step(action)
        trace.append(reward)
    return trace


def same(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, tuple):
            obs_x, mask_x, pod_x = x
            obs_y, mask_y, pod_y = y
            if pod_x != pod_y or not np.array_equal(mask_x, mask_y):
                return False
            if any(not np.array_equal(obs_x[k], obs_y[k]) for k in obs_x):
                return False
        elif x != y:
            return False
    return True


def test_the_same_seed_gives_the_same_episode() -> None:
    env = NodePlacementEnv(random_cluster(5), reward={"decima": 1.0, "balance": 2.0})
    try:
        first, again, other = run_episode(env, 7), run_episode(env, 7), run_episode(env, 8)
    finally:
        env.close()
    assert len(first) > 10
    assert same(first, again)
    assert not same(first, other)


def two_pods_on_two_nodes() -> dict[str, Any]:
    """Two nodes of 4 CPUs, two pods of 1 CPU made at time zero, running until the end."""
    pods = [
        {
            **pod_template("1", "1Gi"),
            "metadata": {"name": name, "namespace": "default"},
        }
        for name in ("p1", "p2")
    ]
    pool = {"name": "n", "count": 2, "capacity": {"cpu": "4", "memory": "8Gi"}}
    return scenario([pool], [], until="60s", objects=pods)


@pytest.mark.parametrize(("rows", "opened"), [((0, 0), 1), ((0, 1), 2)])
def test_rewards_of_a_hand_worked_episode(rows: tuple[int, int], opened: int) -> None:
    env = NodePlacementEnv(
        two_pods_on_two_nodes(), reward={"packing": 1.0, "decima": 0.5}, all_components=True
    )
    try:
        _, info = env.reset(seed=1)
        times, totals = [], dict.fromkeys(info["reward_components"], 0.0)
        rewards = []
        for row in rows:
            times.append(info["time"])
            _, reward, _, over, info = env.step(row)
            rewards.append(reward)
            for name, value in info["reward_components"].items():
                totals[name] += value
        assert over
        assert env.episode is not None
        allocatable_memory = int(env.episode.core.table.allocatable[0, 1])
    finally:
        env.close()
    first, second = times
    # Pods in the system: 1 from the first decision to the second, 2 from then to the end.
    decima = -(1 * (second - first) + 2 * (60 - second))
    assert totals["packing"] == -opened
    assert totals["decima"] == pytest.approx(decima)
    assert totals["pending"] == pytest.approx(-(second - first))  # p2 waits for its turn
    assert totals["evictions"] == 0
    # 1 CPU, 1Gi on one of two nodes of 4 CPUs: requested / allocatable is (1/4, 0) for cpu
    # and (m, 0) for memory (m = 1Gi / the node's allocatable memory), standard deviations 1/8
    # and m/2. Spread, the second pod evens it out again; packed, it doubles it.
    m = 2**30 / allocatable_memory
    assert totals["balance"] == pytest.approx(0.0 if opened == 2 else -(1 / 4 + m) / 2)
    assert sum(rewards) == pytest.approx(-opened + 0.5 * decima)


def test_an_action_outside_the_mask_fails_the_cycle_and_the_pod_waits() -> None:
    pool = {"name": "n", "count": 2, "capacity": {"cpu": "1", "memory": "8Gi"}}
    big = {**pod_template("800m", "1Gi"), "metadata": {"name": "big", "namespace": "default"}}
    env = NodePlacementEnv(scenario([pool], [], until="60s", objects=[big]))
    try:
        _, info = env.reset(seed=1)
        assert info["pod"] == "default/big"
        _, _, _, over, info = env.step(5)  # no such node
        assert info["invalid_action"] and not over
        assert info["pod"] == "default/big"  # asked again after its backoff
        assert info["time"] > 0
        _, _, _, over, info = env.step(0)
        assert not info["invalid_action"]
    finally:
        env.close()


def test_more_nodes_than_max_nodes_is_an_error_not_an_empty_episode() -> None:
    pool = {"name": "n", "count": 3, "capacity": {"cpu": "1", "memory": "8Gi"}}
    pod = {**pod_template("100m", "1Gi"), "metadata": {"name": "p", "namespace": "default"}}
    env = NodePlacementEnv(scenario([pool], [], until="60s", objects=[pod]), max_nodes=2)
    try:
        with pytest.raises(ValueError, match=r"the cluster has 3 nodes, more than .* \(2\)"):
            env.reset(seed=1)
    finally:
        env.close()


def test_a_scenario_without_a_pod_to_place_is_an_error_at_reset() -> None:
    """Gymnasium's reset returns the first observation to act on: a scenario whose pods all
    come after its `until` has none, for any seed, and says so rather than starting over."""
    pool = {"name": "n", "count": 2, "capacity": {"cpu": "1", "memory": "8Gi"}}
    late = {
        "name": "late",
        "template": pod_template("100m", "1Gi"),
        "arrivals": {"every": "1m"},
        "start": "5m",
    }
    env = NodePlacementEnv(scenario([pool], [late], until="2m"))
    try:
        message = r"scenario gym-test: no pod to place before spec.until \(2m00s\) with seed 4"
        with pytest.raises(ValueError, match=message):
            env.reset(seed=4)
        assert env.episode is None  # closed, not left running
    finally:
        env.close()


def test_an_episode_s_cluster_is_freed_by_the_next_reset() -> None:
    thresholds = gc.get_threshold()
    env = NodePlacementEnv(two_pods_on_two_nodes())
    try:
        env.reset(seed=1)
        assert env.episode is not None
        first = weakref.ref(env.episode.sim)
        env.reset(seed=2)
        assert first() is None
    finally:
        env.close()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds  # the caller's, as before the episode


def test_an_episode_replays_a_trace_its_nodes_and_gpu_requests_filtered() -> None:
    trace = Path(__file__).parents[1] / "sim" / "traces" / "alibaba-gpu-2023"
    replay = scenario([], [], until="2h")
    replay["spec"]["workloads"] = [
        {"name": "openb", "trace": {"format": "alibaba-gpu-2023", "path": str(trace)}}
    ]
    env = NodePlacementEnv(replay, features="requests", max_nodes=16)
    try:
        _, info = env.reset(seed=1)
        pods, over = [], False
        while not over:
            assert np.array_equal(info["action_mask"], filter_verdicts(env))
            pods.append(info["pod"])
            _, _, _, over, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    finally:
        env.close()
    assert len(pods) >= 3
    assert all(pod.startswith("default/openb-") for pod in pods)


def test_oom_kills_cost_one_each() -> None:
    leaky = pod_template("100m", "128Mi")
    leaky["spec"]["containers"][0]["resources"]["limits"] = {"memory": "128Mi"}
    workload = {
        "name": "leaky",
        "template": leaky,
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "count": 3,
        "usage": {"memory": "256Mi"},  # twice its limit: OOM-killed once started
    }
    pool = {"name": "pool", "count": 2, "capacity": {"cpu": "4", "memory": "8Gi"}}
    env = NodePlacementEnv(scenario([pool], [workload], until="3m"), reward="evictions")
    try:
        _, info = env.reset(seed=1)
        returns, over = 0.0, False
        while not over:
            _, reward, _, over, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            returns += reward
    finally:
        env.close()
    assert returns == -3.0


@pytest.mark.parametrize("engine", ["cluster", "scheduler"])
def test_an_episode_whose_last_decision_falls_at_its_end_closes(engine: str) -> None:
    """Two pods arrive at `until` itself: the second's cycle runs while the episode closes,
    and must not pause the loop stopping it."""
    pool = {"name": "pool", "count": 1, "capacity": {"cpu": "8", "memory": "8Gi"}}
    workloads = [
        {
            "name": name,
            "template": pod_template("100m", "64Mi"),
            "arrivals": {"every": "60s"},
            "runTime": {"constant": "10s"},
        }
        for name in ("a", "b")
    ]
    env = NodePlacementEnv(
        scenario([pool], workloads, until="2m"), features="requests", engine=engine
    )
    _, info = env.reset(seed=1)
    over, steps = False, []
    while not over:
        _, _, _, over, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        steps.append((info["pod"], info["time"]))
    env.close()
    assert steps[-2:] == [("default/a-3", 120.0), (None, 120.0)]
