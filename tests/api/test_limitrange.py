"""LimitRange defaulting and validation vectors (v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.limitrange import LIMIT_RANGE


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def lr(*items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "limits", "namespace": "team"}, "spec": {"limits": list(items)}}


def defaulted(*items: dict[str, Any]) -> list[dict[str, Any]]:
    obj = lr(*items)
    LIMIT_RANGE.default(obj)
    return obj["spec"]["limits"]


def test_container_defaults_come_from_max_then_default_then_min() -> None:
    [item] = defaulted(
        {
            "type": "Container",
            "max": {"cpu": "2", "memory": "1Gi"},
            "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
            "default": {"memory": "512Mi"},
        }
    )
    assert item["default"] == {"memory": "512Mi", "cpu": "2"}
    assert item["defaultRequest"] == {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Gi"}


def test_only_container_items_are_defaulted() -> None:
    [pod, pvc] = defaulted(
        {"type": "Pod", "max": {"cpu": "2"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
    )
    assert "default" not in pod and "defaultRequest" not in pod
    assert "default" not in pvc
    [empty] = defaulted({"type": "Container"})
    assert empty == {"type": "Container"}


def test_a_valid_limit_range() -> None:
    obj = lr(
        {
            "type": "Container",
            "min": {"cpu": "100m"},
            "max": {"cpu": "2"},
            "default": {"cpu": "1"},
            "defaultRequest": {"cpu": "500m"},
            "maxLimitRequestRatio": {"cpu": "4"},
        },
        {"type": "Pod", "max": {"memory": "4Gi"}},
        {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
    )
    assert LIMIT_RANGE.validate(obj) == []


def test_ordering_of_min_default_request_default_max() -> None:
    obj = lr(
        {
            "type": "Container",
            "min": {"cpu": "2"},
            "max": {"cpu": "1"},
            "default": {"cpu": "3"},
            "defaultRequest": {"cpu": "4"},
        }
    )
    assert messages(LIMIT_RANGE.validate(obj)) == [
        "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1",
        "spec.limits[0].defaultRequest[cpu]: Invalid value: 4: default request value 4 is "
        "greater than max value 1",
        "spec.limits[0].defaultRequest[cpu]: Invalid value: 4: default request value 4 is "
        "greater than default limit value 3",
        "spec.limits[0].default[cpu]: Invalid value: 1: default value 3 is greater than max "
        "value 1",
    ]


def test_max_limit_request_ratio() -> None:
    low = lr({"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}})
    assert messages(LIMIT_RANGE.validate(low)) == [
        "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 500m: ratio 500m is less than 1"
    ]
    high = lr(
        {
            "type": "Container",
            "min": {"cpu": "1"},
            "max": {"cpu": "2"},
            "maxLimitRequestRatio": {"cpu": "3"},
        }
    )
    assert messages(LIMIT_RANGE.validate(high)) == [
        "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 3: ratio 3 is greater than "
        "max/min = 2.000000"
    ]


def test_pod_items_take_no_defaults() -> None:
    obj = lr({"type": "Pod", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}})
    assert messages(LIMIT_RANGE.validate(obj)) == [
        "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
        "spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'",
    ]


def test_types_and_resource_names() -> None:
    obj = lr(
        {"type": "Node"},
        {"type": "Container", "max": {"storage": "1Gi"}},
        {"type": "Container"},
        {"type": "PersistentVolumeClaim"},
    )
    assert messages(LIMIT_RANGE.validate(obj)) == [
        'spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully '
        "qualified",
        'spec.limits[1].max[storage]: Invalid value: "storage": must be a standard resource for '
        "containers",
        'spec.limits[2].type: Duplicate value: "Container"',
        "spec.limits[3].limits: Required value: either minimum or maximum storage value is "
        "required, but neither was provided",
    ]


def test_resources_that_cannot_overcommit_need_equal_defaults() -> None:
    obj = lr(
        {
            "type": "Container",
            "default": {"example.com/gpu": "2"},
            "defaultRequest": {"example.com/gpu": "1"},
        }
    )
    assert messages(LIMIT_RANGE.validate(obj)) == [
        "spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: 1: default value 2 must "
        "equal to defaultRequest value 1 in example.com/gpu"
    ]
