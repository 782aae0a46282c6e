"""`pinnace/NodePlacement-v0`: the Gymnasium environment over the simulation.

    import gymnasium, pinnace.gym
    env = gymnasium.make("pinnace/NodePlacement-v0", scenario="examples/research/usage.yaml",
                         reward={"decima": 1e-3, "packing": 1}, features="both")
    observation, info = env.reset(seed=1)
    while True:
        action = policy(observation, info["action_mask"])
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break

An episode is the scenario (the files `pinnace simulate` runs, trace replay included) from its
start to its `until`, on the virtual clock, with `reset(seed=s)`'s seed as the simulation's:
the same seed gives the same episode, observation for observation. `engine="scheduler"` runs
it on the scheduler alone (`pinnace.gym.scheduler_only`): the same episode, several times
quicker, for the scenarios that engine runs. A step is a pod the
scheduler would place: the action is the row of its node in the observation, among the
feasible ones, `info["action_mask"]` (also `action_masks()`, as sb3-contrib's MaskablePPO
asks): exactly the nodes that pass the profile's PreFilter and Filter plugins. The reward is
the weighted sum of the components `reward` chooses (`pinnace.gym.rewards`), accrued from this
decision to the next; `info["reward_components"]` has them all (the decision components
`reward` does not weigh are not measured, 0, unless `all_components=True`). An action outside
the mask fails the cycle as a scheduler error would (`info["invalid_action"]`): the pod is not
placed and is retried after a backoff, its waiting counted by the time components. The episode ends
(`truncated`) at the scenario's `until`; the last observation then has no node. A scenario
that gives no pod to place before its `until` (with the seed `reset` was given) has no first
observation: `reset` raises a ValueError naming the scenario and the seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from pinnace.gym import rewards
from pinnace.gym.episode import CLUSTER, Episode, check_engine
from pinnace.gym.observation import BOTH, Observer
from pinnace.gym.observation import spaces as observation_spaces
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.sim.scenario import Scenario, load_scenario, parse_scenario
from pinnace.sim.summary import duration

ENV_ID = "pinnace/NodePlacement-v0"


def scenario_of(scenario: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, str | Path):
        return load_scenario(scenario)
    return parse_scenario(dict(scenario))


class NodePlacementEnv(gymnasium.Env[dict[str, np.ndarray], np.int64]):
    """See the module's docstring. `max_nodes` (the scenario's nodes at the start by
    default) fixes the observation's rows and the actions; `scheduler_config` replaces the
    scenario's scheduler configuration (its Filter plugins make the mask); `all_components`
    measures the decision components `reward` does not weigh too (they are 0 otherwise);
    `engine` runs the episodes on every component of `pinnace up` ("cluster") or on the
    scheduler alone ("scheduler", `pinnace.gym.scheduler_only`: several times quicker, for
    scenarios of node pools, Pod generators and the objects it holds, their memory usage
    within the requests)."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - Env declares it so

    def __init__(
        self,
        scenario: Scenario | str | Path | Mapping[str, Any],
        reward: str | Iterable[str] | Mapping[str, float] | None = None,
        features: str = BOTH,
        max_nodes: int | None = None,
        scheduler_config: SchedulerConfiguration | None = None,
        all_components: bool = False,
        engine: str = CLUSTER,
    ) -> None:
        self.scenario = scenario_of(scenario)
        if self.scenario.until is None:
            raise ValueError(f"scenario {self.scenario.name}: an episode needs spec.until")
        self.weights = rewards.weights(reward)
        self.max_nodes = max_nodes or max(1, len(self.scenario.cluster.nodes))
        self.observer = Observer(features, self.max_nodes)
        check_engine(engine)
        self.engine = engine
        self.scheduler_config = scheduler_config
        self.measured = rewards.COMPONENTS if all_components else tuple(self.weights)
        self.observation_space = observation_spaces(self.observer)
        self.action_space = spaces.Discrete(self.max_nodes)
        self.episode: Episode | None = None
        self._mask = np.zeros(self.max_nodes, bool)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31))
        if self.episode is not None:
            self.episode.close()
            self.episode = None  # free to be collected while the next one is made
        self.episode = Episode(
            self.scenario,
            seed,
            agent=True,
            observer=self.observer,
            max_nodes=self.max_nodes,
            scheduler_config=self.scheduler_config,
            measured=self.measured,
            engine=self.engine,
        )
        observation, over = self._advance()
        if over:
            # Gymnasium's reset returns the first observation to act on; there is none.
            self.close()
            raise ValueError(
                f"scenario {self.scenario.name}: no pod to place before spec.until "
                f"({duration(self.scenario.until or 0)}) with seed {seed}: an episode needs at "
                "least one"
            )
        info = self._info(self.episode.take_accrued())
        return observation, info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        if self.episode.decision is None:
            raise RuntimeError("the episode is over: call reset()")
        invalid = not self._mask[int(action)] if 0 <= int(action) < self.max_nodes else True
        self.episode.decide(int(action))
        observation, over = self._advance()
        components = self.episode.take_accrued()
        reward = rewards.total(components, self.weights)
        return observation, reward, False, over, self._info(components, invalid)

    def action_masks(self) -> np.ndarray:
        """The feasible nodes of the pod to place (sb3-contrib's MaskablePPO calls this)."""
        return self._mask.copy()

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()
            self.episode = None

    def _advance(self) -> tuple[dict[str, np.ndarray], bool]:
        assert self.episode is not None
        decision = self.episode.advance()
        if decision is None:
            self._mask = np.zeros(self.max_nodes, bool)
            return self.observer.empty(), True
        assert decision.observation is not None
        self._mask = decision.mask
        return decision.observation, False

    def _info(self, components: Mapping[str, float], invalid: bool = False) -> dict[str, Any]:
        assert self.episode is not None
        decision = self.episode.decision
        return {
            "action_mask": self._mask.copy(),
            "reward_components": {name: components.get(name, 0.0) for name in rewards.COMPONENTS},
            "pod": decision.pending.pod.key if decision is not None else None,
            "time": self.episode.sim.elapsed,
            "node_names": self.observer.row_names
            if decision is not None
            else tuple(self.episode.core.table.names),
            "invalid_action": invalid,
        }
