"""Lease (coordination.k8s.io/v1) strategy and validation vectors (v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.coordination.lease import LEASE


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def lease(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "node-1", "namespace": "kube-node-lease", "resourceVersion": "1"},
        "spec": spec,
    }


def test_a_node_lease() -> None:
    obj = lease(
        holderIdentity="node-1", leaseDurationSeconds=40, renewTime="2024-01-01T00:00:00.000000Z"
    )
    assert LEASE.validate(obj) == []


def test_durations_and_transitions() -> None:
    assert messages(LEASE.validate(lease(leaseDurationSeconds=0, leaseTransitions=-1))) == [
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_strategy_fields_are_dropped_while_the_feature_is_off() -> None:
    obj = lease(strategy="OldestEmulationVersion", preferredHolder="a", holderIdentity="a")
    LEASE.prepare_for_create(obj)
    assert obj["spec"] == {"holderIdentity": "a"}
    old = lease(holderIdentity="a")
    new = lease(holderIdentity="a", strategy="OldestEmulationVersion")
    LEASE.prepare_for_update(new, old)
    assert new["spec"] == {"holderIdentity": "a"}


def test_strategy_validation() -> None:
    assert messages(LEASE.validate(lease(strategy="Newest", preferredHolder="x"))) == [
        'spec.strategy.strategy: Unsupported value: "Newest": supported values: '
        '"OldestEmulationVersion"'
    ]
    assert messages(LEASE.validate(lease(preferredHolder="x"))) == [
        "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
    ]


def test_update_keeps_identity() -> None:
    old = lease(holderIdentity="a")
    new = lease(holderIdentity="b")
    new["metadata"] = dict(old["metadata"], name="node-2")
    assert messages(LEASE.validate_update(new, old)) == [
        'metadata.name: Invalid value: "node-2": field is immutable'
    ]
