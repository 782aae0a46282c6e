"""A RowCache recomputes a handful of changed rows one at a time in plain Python and many rows
with NumPy: both paths must give the same filter verdicts and scores on any cluster."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pinnace.scheduler import CycleState, NodeTable, PodInfo
from pinnace.scheduler.plugins import NodeResourcesBalancedAllocation, NodeResourcesFit
from pinnace.scheduler.plugins.node_resources_fit import _fits_row

GPU = "nvidia.com/gpu"
amounts = st.integers(min_value=0, max_value=64)
requests = st.fixed_dictionaries(
    {},
    optional={
        "cpu": amounts.map(lambda n: f"{n * 100}m"),
        "memory": amounts.map(lambda n: f"{n}Gi"),
        GPU: st.integers(0, 4).map(str),
    },
)
nodes = st.lists(
    st.fixed_dictionaries(
        {"cpu": st.integers(0, 8).map(str), "memory": st.integers(0, 32).map(lambda n: f"{n}Gi")},
        optional={GPU: st.integers(0, 8).map(str), "pods": st.integers(0, 4).map(str)},
    ),
    min_size=1,
    max_size=6,
)
SHAPE = [
    {"utilization": 0, "score": 0},
    {"utilization": 40, "score": 7},
    {"utilization": 100, "score": 3},
]
RESOURCES = [{"name": "cpu", "weight": 2}, {"name": "memory"}, {"name": GPU, "weight": 3}]
PLUGINS = [
    NodeResourcesFit(),
    NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated", "resources": RESOURCES}}),
    NodeResourcesFit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": RESOURCES,
                "requestedToCapacityRatio": {"shape": SHAPE},
            }
        }
    ),
    NodeResourcesBalancedAllocation(),
    NodeResourcesBalancedAllocation({"resources": RESOURCES}),
]


def pod_info(name: str, req: dict[str, str], node_name: str = "") -> PodInfo:
    spec = {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": req}}]}
    return PodInfo.from_pod({"metadata": {"name": name}, "spec": spec})


@settings(max_examples=150, deadline=None)
@given(nodes, st.lists(st.tuples(st.integers(0, 5), requests), max_size=8), requests)
def test_one_row_at_a_time_matches_all_rows_at_once(allocatable, existing, incoming) -> None:
    table = NodeTable()
    for i, alloc in enumerate(allocatable):
        table.add_node(
            {"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"pods": "110", **alloc}}}
        )
    for j, (where, req) in enumerate(existing):
        name = f"n{where % len(allocatable)}"
        table.add_pod(pod_info(f"e{j}", req, name), name)
    incoming_pod = pod_info("p", incoming)
    every_row = slice(0, len(table))
    for plugin in PLUGINS:
        scores = plugin.row_scores(CycleState(), incoming_pod, table)
        vector = scores.compute(every_row).tolist()
        assert vector == [scores.compute_one(i) for i in range(len(table))]
    fit, state = NodeResourcesFit(), CycleState()
    fit.pre_filter(state, incoming_pod, table)
    feasible = fit.filter(state, incoming_pod, table, np.ones(len(table), bool)).tolist()
    assert feasible == [
        fit.node_status(state, incoming_pod, table, i).is_success() for i in range(len(table))
    ]
    assert feasible == [_fits_row(table, fit.checked(state), i) for i in range(len(table))]
