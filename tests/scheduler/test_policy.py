"""PolicyScore and PolicyPick: the feature arrays a policy gets, how its answer becomes scores,
what a failing policy does, and a packing policy placing pods in a simulated cluster (the same
ControlPlane `pinnace simulate` runs; tests/http/test_policy_e2e.py runs it in `pinnace up`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions
from pinnace.forecast import UsageHistory
from pinnace.kubelet import node_configs
from pinnace.scheduler import CycleState, NodeTable, PodInfo, Profile, Scheduler, Status
from pinnace.scheduler.config import ConfigError, build_profiles, parse
from pinnace.scheduler.explain import explain
from pinnace.scheduler.framework import Code
from pinnace.scheduler.plugins import DefaultBinder, PrioritySort
from pinnace.scheduler.plugins.policy import (
    NODE_FEATURES,
    POD_FEATURES,
    PolicyPick,
    PolicyScore,
)

PODS = catalog.kind("", "pods")

POLICIES = '''
import numpy as np

seen = []


def pack(pod, nodes):
    """Most requested first: the share of each node's cpu that is requested."""
    return nodes[:, 2] / nodes[:, 0]


def record(pod, nodes):
    seen.append((pod, nodes))
    return np.arange(len(nodes))


def last(pod, nodes):
    return len(nodes) - 1


def broken(pod, nodes):
    raise RuntimeError("the model is not trained")


def short(pod, nodes):
    return [1.0]
'''


@pytest.fixture
def policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "toy_policies.py").write_text(POLICIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    import toy_policies  # type: ignore[import-not-found]

    toy_policies.seen.clear()
    return toy_policies


def node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "10"}
    return {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": resources}}


def pod(name: str, cpu: str, memory: str = "64Mi", node_name: str = "") -> PodInfo:
    container = {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    spec: dict[str, Any] = {"containers": [container], "priority": 7}
    if node_name:
        spec["nodeName"] = node_name
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def table() -> NodeTable:
    table = NodeTable()
    table.add_node(node("a", "4", "8Gi"))
    table.add_node(node("b", "2", "4Gi"))
    table.add_node(node("c", "8", "16Gi"))
    table.add_pod(pod("old", "1", "1Gi", "b"), "b")
    table.track_usage(60, 30, lambda: 0.0)
    table.record_usage(0.0, {"a": (100, 1e9), "b": (900, 2e9)})
    table.record_usage(30.0, {"a": (300, 1e9), "b": (1100, 2e9)})
    return table


def run(plugin: PolicyScore, incoming: PodInfo, nodes: list[int]) -> tuple[Status, Any]:
    """The plugin's scores through its profile's Score run: the status, the scores."""
    profile = Profile([PrioritySort(), plugin, DefaultBinder(print)], {plugin.name: 1})
    scores, status = profile.run_score(CycleState(), incoming, table(), np.array(nodes))
    return status, None if scores is None else scores.tolist()


def test_the_policy_gets_the_pod_and_the_feasible_nodes_features(policies: Any) -> None:
    plugin = PolicyScore({"policy": "toy_policies:record"})
    history = UsageHistory()
    history.record(0.0, [("default/Pod/new", 250.0, 1e8)])
    plugin.workload_usage = history
    assert run(plugin, pod("new", "500m", "256Mi"), [1, 0])[1] == [0, 100]
    ((pod_features, node_features),) = policies.seen
    assert dict(zip(POD_FEATURES, pod_features.tolist(), strict=True)) == {
        "request_cpu": 500,
        "request_memory": 256 * 2**20,
        "forecast_cpu": 250,
        "forecast_memory": 1e8,
        "priority": 7,
    }
    b, a = (dict(zip(NODE_FEATURES, row, strict=True)) for row in node_features.tolist())
    assert b == {
        "allocatable_cpu": 2000,
        "allocatable_memory": 4 * 2**30,
        "requested_cpu": 1000,
        "requested_memory": 2**30,
        "allocatable_pods": 10,
        "pods": 1,
        "usage_cpu": 1000,
        "usage_memory": 2e9,
        "usage_cpu_std": 100,
        "usage_memory_std": 0,
        "usage_samples": 2,
        "usage_cpu_forecast": pytest.approx(960),  # 0.7 x 900, then 0.3 x 1100
        "usage_memory_forecast": 2e9,
    }
    assert (a["requested_cpu"], a["usage_cpu"], a["usage_cpu_std"]) == (0, 200, 100)


def test_without_history_the_forecast_is_nan(policies: Any) -> None:
    plugin = PolicyScore({"policy": "toy_policies:record"})
    run(plugin, pod("new", "1"), [0])
    assert np.isnan(policies.seen[0][0][2:4]).all()


def test_holt_winters_forecasts_nan_until_two_seasons_of_history(policies: Any) -> None:
    """A workload with some history but less than two seasons has no seasonal forecast yet:
    the policy gets NaN, the cycle does not fail."""
    plugin = PolicyScore(
        {"policy": "toy_policies:record", "forecast": "holt-winters", "seasonLength": 4}
    )
    history = UsageHistory()
    plugin.workload_usage = history
    for t in range(8):
        history.record(30.0 * t, [("default/Pod/new", 100.0 + 50 * (t % 4), 1e8)])
        status, _ = run(plugin, pod("new", "1"), [0, 1])
        assert status.code == Code.SUCCESS, status.message
    forecasts = [features[2:4] for features, _ in policies.seen]
    assert all(np.isnan(f).all() for f in forecasts[:7])
    assert np.isfinite(forecasts[7]).all()


def test_scores_are_scaled_to_0_100_and_pick_gives_one_node_everything(policies: Any) -> None:
    # b has half its cpu requested, a and c none.
    assert run(PolicyScore({"policy": "toy_policies:pack"}), pod("p", "1"), [0, 1, 2])[1] == [
        0,
        100,
        0,
    ]
    pick = PolicyPick({"policy": "toy_policies:pack"})
    assert run(pick, pod("p", "1"), [0, 1, 2])[1] == [0, 100, 0]
    assert run(pick, pod("p", "1"), [0, 2])[1] == [100, 0]  # equals: the first
    assert run(PolicyPick({"policy": "toy_policies:last"}), pod("p", "1"), [0, 1, 2])[1] == [
        0,
        0,
        100,
    ]
    assert PolicyScore({"policy": "toy_policies:last", "mode": "pick"}).mode == "pick"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (
            "toy_policies:broken",
            'running Score plugins: plugin "PolicyScore" failed with: running policy '
            '"toy_policies:broken": RuntimeError: the model is not trained',
        ),
        (
            "toy_policies:short",
            'running Score plugins: plugin "PolicyScore" failed with: running policy '
            '"toy_policies:short": ValueError: expected 3 finite scores, got (1,) float64',
        ),
    ],
)
def test_a_failing_policy_fails_the_cycle_with_a_scheduler_error(
    policies: Any, policy: str, message: str
) -> None:
    status, _ = run(PolicyScore({"policy": policy}), pod("p", "1"), [0, 1, 2])
    assert (status.code, status.message) == (Code.ERROR, message)


def config(args: str) -> str:
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    score:\n      disabled: [{name: '*'}]\n"
        "      enabled: [{name: PolicyPick}]\n"
        f"  pluginConfig:\n  - name: PolicyPick\n    args: {args}\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "{}",
            ': Invalid value: "PolicyPick": policy: Required value: '
            "module:function of the policy, or {model, kind}",
        ),
        (
            "{policy: 5}",
            ".policy: Invalid value: 5: must be module:function, or {model, kind}",
        ),
        (
            "{policy: no_such_module:fn}",
            '.policy: Invalid value: "no_such_module:fn": cannot import no_such_module: '
            "ModuleNotFoundError: No module named 'no_such_module'",
        ),
        (
            "{policy: 'toy_policies:missing'}",
            '.policy: Invalid value: "toy_policies:missing": toy_policies has no function missing',
        ),
        (
            "{policy: 'toy_policies:pack', mode: best}",
            '.mode: Unsupported value: "best": supported values: "score", "pick"',
        ),
        (
            "{policy: 'toy_policies:pack', forecast: holt-winters}",
            ".seasonLength: Invalid value: 0: forecast holt-winters needs a season of at least "
            "2 samples",
        ),
        (
            "{policy: 'toy_policies:pack', forecast: holt-winters, seasonLength: x}",
            ".seasonLength: Invalid value: 'x': forecast holt-winters needs a season of at "
            "least 2 samples",
        ),
    ],
)
def test_bad_arguments_name_their_field(policies: Any, args: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        build_profiles(parse(config(args)), lambda binding: None)
    assert str(raised.value) == f"profiles[0].pluginConfig[0].args{message}"


def test_a_packing_policy_places_pods_in_a_simulated_cluster(policies: Any) -> None:
    """900m pods on three nodes of 4 cores: four fill pinnace-node-1, the fifth does not fit
    there and goes to the next, then the sixth packs it too."""
    options = ClusterOptions(
        nodes=node_configs(3),
        seed=2,
        scheduler_config=parse(config("{policy: 'toy_policies:pack'}")),
    )
    cluster = SimulatedCluster(options)
    try:
        for i in range(6):
            body = {
                "metadata": {"name": f"p{i}"},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "900m"}}}
                    ]
                },
            }
            cluster.run(cluster.client.create(PODS, "default", body))
            cluster.wait(1)
        placed = [
            cluster.run(cluster.client.get(PODS, "default", f"p{i}"))["spec"]["nodeName"]
            for i in range(6)
        ]
    finally:
        cluster.close()
    assert placed == ["pinnace-node-1"] * 4 + ["pinnace-node-2"] * 2


DEPLOYMENTS = catalog.kind("apps", "deployments")


def test_the_policy_sees_its_workloads_forecast(policies: Any) -> None:
    """A Deployment's pods use 300m each: once the scheduler has sampled them, a new pod of
    the Deployment comes to the policy with a forecast of 300m (and memory of what they use)."""
    config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- plugins:\n    score:\n      enabled: [{name: PolicyScore}]\n"
        "  pluginConfig:\n  - name: PolicyScore\n    args: {policy: 'toy_policies:record'}\n"
    )
    options = ClusterOptions(nodes=node_configs(2), seed=3, scheduler_config=parse(config))
    cluster = SimulatedCluster(options)
    template = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"sim.pinnace.dev/cpu": "300m", "sim.pinnace.dev/memory": "100Mi"},
        },
        "spec": {
            "containers": [{"name": "a", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]
        },
    }
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    try:
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment))
        cluster.wait(120)
        ((first, _),) = policies.seen  # the first pod: no history yet
        assert np.isnan(first[2:4]).all()
        patch = {"spec": {"replicas": 2}}
        cluster.run(cluster.client.patch(DEPLOYMENTS, "default", "web", patch))
        cluster.wait(10)
    finally:
        cluster.close()
    features, _ = policies.seen[-1]
    assert features[2:4].tolist() == pytest.approx([300, 100 * 2**20])


def test_explain_says_a_failing_policy_fails_the_cycle(policies: Any) -> None:
    profiles = build_profiles(parse(config("{policy: 'toy_policies:broken'}")), print)
    loop = VirtualEventLoop()
    try:
        core = Scheduler(profiles, Clock(loop))
        for name in ("a", "b"):
            core.add_node(node(name, "4", "8Gi"))
        explanation = explain(core, pod("p", "1").pod)
    finally:
        loop.close()
    assert explanation.selected is None and explanation.best == []
    assert explanation.message == (
        'running Score plugins: plugin "PolicyPick" failed with: running policy '
        '"toy_policies:broken": RuntimeError: the model is not trained'
    )
