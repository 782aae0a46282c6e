"""A policy trained in pinnace.gym, saved as the examples save it, loaded by PolicyPick from its
file (`policy: {model: PATH, kind: ...}`) in an in-process ControlPlane on the virtual clock:
each pod goes where the model itself says on the environment's observation of the scheduler's
node table. The MaskablePPO case runs where the `rl` extra is installed (torch is not in the
test extra)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from tests.gym.scenarios import pod_template, scenario
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.gym.env import NodePlacementEnv
from pinnace.gym.observation import REQUESTS, Observer
from pinnace.gym.qtable import QTable
from pinnace.kubelet import node_configs
from pinnace.resources.names import CPU
from pinnace.scheduler.config import ConfigError, build_profiles, parse
from pinnace.scheduler.nodetable import CPU_COLUMN
from pinnace.scheduler.podinfo import PodInfo

PODS = catalog.kind("", "pods")
Choose = Callable[[dict[str, np.ndarray], np.ndarray], int]


def config(policy: str) -> str:
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    score:\n      disabled: [{name: '*'}]\n"
        "      enabled: [{name: PolicyPick}]\n"
        f"  pluginConfig:\n  - name: PolicyPick\n    args: {{policy: {policy}}}\n"
    )


def body(name: str, cpu: str) -> dict[str, Any]:
    container = {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [container]}}


def places_as_the_model_says(policy: str, choose: Choose, max_nodes: int, cpus: list[str]) -> None:
    """Pods of `cpus` one at a time on three nodes of 4 cpu: each lands on the node `choose`
    picks on the environment's observation of the scheduler's table just before."""
    options = ClusterOptions(nodes=node_configs(3), seed=1, scheduler_config=parse(config(policy)))
    cluster = SimulatedCluster(options)
    observer = Observer(REQUESTS, max_nodes)
    try:
        assert cluster.plane.scheduler is not None
        table = cluster.plane.scheduler.core.table
        for i, cpu in enumerate(cpus):
            pod = body(f"p{i}", cpu)
            info = PodInfo.from_pod(pod)
            observation = observer.observe(table, info, None)
            mask = np.zeros(max_nodes, bool)
            free = table.allocatable[:, CPU_COLUMN] - table.requested[:, CPU_COLUMN]
            mask[: len(table)] = free >= info.requests[CPU]
            expected = table.names[choose(observation, mask)]
            cluster.run(cluster.client.create(PODS, "default", pod))
            cluster.wait(1)
            placed = cluster.run(cluster.client.get(PODS, "default", f"p{i}"))["spec"]["nodeName"]
            assert placed == expected, f"pod {i}"
    finally:
        cluster.close()


def test_a_saved_q_table_places_pods_as_it_chooses(tmp_path: Path) -> None:
    table = QTable(np.random.default_rng(7).normal(size=QTable().values.shape))
    path = tmp_path / "table.npy"
    table.save(path)
    places_as_the_model_says(
        f"{{model: '{path}', kind: q-table}}",
        lambda observation, mask: table.best(observation, mask),
        3,
        ["900m", "1500m", "300m", "900m", "2", "700m", "1"],
    )


def test_a_saved_maskable_ppo_model_places_pods_as_it_predicts(tmp_path: Path) -> None:
    sb3_contrib = pytest.importorskip("sb3_contrib", reason="the rl extra is not installed")
    pool = {"name": "pool", "count": 3, "capacity": {"cpu": "4", "memory": "8Gi"}}
    workload = {
        "name": "web",
        "template": pod_template("900m", "64Mi"),
        "arrivals": {"poisson": {"ratePerMinute": 6}},
        "runTime": {"exponential": {"mean": "5m"}},
    }
    env = NodePlacementEnv(scenario([pool], [workload], until="5m"), "packing", REQUESTS)
    model = sb3_contrib.MaskablePPO(
        "MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0
    )
    model.learn(total_timesteps=64)
    env.close()
    model.save(tmp_path / "ppo")
    trained_on_both = f"{{model: '{tmp_path / 'ppo.zip'}', kind: maskable-ppo, features: both}}"
    with pytest.raises(ConfigError, match=r'policy\.features: Invalid value: "both": the model'):
        build_profiles(parse(config(trained_on_both)), print)

    def predict(observation: dict[str, np.ndarray], mask: np.ndarray) -> int:
        action, _ = model.predict(observation, action_masks=mask, deterministic=True)
        return int(action)

    places_as_the_model_says(
        f"{{model: '{tmp_path / 'ppo.zip'}', kind: maskable-ppo}}",
        predict,
        3,
        ["900m", "1500m", "300m", "900m", "2", "700m"],
    )


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("{model: /nowhere.npy, kind: q-table}", 'policy.model: Invalid value: "/nowhere.npy"'),
        ("{model: m.npy, kind: dqn}", 'policy.kind: Unsupported value: "dqn"'),
        ("{model: m.npy, kind: q-table, features: both}", 'policy.features: Invalid value: "both"'),
        ("{kind: q-table}", "policy.model: Required value"),
    ],
)
def test_bad_model_arguments_name_their_field(policy: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_profiles(parse(config(policy)), print)


def test_without_the_rl_extra_maskable_ppo_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)  # its import fails
    with pytest.raises(ConfigError, match=r"pip install 'pinnace\[rl\]'"):
        build_profiles(parse(config("{model: m.zip, kind: maskable-ppo}")), print)


def test_a_scenario_finds_its_model_beside_it_from_any_working_directory(tmp_path: Path) -> None:
    """`policy.model: table.npy` beside the scenario file, as its policy module would be: the
    simulation runs from another directory, where no table.npy is."""
    QTable().save(tmp_path / "table.npy")
    schedule = yaml.safe_load(config("{model: table.npy, kind: q-table}"))
    pool = {"name": "pool", "count": 2, "capacity": {"cpu": "2", "memory": "4Gi"}}
    workload = {
        "name": "web",
        "template": pod_template("500m", "512Mi"),
        "arrivals": {"poisson": {"ratePerMinute": 30}},
        "runTime": {"exponential": {"mean": "1m"}},
    }
    document = scenario([pool], [workload], until="1m")
    document["spec"]["cluster"]["schedulerConfig"] = schedule
    file = tmp_path / "scenario.yaml"
    file.write_text(yaml.safe_dump(document))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "pinnace.cli.main", "simulate", str(file), "--json"],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["pods"]["scheduled"] > 0
