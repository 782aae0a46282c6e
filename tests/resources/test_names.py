"""Resource name classification, checked against pkg/apis/core/v1/helper in Kubernetes v1.32."""

import pytest

from pinnace.resources.names import (
    hugepage_resource_name,
    hugepage_size_from_resource_name,
    is_compressible,
    is_extended_resource_name,
    is_hugepage_resource_name,
    is_integer_resource_name,
    is_native_resource,
    is_overcommit_allowed,
    is_scalar_resource,
    is_standard_container_resource_name,
    is_standard_quota_resource_name,
    is_standard_resource_name,
)
from pinnace.resources.quantity import Quantity, QuantityError


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("nvidia.com/gpu", True),
        ("example.com/dongle", True),
        ("example.com/foo_bar.baz", True),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("kubernetes.io/batch-cpu", False),  # the kubernetes.io domain is native
        ("foo.kubernetes.io/bar", False),  # so is anything containing "kubernetes.io/"
        # Quota's "requests." prefix is not part of an extended resource's own name.
        ("requests.example.com/foo", False),
        ("example.com/", False),
        ("/foo", False),
        ("example.com/a/b", False),
        ("Example.com/foo", False),  # the domain must be a lowercase DNS subdomain
        ("example.com/-foo", False),
        ("example.com/" + "a" * 63, True),
        ("example.com/" + "a" * 64, False),
        # "requests." + name is what is checked, so the domain gets 9 fewer characters.
        ("a" * 244 + "/x", True),
        ("a" * 245 + "/x", False),
    ],
)
def test_extended_resource_names(name: str, extended: bool) -> None:
    assert is_extended_resource_name(name) is extended


@pytest.mark.parametrize(
    ("name", "native"),
    [
        ("cpu", True),
        ("pods", True),
        ("hugepages-1Gi", True),
        ("requests.cpu", True),
        ("kubernetes.io/foo", True),
        ("nvidia.com/gpu", False),
    ],
)
def test_native_resources(name: str, native: bool) -> None:
    assert is_native_resource(name) is native


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("nvidia.com/gpu", True),
        ("hugepages-2Mi", True),
        ("kubernetes.io/batch-cpu", True),
        ("attachable-volumes-aws-ebs", True),
        ("cpu", False),
        ("memory", False),
        ("ephemeral-storage", False),
        ("pods", False),
        ("storage", False),
    ],
)
def test_scalar_resources_as_the_scheduler_keeps_them(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("cpu", True),
        ("memory", True),
        ("ephemeral-storage", True),
        ("hugepages-2Mi", False),
        ("nvidia.com/gpu", False),
    ],
)
def test_overcommit_is_forbidden_for_hugepages_and_extended_resources(
    name: str, allowed: bool
) -> None:
    assert is_overcommit_allowed(name) is allowed


@pytest.mark.parametrize(
    ("name", "compressible"),
    [("cpu", True), ("memory", False), ("ephemeral-storage", False), ("hugepages-2Mi", False)],
)
def test_only_cpu_is_compressible(name: str, compressible: bool) -> None:
    assert is_compressible(name) is compressible


def test_hugepage_names_round_trip_through_page_sizes() -> None:
    assert is_hugepage_resource_name("hugepages-2Mi")
    assert not is_hugepage_resource_name("memory")
    assert hugepage_resource_name(Quantity("2Mi")) == "hugepages-2Mi"
    # The kubelet names pages from a BinarySI byte count, so 1073741824 bytes reads as 1Gi.
    one_gib = Quantity.from_milli(1073741824 * 1000, "BinarySI")
    assert hugepage_resource_name(one_gib) == "hugepages-1Gi"
    assert hugepage_size_from_resource_name("hugepages-1Gi") == Quantity("1Gi")


def test_bad_hugepage_names_are_errors() -> None:
    with pytest.raises(ValueError, match="resource name: memory is an invalid hugepage name"):
        hugepage_size_from_resource_name("memory")
    with pytest.raises(QuantityError):
        hugepage_size_from_resource_name("hugepages-big")


@pytest.mark.parametrize(
    ("name", "standard", "container", "quota", "integer"),
    [
        ("cpu", True, True, True, False),
        ("ephemeral-storage", True, True, True, False),
        ("hugepages-2Mi", True, True, True, False),
        ("requests.hugepages-2Mi", True, False, True, False),
        ("limits.memory", True, False, True, False),
        ("storage", True, False, False, False),
        ("requests.storage", True, False, True, False),
        ("pods", True, False, True, True),
        ("services.nodeports", True, False, True, True),
        ("count/pods", False, False, False, True),  # fully qualified, so counted whole
        ("gpu", False, False, False, False),
        ("example.com/gpu", False, False, False, True),
    ],
)
def test_standard_names_as_the_api_classifies_them(
    name: str, standard: bool, container: bool, quota: bool, integer: bool
) -> None:
    assert is_standard_resource_name(name) is standard
    assert is_standard_container_resource_name(name) is container
    assert is_standard_quota_resource_name(name) is quota
    assert is_integer_resource_name(name) is integer
