"""Policies trained in pinnace.gym, loaded from their saved files to run in the scheduler:
PolicyScore and PolicyPick's `policy: {model: PATH, kind: KIND, features: FEATURES}`.

Each decision builds the observation the environment builds (`pinnace.gym.observation`, of
the whole node table, rows in the table's order) and the action mask (the nodes that passed
every Filter plugin), asks the model for a node row, and answers one-hot over the feasible
nodes, so a policy trained in simulation places pods live unchanged. The kinds:

- `maskable-ppo`: a MaskablePPO model saved with `model.save(PATH)` (sb3-contrib, as
  examples/research/maskable_ppo.py saves it), asked for its deterministic action; its
  observation space fixes `max_nodes` and, unless `features` names them, the features it
  trained on (each set makes a different number of columns). Needs the `rl` extra.
- `q-table`: a `pinnace.gym.qtable.QTable` saved with `save(PATH)` (examples/research/
  qlearning.py), greedy, the first of equally valued nodes; its observation is `requests`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from pinnace.gym.observation import FEATURE_SETS, Observer
from pinnace.gym.qtable import FEATURES as QTABLE_FEATURES
from pinnace.gym.qtable import QTable
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.podinfo import PodInfo

MASKABLE_PPO, Q_TABLE = "maskable-ppo", "q-table"
KINDS = (MASKABLE_PPO, Q_TABLE)
RL_EXTRA = "pip install 'pinnace[rl]'"


class Chooser(Protocol):
    def __call__(self, observation: dict[str, np.ndarray], mask: np.ndarray) -> int: ...


class LearnedPolicy:
    """A saved model as a scheduling policy: `pick` answers one-hot over `nodes`. Its
    observations have `max_nodes` rows (None: as many as the table has nodes)."""

    def __init__(self, choose: Chooser, features: str, max_nodes: int | None) -> None:
        self.choose = choose
        self.max_nodes = max_nodes
        self.observer = Observer(features, max_nodes or 1)

    def pick(
        self,
        table: NodeTable,
        pod: PodInfo,
        nodes: np.ndarray,
        forecast: tuple[float, float] | None,
    ) -> np.ndarray:
        if self.max_nodes is None and len(table) > self.observer.max_nodes:
            self.observer = Observer(self.observer.features, len(table))
        observation = self.observer.observe(table, pod, forecast)
        mask = np.zeros(self.observer.max_nodes, bool)
        mask[nodes] = True
        row = int(self.choose(observation, mask))
        positions = np.flatnonzero(nodes == row)
        if len(positions) != 1:
            raise ValueError(f"the model chose node row {row}, not a feasible node")
        scores = np.zeros(len(nodes))
        scores[positions[0]] = 1.0
        return scores


def load_model(spec: Mapping[str, Any]) -> LearnedPolicy:
    """The model `spec` names (`model`, `kind`, `features`), or a ValueError naming the
    field."""
    path = spec.get("model")
    if not isinstance(path, str) or not path:
        raise ValueError("policy.model: Required value: the path of a saved model")
    kind = spec.get("kind")
    if kind not in KINDS:
        supported = ", ".join(f'"{k}"' for k in KINDS)
        raise ValueError(f'policy.kind: Unsupported value: "{kind}": supported values: {supported}')
    features = spec.get("features", QTABLE_FEATURES if kind == Q_TABLE else None)
    if features is not None and features not in FEATURE_SETS:
        supported = ", ".join(f'"{f}"' for f in FEATURE_SETS)
        raise ValueError(
            f'policy.features: Unsupported value: "{features}": supported values: {supported}'
        )
    if kind == Q_TABLE:
        if features != QTABLE_FEATURES:
            raise ValueError(
                f'policy.features: Invalid value: "{features}": a q-table observes '
                f'"{QTABLE_FEATURES}"'
            )
        return _q_table(path)
    return _maskable_ppo(path, features)


def _q_table(path: str) -> LearnedPolicy:
    try:
        table = QTable.load(path)
    except (OSError, ValueError) as e:
        raise ValueError(f'policy.model: Invalid value: "{path}": {e}') from None
    # The table does not depend on the node count: a row for every node of the table.
    return LearnedPolicy(
        lambda observation, mask: table.best(observation, mask), QTABLE_FEATURES, None
    )


def _maskable_ppo(path: str, features: str | None) -> LearnedPolicy:
    try:
        from sb3_contrib import MaskablePPO
    except ImportError:
        raise ValueError(
            f'policy.kind: Invalid value: "{MASKABLE_PPO}": needs torch, stable-baselines3 and '
            f"sb3-contrib: {RL_EXTRA}"
        ) from None
    try:
        model = MaskablePPO.load(path, device="cpu")
    except Exception as e:  # a missing file, or one that is no saved model, fails in many ways
        raise ValueError(
            f'policy.model: Invalid value: "{path}": not a MaskablePPO model: '
            f"{type(e).__name__}: {e}"
        ) from None
    space = model.observation_space
    nodes_space = getattr(space, "spaces", {}).get("nodes")
    if nodes_space is None:
        raise ValueError(f'policy.model: Invalid value: "{path}": not trained in pinnace.gym')
    max_nodes, width = nodes_space.shape
    columns = {f: len(Observer(f, max_nodes).node_columns) for f in FEATURE_SETS}
    if features is None:
        features = next((f for f, n in columns.items() if n == width), None)
        if features is None:
            raise ValueError(
                f'policy.model: Invalid value: "{path}": its observation has {width} node '
                f"columns, which no feature set makes"
            )
    elif width != columns[features]:
        raise ValueError(
            f'policy.features: Invalid value: "{features}": the model observes {width} node '
            f'columns, "{features}" makes {columns[features]}'
        )

    def choose(observation: dict[str, np.ndarray], mask: np.ndarray) -> int:
        action, _ = model.predict(observation, action_masks=mask, deterministic=True)
        return int(action)

    return LearnedPolicy(choose, features, max_nodes)
