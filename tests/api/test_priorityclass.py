"""PriorityClass defaulting and validation vectors (scheduling.k8s.io/v1, v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.scheduling.priorityclass import PRIORITY_CLASS


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def pc(name: str, value: int, **parts: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": name, "resourceVersion": "1"}, "value": value, **parts}
    PRIORITY_CLASS.default(obj)
    return obj


def test_preemption_policy_defaults_to_preempt_lower_priority() -> None:
    assert pc("high", 1000)["preemptionPolicy"] == "PreemptLowerPriority"
    assert pc("high", 1000, preemptionPolicy="Never")["preemptionPolicy"] == "Never"


def test_user_classes_stop_at_one_billion() -> None:
    assert PRIORITY_CLASS.validate(pc("high", 1_000_000_000)) == []
    assert messages(PRIORITY_CLASS.validate(pc("high", 1_000_000_001))) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    ]


def test_system_names_are_reserved() -> None:
    assert PRIORITY_CLASS.validate(pc("system-node-critical", 2_000_001_000)) == []
    assert PRIORITY_CLASS.validate(pc("system-cluster-critical", 2_000_000_000)) == []
    prefix = (
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for "
        "system use only. error: "
    )
    assert messages(PRIORITY_CLASS.validate(pc("system-mine", 5))) == [
        prefix + "system-mine is not a known system priority class"
    ]
    assert messages(PRIORITY_CLASS.validate(pc("system-cluster-critical", 5))) == [
        prefix + "value of system-cluster-critical PriorityClass must be 2000000000"
    ]
    assert messages(
        PRIORITY_CLASS.validate(pc("system-node-critical", 2_000_001_000, globalDefault=True))
    ) == [prefix + "globalDefault of system-node-critical PriorityClass must be false"]


def test_preemption_policy_values() -> None:
    assert messages(PRIORITY_CLASS.validate(pc("a", 1, preemptionPolicy="Sometimes"))) == [
        'preemptionPolicy: Unsupported value: "Sometimes": supported values: '
        '"PreemptLowerPriority", "Never"'
    ]
    assert messages(PRIORITY_CLASS.validate(pc("a", 1, preemptionPolicy=""))) == [
        "preemptionPolicy: Required value"
    ]


def test_value_and_preemption_policy_are_immutable() -> None:
    old = pc("a", 1)
    assert PRIORITY_CLASS.validate_update(pc("a", 1, description="d"), old) == []
    assert messages(PRIORITY_CLASS.validate_update(pc("a", 2, preemptionPolicy="Never"), old)) == [
        "value: Forbidden: may not be changed in an update.",
        'preemptionPolicy: Invalid value: "Never": field is immutable',
    ]


def test_priority_classes_are_cluster_scoped() -> None:
    obj = pc("a", 1)
    obj["metadata"]["namespace"] = "default"
    assert messages(PRIORITY_CLASS.validate(obj)) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]
