"""TargetLoadPacking and LoadVariationRiskBalancing against the vectors of scheduler-plugins'
own tests (pkg/trimaran/targetloadpacking/targetloadpacking_test.go,
pkg/trimaran/loadvariationriskbalancing/{loadvariationriskbalancing,analysis}_test.go) and
vectors worked out from their source, over the node table's usage columns."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from pinnace.scheduler import CycleState, NodeTable, PodInfo
from pinnace.scheduler.config import ConfigError, build_profiles, parse
from pinnace.scheduler.plugins.load_variation_risk_balancing import (
    LoadVariationRiskBalancing,
    risk_score,
)
from pinnace.scheduler.plugins.target_load_packing import TargetLoadPacking
from pinnace.scheduler.plugins.trimaran import go_round

MI = 1024 * 1024
GI = 1024 * MI


def node(name: str, cpu: str = "1000m", memory: str = "1Gi") -> dict[str, Any]:
    """st.MakeNode().Capacity(...): capacity and allocatable as given."""
    resources = {"cpu": cpu, "memory": memory, "pods": "32"}
    return {"metadata": {"name": name}, "status": {"capacity": resources, "allocatable": resources}}


def pod(
    *containers: dict[str, Any], overhead: str = "", name: str = "p", node_name: str = ""
) -> PodInfo:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(containers)]
    }
    if overhead:
        spec["overhead"] = {"cpu": overhead}
    if node_name:
        spec["nodeName"] = node_name
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def guaranteed(cpu: str, memory: str = "") -> dict[str, Any]:
    amounts = {"cpu": cpu, **({"memory": memory} if memory else {})}
    return {"requests": amounts, "limits": amounts}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0


def table_with(
    nodes: list[dict[str, Any]], samples: list[dict[str, tuple[float, float]]], clock: Clock
) -> NodeTable:
    """A table of `nodes` tracking usage, with `samples` taken 30 s apart."""
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    table.track_usage(900, 30, lambda: clock.now)
    for sample in samples:
        table.record_usage(clock.now, sample)
        clock.now += 30
    return table


def scores(plugin: Any, incoming: PodInfo, table: NodeTable) -> list[int]:
    return plugin.score(CycleState(), incoming, table, np.arange(len(table))).tolist()


# --- TargetLoadPacking ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("incoming", "cpu_used", "expected"),
    [
        pytest.param(pod(), 0, 40, id="new node"),
        pytest.param(pod(), 500, 33, id="hot node"),  # 50 % > 40: 40 * 50 / 60
        pytest.param(pod(guaranteed("1000m")), 300, 0, id="excess utilization returns min score"),
    ],
)
def test_target_load_packing_upstream_vectors(
    incoming: PodInfo, cpu_used: float, expected: int
) -> None:
    table = table_with([node("node-1")], [{"node-1": (cpu_used, 0)}], Clock())
    assert scores(TargetLoadPacking(), incoming, table) == [expected]


def test_target_load_packing_a_node_without_metrics_scores_the_minimum() -> None:
    table = table_with([node("node-1"), node("node-2")], [{"node-1": (0, 0)}], Clock())
    assert scores(TargetLoadPacking(), pod(), table) == [40, 0]


def test_target_load_packing_predicts_limits_then_requests_then_the_default() -> None:
    """PredictUtilisation per container: the limit (400m); else the request times the
    multiplier (100m x 1.5); else defaultRequests (1000m); plus the pod's overhead (50m).
    On 4 cores using 1 core: U = (1000 + 400 + 150 + 1000 + 50) / 4000 = 65 %."""
    table = table_with([node("node-1", cpu="4")], [{"node-1": (1000, 0)}], Clock())
    incoming = pod(
        {"requests": {"cpu": "100m"}, "limits": {"cpu": "400m"}},
        {"requests": {"cpu": "100m"}},
        {},
        overhead="50m",
    )
    plugin = TargetLoadPacking()
    assert plugin.predicted_cpu(incoming) == 1600
    assert scores(plugin, incoming, table) == [go_round(np.array(40 * 35 / 60)).item()]  # 23


def test_target_load_packing_arguments_change_the_prediction_and_the_target() -> None:
    """targetUtilization 70, defaultRequestsMultiplier "2": 100m requested counts 200m; on 1
    core using 300m, U = 50 % <= 70: round(30 * 50 / 70 + 70) = 91."""
    table = table_with([node("node-1")], [{"node-1": (300, 0)}], Clock())
    plugin = TargetLoadPacking(
        {"targetUtilization": 70, "defaultRequestsMultiplier": "2", "defaultRequests": {"cpu": "2"}}
    )
    assert scores(plugin, pod({"requests": {"cpu": "100m"}}), table) == [91]
    assert plugin.predicted_cpu(pod({})) == 2000


def test_target_load_packing_counts_pods_placed_since_shortly_before_the_last_sample() -> None:
    """Trimaran's ScheduledPodsCache: a pod bound after the last sample (or within 60 s before
    it) is not in the measured usage; its predicted use is added. Two pods of 500m in a burst:
    the first packs node-1 (25 % -> 37.5 %), the second would take it past the target
    (50 %: 33) so node-2 (12.5 %: 59) wins."""
    clock = Clock()
    table = table_with(
        [node("node-1", cpu="4"), node("node-2", cpu="4")],
        [{"node-1": (1000, 0), "node-2": (0, 0)}],
        clock,
    )
    plugin = TargetLoadPacking()
    first = pod(guaranteed("500m"), name="first")
    assert scores(plugin, first, table) == [96, 59]
    table.add_pod(first, "node-1")
    assert scores(plugin, pod(guaranteed("500m"), name="second"), table) == [33, 59]
    table.remove_pod(first.key, "node-1")  # deleted before its usage was measured
    assert scores(plugin, pod(guaranteed("500m"), name="second"), table) == [96, 59]
    table.add_pod(first, "node-1")
    # Its kubelet's status updates do not make it recent again: Trimaran notes a pod when it
    # is assigned, not when it changes.
    clock.now += 50
    table.replace_pod(dataclasses.replace(first), "node-1")
    # A sample 60 s after the bind has it measured: it is no longer added. The mean of the
    # window is (1000 + 1500) / 2: U = (1250 + 500) / 4000 = 43.75 % -> 40 * 56.25 / 60 = 37.5.
    clock.now += 10
    table.record_usage(clock.now, {"node-1": (1500, 0), "node-2": (0, 0)})
    assert table.recent_placements == {}
    table.replace_pod(dataclasses.replace(first), "node-1")
    assert table.recent_placements == {}
    assert scores(plugin, pod(guaranteed("500m"), name="second"), table) == [38, 59]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"defaultRequestsMultiplier": "1,5"},
            'unable to parse DefaultRequestsMultiplier: strconv.ParseFloat: parsing "1,5": '
            "invalid syntax",
        ),
        (
            {"targetUtilization": "high"},
            "targetUtilization: Invalid value: 'high': json: cannot unmarshal string into Go "
            "struct field TargetLoadPackingArgs.targetUtilization of type int64",
        ),
        ({"metricProvider": {"type": "Graphite"}}, "invalid MetricProvider.Type, got Graphite"),
        (
            {"usageWindow": "10s"},
            'usageWindow: Invalid value: "10s": must be at least the sample interval',
        ),
        (
            {"usageSampleInterval": "soon"},
            'usageSampleInterval: Invalid value: "soon": time: invalid duration "soon"',
        ),
        (
            {"metricProvider": {"type": "Prometheus"}},
            'metricProvider.type: Unsupported value: "Prometheus": supported values: '
            '"KubernetesMetricsServer", "CustomMetrics"',
        ),
        (
            {"metricProvider": {"type": "CustomMetrics", "nodeCapacity": "100"}},
            "metricProvider.metric: Required value: the Pods metric type CustomMetrics reads",
        ),
        (
            {"metricProvider": {"type": "CustomMetrics", "metric": "rps", "nodeCapacity": "x"}},
            "metricProvider.nodeCapacity: Invalid value: 'x': must be a quantity",
        ),
        (
            {"metricProvider": {"type": "CustomMetrics", "metric": "rps"}},
            "metricProvider.nodeCapacity: Invalid value: None: must be a positive quantity, "
            "the metric's load one node can take",
        ),
        (
            {"metricProvider": {"metric": "rps"}},
            "metricProvider.metric: Invalid value: 'rps': only for type \"CustomMetrics\"",
        ),
    ],
)
def test_target_load_packing_bad_arguments(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        TargetLoadPacking(args)
    assert str(raised.value) == message


def test_target_load_packing_defaults_a_target_that_is_not_positive() -> None:
    assert TargetLoadPacking({"targetUtilization": 0}).target_utilization == 40


# --- LoadVariationRiskBalancing ----------------------------------------------------------


def spread(mean: float, std: float) -> list[float]:
    """Two samples whose mean and population standard deviation are `mean` and `std`."""
    return [mean - std, mean + std]


def test_load_variation_risk_balancing_counts_requests_as_trimaran_does() -> None:
    """GetResourceRequested: the containers' sum or any init container's, a sidecar (a
    restartable init container) included, whichever is larger; plus the overhead. 500m of
    a 1000m node idle: mu 0.5, score 75 (kube-scheduler's request, 900m with the sidecar
    added, would give 55)."""
    spec = {
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "400m"}}}
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "400m"}}}],
        "overhead": {"cpu": "100m"},
    }
    incoming = PodInfo.from_pod({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})
    table = table_with([node("node-1")], [{"node-1": (0, 0)}], Clock())
    assert scores(LoadVariationRiskBalancing(), incoming, table) == [75]


@pytest.mark.parametrize(
    ("incoming", "cpu", "memory", "expected"),
    [
        # Upstream measures cpu alone here; memory at 0 (score 100) leaves cpu's score.
        pytest.param(pod(), (500, 0), (0, 0), 75, id="new node"),
        pytest.param(pod(), (1000, 0), (0, 0), 50, id="hot node"),
        pytest.param(
            pod(guaranteed("200m", str(256 * MI))),
            (300, 160),
            (0, 0),
            67,
            id="average and stDev metrics",
        ),
        pytest.param(
            pod(guaranteed("100m", str(512 * MI))),
            (400, 160),
            (0.5 * GI, 0.1 * GI),
            45,
            id="CPU and Memory metrics",
        ),
        pytest.param(
            pod(guaranteed("100m", str(512 * MI))),
            (800, 200),
            (0.25 * GI, 0.15 * GI),
            45,
            id="pick worst case: CPU or Memory",
        ),
    ],
)
def test_load_variation_risk_balancing_upstream_vectors(
    incoming: PodInfo, cpu: tuple[float, float], memory: tuple[float, float], expected: int
) -> None:
    samples = [{"node-1": (c, m)} for c, m in zip(spread(*cpu), spread(*memory), strict=True)]
    table = table_with([node("node-1")], samples, Clock())
    np.testing.assert_allclose(table.usage_mean[0], [cpu[0], memory[0]])
    np.testing.assert_allclose(table.usage_std[0], [cpu[1], memory[1]])
    assert scores(LoadVariationRiskBalancing(), incoming, table) == [expected]


@pytest.mark.parametrize(
    ("margin", "sensitivity", "used_avg", "used_stdev", "capacity", "expected"),
    [
        pytest.param(1, 1, 40, 36, 100, 57, id="valid data"),
        pytest.param(1, 2, 40, 36, 0, 0, id="zero capacity"),
        pytest.param(1, 2, -40, 36, 100, 65, id="negative usedAvg"),
        pytest.param(1, 2, 200, 36, 100, 20, id="large usedAvg"),
        pytest.param(1, 2, 40, -36, 100, 75, id="negative usedStdev"),
        pytest.param(1, 2, 40, 120, 100, 25, id="large usedStdev"),
        pytest.param(-1, 1, 40, 36, 100, 75, id="negative margin"),
        pytest.param(1, -1, 40, 36, 100, 57, id="negative sensitivity"),
        pytest.param(1, 0, 40, 36, 100, 75, id="zero sensitivity"),
    ],
)
def test_compute_score_upstream_vectors(
    margin: float,
    sensitivity: float,
    used_avg: float,
    used_stdev: float,
    capacity: float,
    expected: int,
) -> None:
    """analysis_test.go's TestComputeScore: request 10 of each."""
    raw = risk_score(
        np.array([capacity], float),
        10,
        np.array([used_avg], float),
        np.array([used_stdev], float),
        margin,
        sensitivity,
    )
    assert go_round(raw).tolist() == [expected]


def test_load_variation_risk_balancing_arguments() -> None:
    """A margin of 3 and a sensitivity of 2: risk = (mu + 3 sqrt(sigma)) / 2. cpu: mu 0.3,
    sigma 0.04 -> (0.3 + 0.6) / 2 = 0.45 -> 55; memory idle -> 100."""
    samples = [{"node-1": (c, 0)} for c in spread(300, 40)]
    table = table_with([node("node-1")], samples, Clock())
    plugin = LoadVariationRiskBalancing({"safeVarianceMargin": 3, "safeVarianceSensitivity": 2})
    assert scores(plugin, pod(), table) == [55]
    defaulted = LoadVariationRiskBalancing({"safeVarianceMargin": -2})
    assert (defaulted.margin, defaulted.sensitivity) == (1.0, 1.0)


# --- configuration -----------------------------------------------------------------------


def config(*plugin_config: dict[str, Any]) -> str:
    entries = "".join(
        f"  - name: {entry['name']}\n    args: {entry['args']}\n" for entry in plugin_config
    )
    enabled = "".join(f"      - name: {entry['name']}\n" for entry in plugin_config)
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- plugins:\n"
        "    score:\n"
        "      enabled:\n"
        f"{enabled}"
        "  pluginConfig:\n"
        f"{entries}"
    )


def test_the_plugins_are_enabled_by_a_configuration_with_their_arguments() -> None:
    text = config(
        {"name": "TargetLoadPacking", "args": {"targetUtilization": 60, "usageWindow": "5m"}},
        {"name": "LoadVariationRiskBalancing", "args": {"usageWindow": "5m"}},
    )
    (profile,) = build_profiles(parse(text), lambda binding: None)
    by_name = {p.name: p for p in profile.plugins}
    assert by_name["TargetLoadPacking"].target_utilization == 60
    assert by_name["TargetLoadPacking"].usage_window == 300


def test_a_bad_argument_names_its_field_in_the_configuration() -> None:
    text = config({"name": "TargetLoadPacking", "args": {"defaultRequestsMultiplier": "x"}})
    with pytest.raises(ConfigError) as raised:
        build_profiles(parse(text), lambda binding: None)
    assert str(raised.value) == (
        'profiles[0].pluginConfig[0].args: Invalid value: "TargetLoadPacking": unable to parse '
        'DefaultRequestsMultiplier: strconv.ParseFloat: parsing "x": invalid syntax'
    )


def test_plugins_reading_usage_share_one_window() -> None:
    text = config(
        {"name": "TargetLoadPacking", "args": {"usageWindow": "5m"}},
        {"name": "LoadVariationRiskBalancing", "args": {}},
    )
    with pytest.raises(ConfigError, match="usageWindow"):
        build_profiles(parse(text), lambda binding: None)
