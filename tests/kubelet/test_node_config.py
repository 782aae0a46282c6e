"""A node's capacity and allocatable, parsed once for the nodes of one shape."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.kubelet.config import MACHINE_HUGEPAGE_SIZES, NodeConfig
from pinnace.resources.lists import parse_resource_list
from pinnace.resources.node import node_allocatable

SHAPES: list[dict[str, Any]] = [
    {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "eviction_hard": {}},
    {
        "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110", "hugepages-2Mi": "1Gi"},
        "kube_reserved": {"cpu": "500m", "memory": "1Gi"},
        "system_reserved": {"memory": "500Mi"},
        "eviction_hard": {"memory.available": "5%"},
    },
]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_node_of_a_shape_has_its_own_copy_of_what_the_shape_parses_to(
    shape: dict[str, Any],
) -> None:
    machine = {**dict.fromkeys(MACHINE_HUGEPAGE_SIZES, "0"), **shape["capacity"]}
    capacity = parse_resource_list(machine, "capacity")
    allocatable = node_allocatable(
        machine,
        shape.get("kube_reserved"),
        shape.get("system_reserved"),
        shape.get("eviction_hard"),
    )
    first, second = (NodeConfig(f"n{i}", index=i, **shape) for i in (1, 2))
    for node in (first, second, first):
        assert node.capacity_list() == capacity
        assert node.allocatable_list() == allocatable
    mine = first.allocatable_list()
    del mine["cpu"]
    assert second.allocatable_list() == first.allocatable_list() == allocatable


@pytest.mark.parametrize("cpu", ["lots", ["4"]])
def test_a_bad_capacity_is_refused_each_time_it_is_asked_for(cpu: object) -> None:
    node = NodeConfig("n", capacity={"cpu": cpu, "memory": "1Gi"})  # type: ignore[dict-item]
    for _ in range(2):
        with pytest.raises(ValueError, match=r"capacity\.cpu: invalid quantity"):
            node.capacity_list()
        with pytest.raises(ValueError, match=r"capacity\.cpu: invalid quantity"):
            node.allocatable_list()


def test_a_node_s_pod_cidr_is_the_index_th_slash_24_of_the_pod_network() -> None:
    assert NodeConfig("n", index=1).pod_cidr == "10.128.1.0/24"
    assert NodeConfig("n", index=300).pod_cidr == "10.129.44.0/24"
