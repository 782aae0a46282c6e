"""Node allocatable and eviction thresholds. Vectors from the "Reserve Compute Resources for
System Daemons" docs page, TestNodeAllocatableReservationForScheduling (pkg/kubelet/cm) and
TestParseThresholdConfig (pkg/kubelet/eviction), v1.32."""

import copy
import re
from typing import Any

import pytest

from pinnace.resources.node import (
    DEFAULT_EVICTION_HARD,
    Threshold,
    ThresholdValue,
    node_allocatable,
    parse_eviction_thresholds,
    threshold_quantity,
)
from pinnace.resources.quantity import Quantity

Q = Quantity
GI = 1024**3


def test_docs_example_scenario() -> None:
    allocatable = node_allocatable(
        capacity={"cpu": "16", "memory": "32Gi", "ephemeral-storage": "100Gi"},
        kube_reserved={"cpu": "1", "memory": "2Gi", "ephemeral-storage": "1Gi"},
        system_reserved={"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        eviction_hard={"memory.available": "500Mi", "nodefs.available": "10%"},
    )
    assert allocatable["cpu"] == Q("14.5")
    # The page rounds to "28.5Gi"; exactly it is 32Gi - 2Gi - 1Gi - 500Mi.
    assert str(allocatable["memory"]) == "29196Mi"
    # "88Gi" on the page; the kubelet takes 10% as float32(0.1), which is a hair above 0.1,
    # so 160 bytes more than 10Gi are held back.
    assert allocatable["ephemeral-storage"] == Q(98 * GI - 10737418400)
    assert 98 * GI - 10737418400 == 88 * GI - 160


@pytest.mark.parametrize(
    ("eviction_hard", "reserved_memory"),
    [
        ({}, 150 * 2**20),
        ({"memory.available": "100Mi"}, 250 * 2**20),
        # 5% of 10Gi in float32 arithmetic, as the kubelet's own test expects.
        ({"memory.available": "5%"}, 694157320),
    ],
)
def test_reservation_vectors(eviction_hard: dict[str, str], reserved_memory: int) -> None:
    allocatable = node_allocatable(
        {"cpu": "10", "memory": "10Gi"},
        kube_reserved={"cpu": "100m", "memory": "100Mi"},
        system_reserved={"cpu": "50m", "memory": "50Mi"},
        eviction_hard=eviction_hard,
    )
    assert allocatable == {"cpu": Q("9850m"), "memory": Q(10 * GI - reserved_memory)}


def test_kubelet_defaults_apply_when_eviction_hard_is_not_given() -> None:
    assert dict(DEFAULT_EVICTION_HARD) == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "imagefs.available": "15%",
        "nodefs.inodesFree": "5%",
    }
    allocatable = node_allocatable({"memory": "4Gi", "ephemeral-storage": "10Gi", "pods": "110"})
    assert str(allocatable["memory"]) == "3996Mi"
    assert allocatable["ephemeral-storage"] == Q(10 * GI - 1073741840)  # float32(0.1)
    assert allocatable["pods"] == Q("110")
    # Only memory.available and nodefs.available reserve anything.
    assert node_allocatable({"memory": "4Gi"}, eviction_hard={})["memory"] == Q("4Gi")


def test_hugepages_come_out_of_allocatable_memory() -> None:
    allocatable = node_allocatable(
        {"memory": "8Gi", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi"},
        system_reserved={"memory": "1Gi"},
        eviction_hard={},
    )
    assert allocatable == {
        "memory": Q("4Gi"),
        "hugepages-2Mi": Q("1Gi"),
        "hugepages-1Gi": Q("2Gi"),
    }


def test_allocatable_is_never_negative_and_ignores_unknown_reservations() -> None:
    allocatable = node_allocatable(
        {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "2Gi"},
        kube_reserved={"cpu": "2", "nvidia.com/gpu": "1", "pid": "1000"},
        eviction_hard={},
    )
    assert allocatable == {"cpu": Q(0), "memory": Q(0), "hugepages-2Mi": Q("2Gi")}


def test_inputs_are_not_mutated() -> None:
    capacity = {"cpu": "4", "memory": Q("8Gi"), "hugepages-2Mi": "1Gi"}
    reserved = {"memory": "1Gi"}
    before = (copy.deepcopy(capacity), copy.deepcopy(reserved))
    node_allocatable(capacity, reserved, reserved)
    assert (capacity, reserved) == before


def test_bad_reservations_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"kubeReserved\.memory"):
        node_allocatable({"memory": "1Gi"}, kube_reserved={"memory": "lots"})
    with pytest.raises(ValueError, match="capacity"):
        node_allocatable(["memory"])  # type: ignore[arg-type]


def test_thresholds_as_the_kubelet_parses_them() -> None:
    thresholds = parse_eviction_thresholds(
        hard={"memory.available": "150Mi", "nodefs.available": "10%"},
        soft={"memory.available": "300Mi"},
        soft_grace_periods={"memory.available": "1m30s"},
        minimum_reclaim={"memory.available": "0", "nodefs.available": "500Mi"},
    )
    reclaim_memory = ThresholdValue(quantity=Q("0"))
    assert thresholds == [
        Threshold(
            "memory.available", ThresholdValue(quantity=Q("150Mi")), min_reclaim=reclaim_memory
        ),
        Threshold(
            "nodefs.available",
            ThresholdValue(percentage=0.10000000149011612),  # float32(0.1)
            min_reclaim=ThresholdValue(quantity=Q("500Mi")),
        ),
        Threshold(
            "memory.available",
            ThresholdValue(quantity=Q("300Mi")),
            grace_period=90.0,
            min_reclaim=reclaim_memory,
        ),
    ]
    assert [t.is_hard for t in thresholds] == [True, True, False]
    assert all(t.operator == "LessThan" for t in thresholds)


def test_zero_and_hundred_percent_disable_a_threshold() -> None:
    assert parse_eviction_thresholds(hard={"memory.available": "0%"}) == []
    assert parse_eviction_thresholds(soft={"nodefs.available": "100%"}) == []


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("300ms", 0.3), (".5m", 30.0), ("0", 0.0)],
)
def test_grace_periods_are_go_durations(text: str, seconds: float) -> None:
    (threshold,) = parse_eviction_thresholds(
        soft={"memory.available": "1Gi"}, soft_grace_periods={"memory.available": text}
    )
    assert threshold.grace_period == pytest.approx(seconds)


def test_threshold_quantity() -> None:
    assert threshold_quantity(ThresholdValue(quantity=Q("1Gi")), Q("8Gi")) == Q("1Gi")
    amount = threshold_quantity(ThresholdValue(percentage=0.05000000074505806), Q("10Gi"))
    assert amount == Q(536870920)
    assert amount.format == "BinarySI"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"hard": {"mem.available": "150Mi"}},
            "evictionHard[mem.available]: unsupported eviction signal mem.available",
        ),
        (
            {"hard": {"memory.available": "150Mi", "invalid.foo": "150Mi"}},
            "unsupported eviction signal invalid.foo",
        ),
        (
            {"hard": {"memory.available": "-150Mi"}},
            "eviction threshold memory.available must be positive: -150Mi",
        ),
        (
            {"hard": {"memory.available": "0"}},
            "eviction threshold memory.available must be positive: 0",
        ),
        (
            {"hard": {"memory.available": "-15%"}},
            "eviction percentage threshold memory.available must be >= 0%: -15%",
        ),
        ({"hard": {"nodefs.available": "150%"}}, "must be <= 100%: 150%"),
        (
            {"hard": {"nodefs.available": "ten%"}},
            'strconv.ParseFloat: parsing "ten": invalid syntax',
        ),
        # Go would parse NaN and keep a threshold that can never fire; Pinnace refuses it.
        ({"hard": {"nodefs.available": "nan%"}}, "invalid syntax"),
        (
            {"hard": {"memory.available": "lots"}},
            'evictionHard[memory.available]: invalid quantity "lots"',
        ),
        (
            {"soft": {"memory.available": "-150Mi"}},
            "evictionSoft[memory.available]: eviction threshold",
        ),
        (
            {"soft": {"memory.available": "150Mi"}},
            "grace period must be specified for the soft eviction threshold memory.available",
        ),
        (
            {
                "soft": {"memory.available": "150Mi"},
                "soft_grace_periods": {"memory.available": "-30s"},
            },
            "invalid eviction grace period specified: -30s, must be a positive value",
        ),
        ({"soft_grace_periods": {"memory.available": "30"}}, 'time: missing unit in duration "30"'),
        (
            {"soft_grace_periods": {"memory.available": "30y"}},
            'time: unknown unit "y" in duration "30y"',
        ),
        ({"soft_grace_periods": {"memory.available": "s"}}, 'time: invalid duration "s"'),
        ({"soft_grace_periods": {"bogus": "30s"}}, "unsupported eviction signal bogus"),
        (
            {"minimum_reclaim": {"memory.available": "-300Mi"}},
            "negative eviction minimum reclaim specified for memory.available",
        ),
        (
            {"minimum_reclaim": {"memory.available": "0%"}},
            "eviction percentage minimum reclaim memory.available must be positive: 0%",
        ),
        ({"hard": {"memory.available": 100}}, "must be a string"),
    ],
)
def test_bad_thresholds_are_reported_as_the_kubelet_words_them(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_eviction_thresholds(**kwargs)
