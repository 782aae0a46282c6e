"""Resource lists: parsing from manifests, elementwise arithmetic and scheduler units."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.resources.lists import (
    ResourceQuantityError,
    add,
    fits,
    insufficient,
    maximum,
    parse_resource_list,
    scheduler_value,
    subtract,
)
from pinnace.resources.quantity import Quantity, QuantityError

Q = Quantity


def test_parse_accepts_what_a_decoded_manifest_holds() -> None:
    parsed = parse_resource_list(
        {"cpu": "500m", "memory": 1024, "nvidia.com/gpu": Q("1"), "ephemeral-storage": " 1Gi "}
    )
    assert parsed == {
        "cpu": Q("500m"),
        "memory": Q("1Ki"),
        "nvidia.com/gpu": Q(1),
        "ephemeral-storage": Q("1Gi"),
    }
    assert str(parsed["memory"]) == "1024"  # an int is DecimalSI
    assert parse_resource_list(None) == {}


def test_parse_reads_yaml_floats_as_their_written_number() -> None:
    # `cpu: 0.5` in YAML decodes to a float; Kubernetes reads the JSON number text "0.5".
    assert parse_resource_list({"cpu": 0.5, "memory": 1e9}) == {"cpu": Q("500m"), "memory": Q("1G")}


def test_parse_names_the_resource_of_a_bad_quantity() -> None:
    with pytest.raises(QuantityError) as info:
        parse_resource_list({"cpu": "1.5.5"}, "spec.containers[0].resources.limits")
    assert isinstance(info.value, ResourceQuantityError)
    assert info.value.value == "1.5.5"
    assert info.value.field == "spec.containers[0].resources.limits.cpu"
    assert str(info.value).startswith(
        'spec.containers[0].resources.limits.cpu: invalid quantity "1.5.5": quantities must match'
    )


@pytest.mark.parametrize(
    "raw",
    [["cpu"], "cpu=1", {"cpu": True}, {"cpu": [1]}, {"cpu": float("nan")}, {1: "1"}],
)
def test_parse_rejects_wrong_shapes_with_value_error(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_resource_list(raw)


def test_elementwise_operations_treat_missing_as_zero() -> None:
    a = {"cpu": Q("1"), "memory": Q("1Gi")}
    b = {"cpu": Q("250m"), "nvidia.com/gpu": Q("2")}
    assert add(a, b) == {"cpu": Q("1250m"), "memory": Q("1Gi"), "nvidia.com/gpu": Q("2")}
    assert subtract(a, b) == {"cpu": Q("750m"), "memory": Q("1Gi"), "nvidia.com/gpu": Q("-2")}
    assert maximum(a, b) == {"cpu": Q("1"), "memory": Q("1Gi"), "nvidia.com/gpu": Q("2")}
    assert a == {"cpu": Q("1"), "memory": Q("1Gi")}  # inputs untouched


def test_sums_keep_the_format_of_the_first_amount() -> None:
    assert str(add({"memory": Q("1Gi")}, {"memory": Q("512Mi")})["memory"]) == "1536Mi"
    assert str(add({"memory": Q("1G")}, {"memory": Q("1Mi")})["memory"]) == "1001048576"


def test_fits_compares_each_request_with_what_is_available() -> None:
    available = {"cpu": Q("2"), "memory": Q("4Gi")}
    assert fits({"cpu": Q("2"), "memory": Q("1Gi")}, available)
    assert insufficient({"cpu": Q("2001m"), "memory": Q("5Gi")}, available) == ["cpu", "memory"]
    # A resource the node lacks has nothing available, but a zero request still fits.
    assert insufficient({"nvidia.com/gpu": Q("1")}, available) == ["nvidia.com/gpu"]
    assert fits({"nvidia.com/gpu": Q("0")}, available)


@pytest.mark.parametrize(
    ("name", "quantity", "value"),
    [
        ("cpu", "100m", 100),
        ("cpu", "1.5", 1500),
        ("cpu", "1u", 1),  # rounded up to a whole millicore
        ("memory", "1Gi", 1073741824),
        ("memory", "1500m", 2),  # whole bytes, rounded up
        ("ephemeral-storage", "1G", 1000000000),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "2", 2),
        ("hugepages-2Mi", "4Mi", 4194304),
    ],
)
def test_scheduler_units(name: str, quantity: str, value: int) -> None:
    assert scheduler_value(name, Q(quantity)) == value


_NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods"])
_LISTS = st.dictionaries(_NAMES, st.integers(-(10**6), 10**6).map(Quantity.from_milli))


@given(_LISTS, _LISTS)
def test_subtract_undoes_add(a: dict[str, Quantity], b: dict[str, Quantity]) -> None:
    restored = subtract(add(a, b), b)
    assert all(restored.get(name, Q(0)) == a.get(name, Q(0)) for name in {*a, *b})


@given(_LISTS, _LISTS)
def test_maximum_is_an_upper_bound_that_fits_both(
    a: dict[str, Quantity], b: dict[str, Quantity]
) -> None:
    top = maximum(a, b)
    assert top == maximum(b, a)
    assert fits(a, top)
    assert fits(b, top)
