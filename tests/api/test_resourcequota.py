"""ResourceQuota strategy and validation vectors (v1.32)."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.resourcequota import RESOURCE_QUOTA


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def quota(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "q", "namespace": "team", "resourceVersion": "1"}, "spec": spec}


def test_resource_names_a_quota_accepts() -> None:
    hard = {
        "cpu": "4",
        "memory": "8Gi",
        "requests.cpu": "2",
        "limits.memory": "4Gi",
        "pods": "10",
        "count/deployments.apps": "5",
        "requests.nvidia.com/gpu": "2",
        "hugepages-2Mi": "1Gi",
        "requests.hugepages-1Gi": "2Gi",
        "services.loadbalancers": "1",
        "requests.storage": "1Ti",
    }
    assert RESOURCE_QUOTA.validate(quota(hard=hard)) == []


def test_unknown_and_unquotable_names() -> None:
    assert messages(RESOURCE_QUOTA.validate(quota(hard={"foo": "1", "storage": "1Gi"}))) == [
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota',
        'spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota',
    ]


def test_amounts_are_non_negative_and_counts_whole() -> None:
    assert messages(RESOURCE_QUOTA.validate(quota(hard={"cpu": "-1", "pods": "1500m"}))) == [
        'spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        "spec.hard[pods]: Invalid value: 1500m: must be an integer",
    ]


def test_scopes() -> None:
    ok = quota(hard={"pods": "5", "cpu": "2"}, scopes=["NotTerminating", "NotBestEffort"])
    assert RESOURCE_QUOTA.validate(ok) == []
    assert messages(RESOURCE_QUOTA.validate(quota(hard={"cpu": "1"}, scopes=["BestEffort"]))) == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: unsupported scope '
        "applied to resource"
    ]
    conflicting = quota(hard={"pods": "1"}, scopes=["Terminating", "NotTerminating", "Often"])
    assert messages(RESOURCE_QUOTA.validate(conflicting)) == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"Terminating", "NotTerminating", '
        '"Often"}: unsupported scope',
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"Terminating", "NotTerminating", '
        '"Often"}: conflicting scopes',
    ]


def test_scope_selector() -> None:
    selector = {
        "matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
        ]
    }
    assert RESOURCE_QUOTA.validate(quota(hard={"pods": "1"}, scopeSelector=selector)) == []
    bad = {
        "matchExpressions": [
            {"scopeName": "BestEffort", "operator": "In"},
            {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]},
        ]
    }
    path = "spec.scopeSelector.matchExpressions"
    assert messages(RESOURCE_QUOTA.validate(quota(scopeSelector=bad))) == [
        f"{path}.operator: Invalid value: \"In\": must be 'Exist' when scope is any of "
        "ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
        "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
        "ResourceQuotaScopeCrossNamespacePodAffinity",
        f"{path}.values: Required value: must be at least one value when `operator` is 'In' or "
        "'NotIn' for scope selector",
        f'{path}.values: Invalid value: []string{{"x"}}: must be no value when `operator` is '
        "'Exist' or 'DoesNotExist' for scope selector",
    ]


def test_create_clears_status_and_update_keeps_it() -> None:
    obj = quota(hard={"pods": "1"})
    obj["status"] = {"used": {"pods": "9"}}
    RESOURCE_QUOTA.prepare_for_create(obj)
    assert obj["status"] == {}  # ResourceQuotaStatus{}, which Go writes as {}
    old = quota(hard={"pods": "1"}, scopes=["NotBestEffort"])
    old["status"] = {"hard": {"pods": "1"}, "used": {"pods": "0"}}
    new = quota(hard={"pods": "2"}, scopes=["BestEffort"])
    RESOURCE_QUOTA.prepare_for_update(new, old)
    assert new["status"] == old["status"]
    assert messages(RESOURCE_QUOTA.validate_update(new, old)) == [
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort"}: field is immutable'
    ]


def test_status_update_keeps_spec_and_checks_usage() -> None:
    old = quota(hard={"pods": "1"})
    new = quota(hard={"pods": "100"})
    new["status"] = {"hard": {"pods": "1"}, "used": {"pods": "-1"}}
    RESOURCE_QUOTA.prepare_for_status_update(new, old)
    assert new["spec"] == old["spec"]
    assert messages(RESOURCE_QUOTA.validate_status_update(new, old)) == [
        'status.used[pods]: Invalid value: "-1": must be greater than or equal to 0'
    ]
