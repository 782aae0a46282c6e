"""NodeResourcesFit and NodeResourcesBalancedAllocation against kube-scheduler v1.32's own test
vectors (pkg/scheduler/framework/plugins/noderesources/*_test.go)."""

from typing import Any

import numpy as np
import pytest

from pinnace.scheduler import CycleState, NodeTable, PodInfo
from pinnace.scheduler.plugins import NodeResourcesBalancedAllocation, NodeResourcesFit


def node(name: str, cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    """st.MakeNode().Capacity(...): allocatable as given, 32 pods."""
    allocatable = {"cpu": cpu, "memory": memory, "pods": "32", **extra}
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod(*requests: dict[str, str], node_name: str = "", name: str = "p") -> PodInfo:
    """st.MakePod().Req(...): one container per requests map."""
    containers = [{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests)]
    return PodInfo.from_pod(
        {"metadata": {"name": name}, "spec": {"nodeName": node_name, "containers": containers}}
    )


def table_with(nodes: list[dict[str, Any]], existing: list[PodInfo] = ()) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    for p in existing:
        table.add_pod(p, p.node_name)
    return table


def scores(plugin: Any, incoming: PodInfo, table: NodeTable) -> list[int]:
    return plugin.score(CycleState(), incoming, table, np.arange(len(table))).tolist()


def filter_reasons(incoming: PodInfo, table: NodeTable) -> list[tuple[str, ...]]:
    fit = NodeResourcesFit()
    state = CycleState()
    assert fit.pre_filter(state, incoming, table).is_success()
    feasible = fit.filter(state, incoming, table, np.ones(len(table), bool))
    reasons = [fit.node_status(state, incoming, table, i).reasons for i in range(len(table))]
    assert [not r for r in reasons] == feasible.tolist()
    return reasons


# least_allocated_test.go
TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "expected"),
    [
        pytest.param(
            pod(*TWO_CONTAINERS),
            [node("node1", "4000", "10000"), node("node2", "6000", "10000")],
            [],
            [37, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            pod(),
            [node("node1", "10000", "20000"), node("node2", "10000", "20000")],
            [
                pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="a"),
                pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="b"),
                pod({"cpu": "3000", "memory": "0"}, node_name="node2", name="c"),
                pod({"cpu": "3000", "memory": "5000"}, node_name="node2", name="d"),
            ],
            [70, 57],
            id="no resources requested, pods scheduled with resources",
        ),
        pytest.param(
            pod(*TWO_CONTAINERS),
            [node("node1", "10000", "20000"), node("node2", "10000", "50000")],
            [
                pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="a"),
                pod({"cpu": "3000", "memory": "5000"}, node_name="node2", name="b"),
            ],
            [57, 60],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            pod({"cpu": "3000", "memory": "0"}),
            [node("node1", "4000", "10000"), node("node2", "4000", "10000")],
            [
                pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="a"),
                pod({"cpu": "3000", "memory": "5000"}, node_name="node2", name="b"),
            ],
            [50, 25],
            id="requested resources exceed node capacity",
        ),
        pytest.param(
            pod(),
            [node("node1", "0", "0"), node("node2", "0", "0")],
            [pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="a")],
            [0, 0],
            id="zero node resources, pods scheduled with resources",
        ),
    ],
)
def test_least_allocated_matches_kube_scheduler(
    incoming: PodInfo, nodes: list[dict[str, Any]], existing: list[PodInfo], expected: list[int]
) -> None:
    assert scores(NodeResourcesFit(), incoming, table_with(nodes, existing)) == expected


def test_least_allocated_weights_resources() -> None:
    # "nothing scheduled, resources requested with different weight on CPU and memory"
    args = {"scoringStrategy": {"resources": [{"name": "memory", "weight": 2}, {"name": "cpu"}]}}
    table = table_with([node("node1", "4000", "10000"), node("node2", "6000", "10000")])
    assert scores(NodeResourcesFit(args), pod(*TWO_CONTAINERS), table) == [41, 50]


def test_least_allocated_counts_an_extended_resource_only_when_the_pod_asks_for_it() -> None:
    # "bypass extended resource if the pod does not request" / "honor extended resource ..."
    resources = [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/foo"}]
    fit = NodeResourcesFit({"scoringStrategy": {"resources": resources}})
    table = table_with(
        [node("node1", "6000", "10000"), node("node2", "6000", "10000", **{"example.com/foo": "4"})]
    )
    assert scores(fit, pod(*TWO_CONTAINERS), table) == [50, 50]
    gpu_pod = pod(TWO_CONTAINERS[0], {**TWO_CONTAINERS[1], "example.com/foo": "2"})
    table = table_with(
        [
            node("node1", "6000", "10000", **{"example.com/foo": "4"}),
            node("node2", "6000", "10000", **{"example.com/foo": "10"}),
        ]
    )
    assert scores(fit, gpu_pod, table) == [50, 60]


def test_most_allocated_caps_requests_at_capacity() -> None:
    # most_allocated_test.go, "resources requested, pods scheduled with resources" and
    # "requested resources at node capacity" (cpu 6000 of 4000 counts as 100)
    most = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}})
    table = table_with(
        [node("node1", "10000", "20000"), node("node2", "10000", "20000")],
        [
            pod({"cpu": "3000", "memory": "0"}, node_name="node1", name="a"),
            pod({"cpu": "3000", "memory": "5000"}, node_name="node2", name="b"),
        ],
    )
    # node1: cpu 6000/10000 = 60, memory 5000/20000 = 25 -> 42; node2: 60, 10000/20000 = 50 -> 55
    assert scores(most, pod(*TWO_CONTAINERS), table) == [42, 55]
    table = table_with([node("node1", "4000", "10000")])
    over = pod({"cpu": "6000", "memory": "5000"})
    assert scores(most, over, table) == [75]  # (100 + 50) / 2


def test_requested_to_capacity_ratio_interpolates_the_shape_and_rounds() -> None:
    # By requested_to_capacity_ratio.go's formula: shape {0: 10, 100: 0} (scores x10), cpu and
    # memory weight 1, the mean rounded half away from zero (math.Round).
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            },
        }
    }
    fit = NodeResourcesFit(args)
    table = table_with([node("node1", "4000", "10000"), node("node2", "6000", "10000")])
    # node1: cpu 3000/4000 -> 75% -> 100 - 75 = 25; memory 50% -> 50; round(75 / 2) = 38
    # node2: cpu 50% -> 50, memory 50% -> 50 -> 50
    assert scores(fit, pod(*TWO_CONTAINERS), table) == [38, 50]


def test_requested_to_capacity_ratio_truncates_a_falling_slope_toward_zero() -> None:
    # BuildBrokenLinearFunction divides with Go's truncation: 100 + (0 - 100) * 33 / 100
    # is 100 - 33 = 67, where floor division would give 66.
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu"}],
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            },
        }
    }
    table = table_with([node("node1", "300", "10000")])
    assert scores(NodeResourcesFit(args), pod({"cpu": "99"}), table) == [67]


# balanced_allocation_test.go
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_ONLY = ({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "expected"),
    [
        pytest.param(
            pod(*CPU_AND_MEMORY),
            [node("node1", "4", "10000"), node("node2", "6", "10000")],
            [],
            [87, 100],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            pod(*CPU_AND_MEMORY),
            [node("node1", "10", "20000"), node("node2", "10", "50000")],
            [
                pod(*CPU_ONLY, node_name="node1", name="a"),
                pod(*CPU_AND_MEMORY, node_name="node2", name="b"),
            ],
            [82, 80],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            pod(*CPU_ONLY),
            [node("node1", "6", "10000"), node("node2", "6", "10000")],
            [
                pod(*CPU_ONLY, node_name="node1", name="a"),
                pod(*CPU_AND_MEMORY, node_name="node2", name="b"),
            ],
            [50, 75],
            id="requested resources at node capacity",
        ),
    ],
)
def test_balanced_allocation_matches_kube_scheduler(
    incoming: PodInfo, nodes: list[dict[str, Any]], existing: list[PodInfo], expected: list[int]
) -> None:
    plugin = NodeResourcesBalancedAllocation()
    assert scores(plugin, incoming, table_with(nodes, existing)) == expected


GPU_RESOURCES = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}


def test_balanced_allocation_uses_the_standard_deviation_of_three_resources() -> None:
    # "include scalar resource on a node for balanced resource allocation"
    gpu = {"nvidia.com/gpu": "8"}
    table = table_with(
        [node("node1", "3500m", "40000", **gpu), node("node2", "3500m", "40000", **gpu)],
        [
            pod(*CPU_AND_MEMORY, node_name="node2", name="a"),
            pod(
                CPU_AND_MEMORY[0],
                {**CPU_AND_MEMORY[1], "nvidia.com/gpu": "3"},
                node_name="node1",
                name="b",
            ),
        ],
    )
    incoming = pod({"memory": "0", "nvidia.com/gpu": "1"})
    assert scores(NodeResourcesBalancedAllocation(GPU_RESOURCES), incoming, table) == [70, 65]


def test_balanced_allocation_skips_a_scalar_resource_the_pod_does_not_request() -> None:
    # "node without the scalar resource should skip the scalar resource"
    with_gpu = node("node1", "3500m", "40000", **{"nvidia.com/gpu": "8"})
    table = table_with([with_gpu, node("node2", "3500m", "40000")])
    plugin = NodeResourcesBalancedAllocation(GPU_RESOURCES)
    assert scores(plugin, pod(*CPU_AND_MEMORY), table) == [63, 63]


def test_scores_follow_binds_row_by_row() -> None:
    """Cached per pod shape: after pods land on a node, its score is recomputed."""
    table = table_with([node("node1", "4", "10000"), node("node2", "6", "10000")])
    incoming = pod(*CPU_AND_MEMORY)
    plugin, fit = NodeResourcesBalancedAllocation(), NodeResourcesFit()
    assert scores(plugin, incoming, table) == [87, 100]
    assert scores(fit, incoming, table) == [37, 50]
    table.add_pod(pod(*CPU_ONLY, node_name="node2", name="a"), "node2")
    assert scores(plugin, incoming, table) == [87, 75]  # node2: cpu 6000/6000, memory 50%
    table.remove_pod("default/a", "node2")
    assert scores(plugin, incoming, table) == [87, 100]


# fit_test.go: Filter
def test_fit_filter_names_every_insufficient_resource_in_kube_schedulers_order() -> None:
    table = table_with(
        [node("node1", "10", "20", **{"example.com/foo": "1"})],
        [pod({"cpu": "8", "memory": "19"}, node_name="node1", name="a")],
    )
    assert filter_reasons(pod({"cpu": "1", "memory": "1"}), table) == [()]
    assert filter_reasons(pod({"cpu": "3", "memory": "2"}), table) == [
        ("Insufficient cpu", "Insufficient memory")
    ]
    assert filter_reasons(pod({"example.com/foo": "2", "cpu": "3"}), table) == [
        ("Insufficient cpu", "Insufficient example.com/foo")
    ]
    assert filter_reasons(pod({"example.com/bar": "1"}), table) == [
        ("Insufficient example.com/bar",)
    ]


def test_fit_filter_counts_pod_overhead() -> None:
    # A RuntimeClass's overhead is part of what the pod asks of a node (PodRequests).
    table = table_with([node("node1", "10", "20")])
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "9"}}}]}
    assert filter_reasons(PodInfo.from_pod({"metadata": {"name": "p"}, "spec": spec}), table) == [
        ()
    ]
    heavy = PodInfo.from_pod(
        {"metadata": {"name": "p"}, "spec": {**spec, "overhead": {"cpu": "2"}}}
    )
    assert filter_reasons(heavy, table) == [("Insufficient cpu",)]


def test_fit_filter_counts_pods_even_for_a_pod_without_requests() -> None:
    table = table_with([{"metadata": {"name": "n"}, "status": {"allocatable": {"pods": "1"}}}])
    assert filter_reasons(pod(), table) == [()]
    table.add_pod(pod(node_name="n", name="a"), "n")
    assert filter_reasons(pod(), table) == [("Too many pods",)]


def test_fit_filter_ignores_configured_extended_resources() -> None:
    fit = NodeResourcesFit({"ignoredResourceGroups": ["example.com"]})
    table = table_with([node("node1", "1", "1")])
    state = CycleState()
    incoming = pod({"example.com/foo": "1"})
    fit.pre_filter(state, incoming, table)
    assert fit.filter(state, incoming, table, np.ones(1, bool)).tolist() == [True]
