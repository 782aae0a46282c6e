"""The resource model as users import it: `from pinnace import ...`."""

import pytest

import pinnace
from pinnace import Quantity, node_allocatable, oom_score_adj, pod_limits, pod_requests, qos_class

GUARANTEED = {
    "spec": {
        "containers": [
            {"name": "db", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
        ]
    }
}


def test_everything_promised_is_exported() -> None:
    assert set(pinnace.__all__) >= {
        "Quantity",
        "pod_requests",
        "pod_limits",
        "qos_class",
        "oom_score_adj",
        "node_allocatable",
    }


def test_invalid_quantity_is_a_value_error_quoting_the_value() -> None:
    for bad in ["1.5.5", "1Gib", "", " 1", "1 Gi", "--1", "1e"]:
        with pytest.raises(ValueError, match=f'"{bad}"'):
            Quantity(bad)


def test_quantity_arithmetic_is_exact_and_canonical() -> None:
    assert str(Quantity("100m") + Quantity("200m")) == "300m"
    assert str(Quantity("1Gi") - Quantity("512Mi")) == "512Mi"
    assert Quantity("1Gi") > Quantity("1G")


def test_limits_only_pod_is_guaranteed_with_requests_from_limits() -> None:
    assert qos_class(GUARANTEED) == "Guaranteed"
    assert pod_requests(GUARANTEED) == pod_limits(GUARANTEED) == {
        "cpu": Quantity("1"),
        "memory": Quantity("1Gi"),
    }
    assert oom_score_adj(GUARANTEED, "db", memory_capacity=8 * 2**30) == -997


def test_allocatable_without_reservations_subtracts_only_the_eviction_threshold() -> None:
    alloc = node_allocatable({"memory": "8Gi"}, eviction_hard={"memory.available": "100Mi"})
    assert alloc == {"memory": Quantity("8092Mi")}
