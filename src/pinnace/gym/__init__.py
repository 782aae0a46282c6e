"""The research environment: scheduling decisions of a simulated cluster as a Gymnasium
environment, `pinnace/NodePlacement-v0` (registered on import), its reward components and
baselines (docs/research.md).

    import gymnasium
    import pinnace.gym  # registers the environment
    env = gymnasium.make("pinnace/NodePlacement-v0", scenario="scenario.yaml", reward="decima")

Gymnasium is the optional extra `pip install 'pinnace[gym]'`.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError as e:  # pragma: no cover - the extra is installed for the tests
    raise ImportError("pinnace.gym needs Gymnasium: pip install 'pinnace[gym]'") from e

from pinnace.gym.env import ENV_ID, NodePlacementEnv

__all__ = ["ENV_ID", "NodePlacementEnv"]

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="pinnace.gym.env:NodePlacementEnv")
