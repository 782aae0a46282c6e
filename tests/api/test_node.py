"""Node: defaulting, strategy and validation vectors (v1.32 wording and paths)."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.node import NODE


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def node(**parts: Any) -> dict[str, Any]:
    return {"metadata": {"name": "node-1"}, **parts}


def test_allocatable_defaults_to_capacity() -> None:
    n = node(status={"capacity": {"cpu": "4", "memory": "8Gi"}})
    NODE.default(n)
    assert n["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    kept = node(status={"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}})
    NODE.default(kept)
    assert kept["status"]["allocatable"] == {"cpu": "3"}


def test_pod_cidr_and_pod_cidrs_agree() -> None:
    n = node(spec={"podCIDR": "10.0.0.0/24"})
    NODE.default(n)
    assert n["spec"] == {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"]}
    n = node(spec={"podCIDRs": ["10.0.0.0/24", "fd00::/64"]})
    NODE.default(n)
    assert n["spec"]["podCIDR"] == "10.0.0.0/24"
    assert NODE.validate(n) == []


def test_taints_are_reported_under_metadata() -> None:
    n = node(
        spec={
            "taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
                {"key": "dedicated", "effect": "NoExecute"},
                {"key": "x", "value": "-bad", "effect": "Sometimes"},
                {"key": "y"},
            ]
        }
    )
    errs = messages(NODE.validate(n))
    assert errs[0] == (
        'metadata.taints[1]: Duplicate value: core.Taint{Key:"dedicated", Value:"other", '
        'Effect:"NoSchedule", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and '
        "effect pair"
    )
    assert errs[1].startswith('metadata.taints[3].value: Invalid value: "-bad": a valid label')
    assert errs[2:] == [
        'metadata.taints[3].effect: Unsupported value: "Sometimes": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        "metadata.taints[4].effect: Required value",
    ]


def test_capacity_is_non_negative_and_extended_resources_whole() -> None:
    n = node(
        status={
            "capacity": {"cpu": "-1", "example.com/gpu": "500m"},
            "allocatable": {"example.com/gpu": "1"},
        }
    )
    assert messages(NODE.validate(n)) == [
        'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0',
        "status.capacity.example.com/gpu: Invalid value: 500m: must be an integer",
    ]


def test_pod_cidrs() -> None:
    assert messages(NODE.validate(node(spec={"podCIDRs": ["10.0.0.1"]}))) == [
        'spec.podCIDRs[0]: Invalid value: []string{"10.0.0.1"}: must be valid CIDR'
    ]
    two_v4 = node(spec={"podCIDRs": ["10.0.0.0/24", "10.0.1.0/24"]})
    assert messages(NODE.validate(two_v4)) == [
        'spec.podCIDRs: Invalid value: []string{"10.0.0.0/24", "10.0.1.0/24"}: may specify no '
        "more than one CIDR for each IP family"
    ]


OLD = {
    "metadata": {"name": "node-1", "uid": "u", "resourceVersion": "7"},
    "spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"], "providerID": "sim://1"},
    "status": {"capacity": {"cpu": "4"}},
}


def test_update_keeps_status_and_allows_taints_and_unschedulable() -> None:
    new = {
        "metadata": dict(OLD["metadata"]),
        "spec": dict(
            OLD["spec"], unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}]
        ),
        "status": {},
    }
    NODE.prepare_for_update(new, OLD)
    assert new["status"] == OLD["status"]
    assert NODE.validate_update(new, OLD) == []


def test_update_cannot_change_pod_cidrs_or_provider_id() -> None:
    new = {
        "metadata": dict(OLD["metadata"]),
        "spec": {"podCIDRs": ["10.9.0.0/24"], "providerID": "sim://2", "externalID": "x"},
    }
    assert messages(NODE.validate_update(new, OLD)) == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid',
        'spec.providerID: Forbidden: node updates may not change providerID except from "" to '
        "valid",
        "spec.externalID: Forbidden: may not be updated",
    ]
    fresh = {"metadata": dict(OLD["metadata"]), "spec": {}}
    assigned = {"metadata": dict(OLD["metadata"]), "spec": dict(OLD["spec"])}
    assert NODE.validate_update(assigned, fresh) == []


def test_status_update_keeps_spec_and_rejects_duplicate_addresses() -> None:
    address = {"type": "InternalIP", "address": "10.0.0.5"}
    new = {
        "metadata": dict(OLD["metadata"]),
        "spec": {},
        "status": {"addresses": [address, dict(address)]},
    }
    NODE.prepare_for_status_update(new, OLD)
    assert new["spec"] == OLD["spec"]
    assert messages(NODE.validate_status_update(new, OLD)) == [
        'status.addresses[1]: Duplicate value: core.NodeAddress{Type:"InternalIP", '
        'Address:"10.0.0.5"}'
    ]
